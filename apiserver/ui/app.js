// The dashboard: signs in (on the secure port), keeps an informer per kind,
// polls the metrics API, and redraws the sections when anything changes.

import { setToken, whoami, request, Informer } from './api.js';
import { quantity, shown } from './format.js';
import * as draw from './render.js';
import { patch, clear } from './patch.js';

const kinds = {
  nodes: '/api/v1/nodes',
  pods: '/api/v1/pods',
  deployments: '/apis/apps/v1/deployments',
  replicasets: '/apis/apps/v1/replicasets',
  hpas: '/apis/autoscaling/v2/horizontalpodautoscalers',
  funcs: '/apis/minik8s.io/v1/funcs',
  instances: '/apis/minik8s.io/v1/funcinstances',
};

const metricsPeriod = 5000;

const $ = id => document.getElementById(id);

const st = { inf: {}, metrics: { nodes: new Map(), pods: new Map() }, selected: '', now: Date.now() };
let answer = null; // the last invoke's answer, until the watch brings its instance
let metricsTimer = 0;
let drawTimer = 0;
let ready = false;
// generation counts sign-ins: what a request of an earlier one brings back
// is dropped.
let generation = 0;

// changed draws once for a burst of changes.
function changed() {
  if (!drawTimer) drawTimer = setTimeout(redraw, 16);
}

function redraw() {
  drawTimer = 0;
  st.now = Date.now();
  const inf = st.inf;
  if (!inf.nodes) return;
  patch($('nodes'), draw.nodes(st));
  $('nodes-count').textContent = `(${draw.plural(inf.nodes.items.size, 'node')}, ${draw.plural(inf.pods.items.size, 'pod')})`;
  patch($('workloads'), draw.workloads(st));
  patch($('functions'), draw.functions(st));
  $('funcs-count').textContent = `(${inf.funcs.items.size})`;
  patch($('instance'), draw.instance(st, answer));
  updateInvokeChoices();
  const states = Object.values(inf);
  const down = states.filter(i => i.state !== 'live' && i.state !== 'forbidden');
  $('live').textContent = down.length ? `reconnecting: ${down.map(i => i.kind).join(', ')}` : 'live';
  $('live').className = down.length ? 'status bad' : 'status ok';
  if (!ready && states.every(i => i.listed || i.state === 'forbidden')) {
    // Everything listed is on screen: the first full paint.
    ready = true;
    performance.mark('minik8s-ready');
    document.body.dataset.ready = 'true';
  }
}

function updateInvokeChoices() {
  const sel = $('invoke-func');
  const want = [...st.inf.funcs.items.keys()].sort();
  const have = [...sel.options].map(o => o.value);
  if (want.join('\n') === have.join('\n')) return;
  const keep = sel.value;
  sel.replaceChildren(...want.map(k => new Option(k, k)));
  if (want.includes(keep)) sel.value = keep;
}

async function pollMetrics() {
  clearTimeout(metricsTimer);
  const gen = generation;
  const read = async (path, into) => {
    try {
      const { body } = await request(path);
      if (gen !== generation) return;
      into.clear();
      for (const m of body.items || []) {
        const use = m.usage || (m.containers || []).reduce((sum, c) => {
          sum.cpu += quantity(c.usage.cpu);
          sum.memory += quantity(c.usage.memory);
          return sum;
        }, { cpu: 0, memory: 0 });
        const cpu = typeof use.cpu === 'number' ? use.cpu : quantity(use.cpu);
        const memory = typeof use.memory === 'number' ? use.memory : quantity(use.memory);
        into.set(m.metadata.namespace ? m.metadata.namespace + '/' + m.metadata.name : m.metadata.name, { cpu, memory });
      }
    } catch (e) {
      into.clear(); // no metrics (not allowed, or none yet): the meters say '-'
    }
  };
  await Promise.all([read('/apis/metrics.k8s.io/v1beta1/nodes', st.metrics.nodes), read('/apis/metrics.k8s.io/v1beta1/pods', st.metrics.pods)]);
  if (gen !== generation) return; // signed out meanwhile
  changed();
  metricsTimer = setTimeout(pollMetrics, metricsPeriod);
}

function startInformers() {
  for (const [kind, path] of Object.entries(kinds)) {
    st.inf[kind] = new Informer(kind, path, changed, () => signOut('The token is no longer accepted: sign in again.'));
    st.inf[kind].start();
  }
  pollMetrics();
}

// stopInformers ends the session's reads and forgets all it read: the
// next user of the tab sees none of it.
function stopInformers() {
  generation++;
  for (const i of Object.values(st.inf)) i.stop();
  st.inf = {};
  st.metrics.nodes.clear();
  st.metrics.pods.clear();
  st.selected = '';
  answer = null;
  ready = false;
  clearTimeout(metricsTimer);
  clearTimeout(drawTimer);
  drawTimer = 0;
  delete document.body.dataset.ready;
  for (const id of ['nodes', 'workloads', 'functions', 'instance']) clear($(id));
  for (const id of ['nodes-count', 'funcs-count', 'invoke-state', 'invoke-result']) $(id).textContent = '';
  $('invoke-result').hidden = true;
  $('invoke-func').replaceChildren();
}

function showDashboard(who) {
  $('signin').hidden = true;
  $('dashboard').hidden = false;
  $('who').textContent = who.local ? `local port, as ${who.user}` : `signed in as ${who.user}`;
  $('signout').hidden = who.local;
  startInformers();
}

function signOut(why) {
  stopInformers();
  setToken('');
  $('dashboard').hidden = true;
  $('signout').hidden = true;
  $('who').textContent = '';
  $('live').textContent = '';
  $('signin').hidden = false;
  $('signin-error').textContent = why || '';
  $('token').focus();
}

async function start() {
  let who;
  try {
    who = await whoami();
  } catch (e) {
    // A token kept from before that no longer holds.
    signOut(e.status === 401 ? 'The saved token is not accepted: sign in again.' : `The apiserver cannot be reached: ${e.message}`);
    return;
  }
  if (who.signIn) {
    signOut('');
    return;
  }
  showDashboard(who);
}

async function signIn(ev) {
  ev.preventDefault();
  setToken($('token').value.trim());
  $('token').value = '';
  try {
    const who = await whoami();
    if (who.signIn) throw new Error('no token given');
    showDashboard(who);
  } catch (e) {
    setToken('');
    $('signin-error').textContent = e.status === 401 ? 'That token is not valid.' : e.message;
  }
}

async function invoke(ev) {
  ev.preventDefault();
  const gen = generation;
  const [ns, name] = $('invoke-func').value.split('/');
  if (!name) return;
  const out = $('invoke-result');
  $('invoke-button').disabled = true;
  $('invoke-state').textContent = `calling ${name}…`;
  try {
    const path = `/api/funcs/${encodeURIComponent(name)}?namespace=${encodeURIComponent(ns)}&wait=60s`;
    const { status, body } = await request(path, { method: 'POST', body: $('invoke-arg').value, headers: { 'Content-Type': 'text/plain' } });
    if (gen !== generation) return; // signed out meanwhile
    answer = body;
    st.selected = ns + '/' + body.instanceId;
    out.hidden = false;
    out.className = body.status === 'Failed' ? 'error' : '';
    out.textContent = status === 202 && !body.status
      ? `accepted as ${body.instanceId}: still running, follow it below`
      : `${body.status}: ${body.status === 'Failed' ? body.error : shown(body.result)}`;
    $('invoke-state').textContent = `call ${body.instanceId}`;
  } catch (e) {
    if (gen !== generation) return;
    out.hidden = false;
    out.className = 'error';
    out.textContent = e.message;
    $('invoke-state').textContent = '';
    if (e.status === 401) signOut('The token is no longer accepted: sign in again.');
  } finally {
    $('invoke-button').disabled = false;
    changed();
  }
}

function pick(ev) {
  const b = ev.target.closest('[data-instance]');
  if (!b) return;
  st.selected = b.dataset.instance;
  answer = null;
  changed();
  $('instance-section').scrollIntoView({ block: 'nearest' });
}

document.addEventListener('DOMContentLoaded', () => {
  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', () => signOut('Signed out.'));
  $('invoke-form').addEventListener('submit', invoke);
  $('functions').addEventListener('click', pick);
  // Ages and a running call's bar move on with time.
  setInterval(() => { if (st.inf.nodes) changed(); }, 1000);
  start();
});
