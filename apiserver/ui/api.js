// The cluster's API as the page reads it: the token it signed in with,
// requests, and informers that keep a kind's objects current (a list, then
// a watch over a websocket from the list's version, as client-go does).

const tokenKey = 'minik8s.token';

export const session = { token: sessionStorage.getItem(tokenKey) || '' };

export function setToken(token) {
  session.token = token;
  if (token) sessionStorage.setItem(tokenKey, token);
  else sessionStorage.removeItem(tokenKey);
}

export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra) {
  const h = Object.assign({}, extra);
  if (session.token) h.Authorization = 'Bearer ' + session.token;
  return h;
}

// request answers {status, body} (body parsed when it is JSON); an answer
// other than 2xx throws an APIError with the server's message.
export async function request(path, opts = {}) {
  let resp;
  try {
    resp = await fetch(path, { method: opts.method || 'GET', headers: headers(opts.headers), body: opts.body, cache: 'no-store' });
  } catch (e) {
    throw new APIError(0, 'the apiserver cannot be reached');
  }
  const text = await resp.text();
  let body = text;
  try { body = text ? JSON.parse(text) : null; } catch (e) { /* not JSON: keep the text */ }
  if (!resp.ok) {
    const msg = body && typeof body === 'object' ? (body.message || body.error) : body;
    throw new APIError(resp.status, msg || resp.statusText || ('status ' + resp.status));
  }
  return { status: resp.status, body };
}

// whoami asks the dashboard's session endpoint who the page reads as.
export async function whoami() {
  return (await request('session')).body;
}

// The token rides in a subprotocol, as Kubernetes reads it: a browser
// cannot set headers on a websocket.
const bearerProtocol = 'base64url.bearer.authorization.k8s.io.';
const watchProtocol = 'watch.minik8s.io';

function base64url(s) {
  let bin = '';
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// healthyWatch: a watch that lasted this long resets the back-off.
const healthyWatch = 5000;

function objectKey(o) {
  const m = o.metadata || {};
  return m.namespace ? m.namespace + '/' + m.name : m.name;
}

// Informer keeps items (key: "namespace/name", or the name) current and
// calls onChange after every change; state is loading, live, retrying or
// forbidden, with error saying why.
export class Informer {
  constructor(kind, path, onChange, onUnauthorized) {
    this.kind = kind;
    this.path = path;
    this.onChange = onChange;
    this.onUnauthorized = onUnauthorized;
    this.items = new Map();
    this.state = 'loading';
    this.error = '';
    this.rv = '';
    this.listed = false;
    this.retries = 0;
    this.socket = null;
    this.timer = 0;
    this.stopped = false;
  }

  start() { this.list(); }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.socket) this.socket.close();
    this.socket = null;
  }

  async list() {
    if (this.stopped) return;
    try {
      const { body } = await request(this.path);
      if (this.stopped) return;
      this.items = new Map((body.items || []).map(o => [objectKey(o), o]));
      this.rv = (body.metadata && body.metadata.resourceVersion) || '';
      this.listed = true;
      this.state = 'live';
      this.error = '';
      this.onChange(this);
      this.watch();
    } catch (e) {
      this.failed(e);
    }
  }

  failed(e) {
    if (this.stopped) return;
    if (e.status === 401) {
      this.onUnauthorized(e);
      return;
    }
    this.state = e.status === 403 ? 'forbidden' : 'retrying';
    this.error = e.message;
    this.onChange(this);
    this.timer = setTimeout(() => this.list(), this.backoff());
  }

  // backoff is the pause before trying again: 0.5 s doubling up to 8 s,
  // until a watch has lasted (healthyWatch).
  backoff() {
    this.retries = Math.min(this.retries + 1, 5);
    return 250 * 2 ** this.retries;
  }

  watch() {
    if (this.stopped) return;
    const url = new URL(this.path, location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    url.searchParams.set('watch', 'true');
    url.searchParams.set('allowWatchBookmarks', 'true');
    if (this.rv) url.searchParams.set('resourceVersion', this.rv);
    const protocols = [watchProtocol];
    if (session.token) protocols.unshift(bearerProtocol + base64url(session.token));
    const ws = new WebSocket(url, protocols);
    this.socket = ws;
    let opened = 0;
    let gone = false;
    ws.onopen = () => { opened = Date.now(); };
    ws.onmessage = (m) => {
      const ev = JSON.parse(m.data);
      if (ev.type === 'ERROR') {
        // 410 Gone: the version is compacted away; list again.
        gone = true;
        ws.close();
        return;
      }
      this.apply(ev);
    };
    ws.onclose = () => {
      if (this.socket !== ws || this.stopped) return;
      this.socket = null;
      if (gone || !opened) {
        // A refused watch (its version too old, or the server away):
        // start over from a list, after a pause.
        this.state = 'retrying';
        this.error = 'the watch ended; listing again';
        this.onChange(this);
        this.timer = setTimeout(() => this.list(), this.backoff());
        return;
      }
      // A watch the server ended resumes where it was: at once after a
      // long one, after a growing pause when they keep ending early.
      if (Date.now() - opened >= healthyWatch) this.retries = 0;
      this.timer = setTimeout(() => this.watch(), this.retries ? this.backoff() : 100);
      if (!this.retries) this.retries = 1;
    };
  }

  apply(ev) {
    const o = ev.object;
    if (o && o.metadata && o.metadata.resourceVersion) this.rv = o.metadata.resourceVersion;
    switch (ev.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.items.set(objectKey(o), o);
        break;
      case 'DELETED':
        this.items.delete(objectKey(o));
        break;
      default:
        return; // BOOKMARK: only the version moves
    }
    this.onChange(this);
  }
}
