// patch brings an element's content to the given HTML by changing only
// what differs: elements that stay keep their identity, so a click, a
// hover, a text selection or a focused control survives the redraws that
// every watch event brings.

export function patch(el, html) {
  if (el.dataset.html === html) return; // nothing changed since last time
  el.dataset.html = html;
  const next = document.createElement('template');
  next.innerHTML = html;
  patchChildren(el, next.content);
}

function patchChildren(cur, next) {
  const want = [...next.childNodes];
  let have = cur.firstChild;
  for (const w of want) {
    if (!have) {
      cur.appendChild(w);
      continue;
    }
    if (same(have, w)) {
      patchNode(have, w);
      have = have.nextSibling;
    } else {
      const replaced = have;
      have = have.nextSibling;
      cur.replaceChild(w, replaced);
    }
  }
  while (have) {
    const gone = have;
    have = have.nextSibling;
    cur.removeChild(gone);
  }
}

// same: the node can become the other by changing attributes and content.
function same(a, b) {
  if (a.nodeType !== b.nodeType || a.nodeName !== b.nodeName) return false;
  // Keyed elements (data-pod, data-func…) stay only for the same key.
  return a.nodeType !== Node.ELEMENT_NODE || keyOf(a) === keyOf(b);
}

function keyOf(el) {
  for (const attr of ['data-pod', 'data-node', 'data-func', 'data-deploy', 'data-rs', 'data-hpa', 'data-instance', 'data-instance-view']) {
    if (el.hasAttribute(attr)) return attr + '=' + el.getAttribute(attr);
  }
  return '';
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
  if ('value' in next && cur.value !== next.value && cur.tagName === 'METER') cur.value = next.value;
  patchChildren(cur, next);
}
