// The dashboard's sections, drawn from the informers' objects as HTML.
// Every value from the cluster goes through esc.

import { esc, shown, quantity, cores, bytes, age, key, byName, num } from './format.js';

// problem says why a kind's objects are missing, or '' when they are live.
function problem(inf) {
  if (inf.state === 'forbidden') return `<p class="error">Not allowed to read ${esc(inf.kind)}: ${esc(inf.error)}</p>`;
  if (!inf.listed && inf.state === 'retrying') return `<p class="error">Cannot read ${esc(inf.kind)}: ${esc(inf.error)}</p>`;
  return '';
}

export function plural(n, what) {
  return `${n} ${what}${n === 1 ? '' : 's'}`;
}

function sorted(inf) {
  return [...inf.items.values()].sort(byName);
}

function condition(o, type) {
  return ((o.status && o.status.conditions) || []).find(c => c.type === type);
}

function usageMeter(label, used, total, fmt) {
  const known = isFinite(used) && isFinite(total) && total > 0;
  const pct = known ? Math.round((100 * used) / total) : null;
  return `<div class="usage"><span class="label">${label}</span>` +
    `<meter min="0" max="${known ? total : 1}" value="${known ? Math.min(used, total) : 0}" low="${known ? total * 0.7 : 0}" high="${known ? total * 0.9 : 1}" optimum="0"></meter>` +
    `<span class="figure">${fmt(used)} / ${fmt(total)}${pct == null ? '' : ` (${pct}%)`}</span></div>`;
}

function podReady(p) {
  const cs = (p.status && p.status.containerStatuses) || [];
  const total = ((p.spec && p.spec.containers) || []).length;
  return `${cs.filter(c => c.ready).length}/${total}`;
}

function restarts(p) {
  return ((p.status && p.status.containerStatuses) || []).reduce((n, c) => n + num(c.restartCount), 0);
}

function podItem(p, usage) {
  const phase = p.metadata.deletionTimestamp ? 'Terminating' : (p.status && p.status.phase) || 'Pending';
  const use = usage ? `${cores(usage.cpu)} ${bytes(usage.memory)}` : '';
  const ip = (p.status && p.status.podIP) || '';
  return `<li class="pod phase-${esc(phase)}" data-pod="${esc(key(p))}" title="${esc(key(p))} ${esc(ip)}">` +
    `<span class="name">${esc(p.metadata.name)}</span>` +
    `<span class="phase">${esc(phase)}${restarts(p) ? ` <span class="restarts" title="restarts">↻${restarts(p)}</span>` : ''}</span>` +
    `<span class="ready">${podReady(p)}</span>` +
    `<span class="top">${esc(use)}</span></li>`;
}

export function nodes(st) {
  const { nodes: nodeInf, pods: podInf } = st.inf;
  const byNode = new Map();
  for (const p of sorted(podInf)) {
    const n = (p.spec && p.spec.nodeName) || '';
    if (!byNode.has(n)) byNode.set(n, []);
    byNode.get(n).push(p);
  }
  let html = problem(nodeInf) + problem(podInf);
  const cards = sorted(nodeInf).map(n => {
    const name = n.metadata.name;
    const ready = condition(n, 'Ready');
    const ok = ready && ready.status === 'True';
    const alloc = (n.status && (n.status.allocatable || n.status.capacity)) || {};
    const use = st.metrics.nodes.get(name);
    const addr = ((n.status && n.status.addresses) || []).find(a => a.type === 'InternalIP');
    const pods = byNode.get(name) || [];
    byNode.delete(name);
    return `<article class="node" data-node="${esc(name)}">` +
      `<h3>${esc(name)} <span class="badge ${ok ? 'ok' : 'bad'}">${ok ? 'Ready' : 'NotReady'}</span>` +
      `<span class="muted">${esc(addr ? addr.address : '')}</span></h3>` +
      usageMeter('CPU', use ? use.cpu : NaN, quantity(alloc.cpu), cores) +
      usageMeter('Memory', use ? use.memory : NaN, quantity(alloc.memory), bytes) +
      `<p class="muted">${plural(pods.length, 'pod')}</p>` +
      `<ul class="pods">${pods.map(p => podItem(p, st.metrics.pods.get(key(p)))).join('')}</ul></article>`;
  });
  // Pods no node runs yet (or whose node is gone).
  for (const [name, pods] of byNode) {
    cards.push(`<article class="node unscheduled" data-node="${esc(name)}">` +
      `<h3>${name ? esc(name) + ' <span class="badge bad">not registered</span>' : 'Not scheduled'}</h3>` +
      `<ul class="pods">${pods.map(p => podItem(p, st.metrics.pods.get(key(p)))).join('')}</ul></article>`);
  }
  if (!cards.length && nodeInf.listed) cards.push('<p class="muted">No nodes have registered.</p>');
  return html + `<div class="nodes">${cards.join('')}</div>`;
}

function table(cls, head, rows, empty) {
  if (!rows.length) return `<p class="muted">${empty}</p>`;
  return `<table class="${cls}"><thead><tr>${head.map(h => `<th>${h}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function ratio(current, desired) {
  return `<meter min="0" max="${Math.max(desired, 1)}" value="${Math.min(current, Math.max(desired, 1))}"></meter>`;
}

function owner(o) {
  const ref = ((o.metadata && o.metadata.ownerReferences) || []).find(r => r.controller) || (o.metadata.ownerReferences || [])[0];
  return ref ? `${ref.kind}/${ref.name}` : '-';
}

function hpaTargets(h) {
  const current = (h.status && h.status.currentMetrics) || [];
  return ((h.spec && h.spec.metrics) || []).map((m, i) => {
    if (m.type !== 'Resource' || !m.resource) return esc(m.type);
    const t = m.resource.target || {};
    const c = (current[i] && current[i].resource && current[i].resource.current) || {};
    if (t.type === 'Utilization') {
      return `${esc(m.resource.name)}: ${c.averageUtilization == null ? '&lt;unknown&gt;' : esc(c.averageUtilization) + '%'}/${esc(t.averageUtilization)}%`;
    }
    return `${esc(m.resource.name)}: ${esc(c.averageValue || '<unknown>')}/${esc(t.averageValue || t.value)}`;
  }).join(', ');
}

export function workloads(st) {
  const { deployments, replicasets, hpas } = st.inf;
  const deps = sorted(deployments).map(d => {
    const s = d.status || {};
    const want = num(d.spec.replicas);
    return `<tr data-deploy="${esc(key(d))}"><td>${esc(key(d))}</td><td class="desired">${want}</td><td class="current">${num(s.replicas)}</td>` +
      `<td>${num(s.updatedReplicas)}</td><td>${num(s.readyReplicas)}</td><td>${num(s.availableReplicas)}</td><td>${ratio(num(s.availableReplicas), want)}</td></tr>`;
  });
  const rss = sorted(replicasets).map(r => {
    const s = r.status || {};
    const want = num(r.spec.replicas);
    return `<tr data-rs="${esc(key(r))}"><td>${esc(key(r))}</td><td>${esc(owner(r))}</td><td class="desired">${want}</td><td class="current">${num(s.replicas)}</td>` +
      `<td>${num(s.readyReplicas)}</td><td>${ratio(num(s.readyReplicas), want)}</td></tr>`;
  });
  const hs = sorted(hpas).map(h => {
    const s = h.status || {};
    const ref = h.spec.scaleTargetRef || {};
    return `<tr data-hpa="${esc(key(h))}"><td>${esc(key(h))}</td><td>${esc(ref.kind)}/${esc(ref.name)}</td><td>${hpaTargets(h)}</td>` +
      `<td>${num(h.spec.minReplicas || 1)}</td><td>${num(h.spec.maxReplicas)}</td><td class="current">${num(s.currentReplicas)}</td><td class="desired">${num(s.desiredReplicas)}</td></tr>`;
  });
  return problem(deployments) + problem(replicasets) + problem(hpas) +
    '<h3>Deployments</h3>' + table('deployments', ['Name', 'Desired', 'Current', 'Up to date', 'Ready', 'Available', ''], deps, 'No Deployments.') +
    '<h3>ReplicaSets</h3>' + table('replicasets', ['Name', 'Owner', 'Desired', 'Current', 'Ready', ''], rss, 'No ReplicaSets.') +
    '<h3>HorizontalPodAutoscalers</h3>' + table('hpas', ['Name', 'Target', 'Metrics (current/target)', 'Min', 'Max', 'Current', 'Desired'], hs, 'No HorizontalPodAutoscalers.');
}

// pools finds each function's ReplicaSet by its controller reference.
function pools(replicasets) {
  const out = new Map();
  for (const r of replicasets.items.values()) {
    const ref = (r.metadata.ownerReferences || []).find(o => o.kind === 'Func');
    if (ref) out.set(r.metadata.namespace + '/' + ref.name, r);
  }
  return out;
}

// recentCalls groups the instances by function, newest first.
export function recentCalls(instances, per) {
  const out = new Map();
  const all = [...instances.items.values()].sort((a, b) =>
    (b.metadata.creationTimestamp || '').localeCompare(a.metadata.creationTimestamp || '') || (b.metadata.resourceVersion - a.metadata.resourceVersion));
  for (const i of all) {
    const k = i.metadata.namespace + '/' + i.spec.function;
    if (!out.has(k)) out.set(k, []);
    const list = out.get(k);
    if (list.length < per) list.push(i);
  }
  return out;
}

function phaseOf(i) {
  return (i.status && i.status.phase) || 'Pending';
}

export function functions(st) {
  const { funcs, replicasets, instances } = st.inf;
  const pool = pools(replicasets);
  const calls = recentCalls(instances, 8);
  const rows = sorted(funcs).map(f => {
    const k = key(f);
    const fresh = f.spec.mode === 'fresh';
    const r = pool.get(k);
    const replicas = fresh || !r ? '-' : `${num(r.spec.replicas)}/${num(r.status && r.status.replicas)}`;
    const ready = fresh || !r ? '-' : num(r.status && r.status.readyReplicas);
    const chips = (calls.get(k) || []).map(i =>
      `<button type="button" class="call phase-${esc(phaseOf(i))}${key(i) === st.selected ? ' selected' : ''}" data-instance="${esc(key(i))}" ` +
      `title="${esc(i.metadata.name)}: ${esc(phaseOf(i))}">${esc(phaseOf(i)[0])}</button>`).join('');
    return `<tr data-func="${esc(k)}"><td class="name">${esc(k)}</td><td>${fresh ? 'fresh' : 'pool'}</td>` +
      `<td class="counter">${num(f.status && f.status.counter)}</td><td class="replicas">${replicas}</td><td class="ready">${ready}</td>` +
      `<td class="calls">${chips}</td></tr>`;
  });
  return problem(funcs) + problem(instances) +
    table('funcs', ['Function', 'Mode', 'Counter', 'Replicas', 'Ready', 'Recent calls'], rows, 'No functions: store one with mkctl func create, or mkctl apply -f yaml/.');
}

function outcome(i) {
  const s = i.status || {};
  if (s.error) return `<span class="error">${esc(s.error)}</span>`;
  if (phaseOf(i) !== 'Succeeded') return '<span class="muted">not ended yet</span>';
  return `<code class="result">${esc(shown(s.result))}</code>`;
}

// instance draws a call's chain of steps on a time line.
export function instance(st, answer) {
  const i = st.inf.instances.items.get(st.selected);
  if (!i) {
    if (answer) return `<p>Call ${esc(answer.instanceId)}: ${esc(answer.status)}</p>`;
    return '<p class="muted">Pick a call above (or invoke a function) to see its chain of steps.</p>';
  }
  const s = i.status || {};
  const steps = s.steps || [];
  const starts = steps.map(x => Date.parse(x.start)).filter(isFinite);
  const t0 = starts.length ? Math.min(...starts) : Date.parse(i.metadata.creationTimestamp);
  const end = s.completionTime ? Date.parse(s.completionTime) : st.now;
  const ends = steps.map(x => Date.parse(x.start) + num(x.durationMs)).filter(isFinite);
  const total = Math.max(1, Math.max(end, ...ends) - t0);
  // Labels on the left, the steps' bars on a shared time axis on the right.
  const width = 1000;
  const labelW = 300;
  const plotW = width - labelW - 10;
  const row = 28;
  const bars = steps.map((x, n) => {
    const start = Date.parse(x.start);
    const dur = num(x.durationMs) || (s.completionTime || !isFinite(start) ? 0 : st.now - start);
    const bx = labelW + (isFinite(start) ? ((start - t0) / total) * plotW : 0);
    const bw = Math.max(3, (dur / total) * plotW);
    const y = 8 + n * row;
    const cls = x.error ? 'step failed' : 'step';
    return `<g class="${cls}" data-step="${n}"><text x="0" y="${y + 15}">${n + 1}. ${esc(x.function)} · ${dur} ms</text>` +
      `<rect x="${bx.toFixed(1)}" y="${y}" width="${bw.toFixed(1)}" height="20" rx="3"></rect>` +
      `<title>${esc(x.function)}(${esc(shown(x.arg))}) = ${esc(x.error || shown(x.result))} on ${esc(x.pod || 'a fresh pod')} ${esc(x.node)}</title></g>`;
  }).join('');
  const h = 16 + steps.length * row + 20;
  const axis = `<line x1="${labelW}" y1="${h - 18}" x2="${width}" y2="${h - 18}" class="axis"></line>` +
    `<text x="${labelW}" y="${h - 3}" class="axis">0 ms</text><text x="${width}" y="${h - 3}" class="axis end">${total} ms</text>`;
  const table = steps.map((x, n) => `<tr><td>${n + 1}</td><td>${esc(x.function)}</td><td>${esc(x.pod)}</td><td>${esc(x.node)}</td>` +
    `<td><code>${esc(shown(x.arg))}</code></td><td><code>${esc(x.error || shown(x.result))}</code></td><td>${num(x.durationMs)} ms</td></tr>`).join('');
  return `<div class="instance" data-instance-view="${esc(st.selected)}"><p><strong>${esc(i.metadata.name)}</strong> · ` +
    `${esc(i.metadata.namespace)}/${esc(i.spec.function)} · <span class="phase phase-${esc(phaseOf(i))}">${esc(phaseOf(i))}</span>` +
    ` · ${plural(steps.length, 'step')} · started ${age(i.metadata.creationTimestamp, st.now)} ago</p>` +
    `<p>Argument <code>${esc(shown(i.spec.arg))}</code> → ${outcome(i)}</p>` +
    (steps.length ? '' : '<p class="muted">No step has ended yet.</p>') +
    (steps.length ? `<svg class="timeline" viewBox="0 0 ${width} ${h}" role="img" aria-label="steps over time">${bars}${axis}</svg>` : '') +
    (table ? `<table class="steps"><thead><tr><th>#</th><th>Function</th><th>Pod</th><th>Node</th><th>Argument</th><th>Result</th><th>Took</th></tr></thead><tbody>${table}</tbody></table>` : '') +
    '</div>';
}
