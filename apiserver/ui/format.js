// Formatting: HTML escaping, Kubernetes quantities, ages.

const escapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

// esc makes any string safe inside HTML text and quoted attributes: names,
// arguments and results are the users'.
export function esc(v) {
  return String(v == null ? '' : v).replace(/[&<>"']/g, c => escapes[c]);
}

// shown is a call's argument or result as text: bytes that are not UTF-8
// come as {base64} (api.Bytes) and are counted, not printed.
export function shown(v) {
  return v && typeof v === 'object' && typeof v.base64 === 'string' ? `<${atob(v.base64).length} bytes, not UTF-8>` : v;
}

const binary = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const decimal = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

// quantity reads a Kubernetes quantity ("250m", "1.5", "64Mi", "2e3") as a
// number; NaN when it is none.
export function quantity(q) {
  if (q == null || q === '') return NaN;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(q).trim());
  if (!m) return NaN;
  const n = parseFloat(m[1]);
  if (m[2] in binary) return n * binary[m[2]];
  if (m[2] in decimal) return n * decimal[m[2]];
  return NaN;
}

// cores prints CPU as kubectl top does: millicores below ten cores.
export function cores(n) {
  if (!isFinite(n)) return '-';
  if (n < 10) return Math.round(n * 1000) + 'm';
  return n.toFixed(1);
}

export function bytes(n) {
  if (!isFinite(n)) return '-';
  if (n >= 2 ** 30) return (n / 2 ** 30).toFixed(1) + 'Gi';
  if (n >= 2 ** 20) return Math.round(n / 2 ** 20) + 'Mi';
  if (n >= 2 ** 10) return Math.round(n / 2 ** 10) + 'Ki';
  return Math.round(n) + 'B';
}

// age prints how long ago t was, as kubectl's AGE column.
export function age(t, now) {
  const ms = now - Date.parse(t);
  if (!isFinite(ms)) return '-';
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return s + 's';
  if (s < 7200) return Math.floor(s / 60) + 'm';
  if (s < 172800) return Math.floor(s / 3600) + 'h';
  return Math.floor(s / 86400) + 'd';
}

export function key(o) {
  const m = o.metadata || {};
  return m.namespace ? m.namespace + '/' + m.name : m.name;
}

// byName sorts objects by namespace, then name.
export function byName(a, b) {
  const ka = key(a);
  const kb = key(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

// num is a count from an object, always a number (0 when absent): safe to
// put into HTML as it is.
export function num(v) {
  const n = Number(v);
  return isFinite(n) ? n : 0;
}
