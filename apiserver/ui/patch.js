// patch brings an element's content to the given HTML by changing only
// what differs: elements keep their identity (keyed ones by their key, as
// a pod or a call moves in its list), so a click, a hover, a text
// selection or a focused control survives the redraws every watch event
// brings.

export function patch(el, html) {
  if (el.dataset.html === html) return; // nothing changed since last time
  el.dataset.html = html;
  const next = document.createElement('template');
  next.innerHTML = html;
  patchChildren(el, next.content);
}

// clear empties an element patch drew.
export function clear(el) {
  delete el.dataset.html;
  el.replaceChildren();
}

const keyAttrs = ['data-pod', 'data-node', 'data-func', 'data-deploy', 'data-rs', 'data-hpa', 'data-instance', 'data-instance-view'];

function keyOf(n) {
  if (n.nodeType !== Node.ELEMENT_NODE) return '';
  for (const attr of keyAttrs) {
    if (n.hasAttribute(attr)) return attr + '=' + n.getAttribute(attr);
  }
  return '';
}

function patchChildren(cur, next) {
  // The keyed children there are now, to be moved where they belong.
  const keyed = new Map();
  for (const c of cur.childNodes) {
    const k = keyOf(c);
    if (k) keyed.set(k, c);
  }
  const want = [...next.childNodes];
  const wanted = new Set(want.map(keyOf).filter(k => k));
  let at = cur.firstChild; // the first child not yet settled
  for (const w of want) {
    // Keyed children that are gone go first, so that the others stay
    // where they are rather than move.
    while (at && keyOf(at) && !wanted.has(keyOf(at))) {
      const gone = at;
      at = at.nextSibling;
      cur.removeChild(gone);
    }
    const k = keyOf(w);
    let match = null;
    if (k) {
      match = keyed.get(k) || null;
      if (match && match.nodeName !== w.nodeName) match = null;
      keyed.delete(k);
    } else if (at && !keyOf(at) && at.nodeType === w.nodeType && at.nodeName === w.nodeName) {
      match = at;
    }
    if (!match) {
      cur.insertBefore(w, at);
      continue;
    }
    if (match !== at) cur.insertBefore(match, at);
    else at = at.nextSibling;
    patchNode(match, w);
  }
  // What is left after the settled children is gone.
  while (at) {
    const gone = at;
    at = at.nextSibling;
    cur.removeChild(gone);
  }
}

function patchNode(cur, next) {
  if (cur.nodeType !== Node.ELEMENT_NODE) {
    if (cur.nodeValue !== next.nodeValue) cur.nodeValue = next.nodeValue;
    return;
  }
  for (const { name } of [...cur.attributes]) {
    if (!next.hasAttribute(name)) cur.removeAttribute(name);
  }
  for (const { name, value } of [...next.attributes]) {
    if (cur.getAttribute(name) !== value) cur.setAttribute(name, value);
  }
  // A meter's value is a property as well as an attribute.
  if (cur.tagName === 'METER' && cur.value !== next.value) cur.value = next.value;
  patchChildren(cur, next);
}
