package daemonset

import (
	"sort"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/podstatus"
	"minik8s/pkg/rollout"
)

// A plan is what one sync does: pods to create (by node) and to delete.
// It is worked out from the set, its nodes and its pods alone, so that
// the rules (Kubernetes' daemon controller's manage and rollingUpdate)
// are tested without a cluster.
type plan struct {
	create []string
	delete []*api.Pod
	// recheck, when not 0, is when a ready pod becomes available.
	recheck time.Duration
}

// view is the set's pods as a sync sees them.
type view struct {
	ds   *api.DaemonSet
	hash string
	now  time.Time
	// alive are the pods on each node neither terminating nor ended,
	// oldest first.
	alive map[string][]*api.Pod
	// nodes by name, and whether each should run a pod and keep one.
	nodes      map[string]*api.Node
	run, stay  map[string]bool
	minReady   time.Duration
	surge      bool
	orphanDels []*api.Pod
}

func newView(ds *api.DaemonSet, hash string, nodes []*api.Node, pods []*api.Pod, now time.Time) *view {
	v := &view{ds: ds, hash: hash, now: now, alive: map[string][]*api.Pod{}, nodes: map[string]*api.Node{},
		run: map[string]bool{}, stay: map[string]bool{}, minReady: time.Duration(ds.Spec.MinReadySeconds) * time.Second}
	for _, n := range nodes {
		v.nodes[n.Name] = n
		v.run[n.Name], v.stay[n.Name] = placement(ds, n)
	}
	sorted := append([]*api.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool { return olderFirst(sorted[i], sorted[j]) })
	for _, p := range sorted {
		if p.DeletionTimestamp != nil {
			continue
		}
		node := targetNode(p)
		// A pod that ended (a template that exits) is deleted and made
		// again; one of a node that is gone goes with its node.
		if p.Status.Phase == api.PodFailed || p.Status.Phase == api.PodSucceeded || v.nodes[node] == nil {
			v.orphanDels = append(v.orphanDels, p)
			continue
		}
		v.alive[node] = append(v.alive[node], p)
	}
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ds.Spec.UpdateStrategy.Type == api.DaemonSetRollingUpdate && ru != nil {
		surge, _ := rollout.Scaled(ru.MaxSurge, "0", 1, true)
		v.surge = surge > 0
	}
	return v
}

func olderFirst(a, b *api.Pod) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if ta != nil && tb != nil && !ta.Equal(*tb) {
		return ta.Before(*tb)
	}
	return a.Name < b.Name
}

func (v *view) updated(p *api.Pod) bool { return p.Labels[api.LabelControllerRevisionHash] == v.hash }

// available says whether p is available now, noting when a ready pod
// will be.
func (v *view) available(p *api.Pod, pl *plan) bool {
	ok, wait := podstatus.Available(p, v.minReady, v.now)
	if wait > 0 && (pl.recheck == 0 || wait < pl.recheck) {
		pl.recheck = wait
	}
	return ok
}

// nodeNames in order, so that a plan does not depend on map order.
func (v *view) nodeNames() []string {
	out := make([]string, 0, len(v.nodes))
	for n := range v.nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// manage makes each node run what it should: a pod where one should run
// and none does, none where none may stay, one where there are more (two
// during a surge: the oldest old pod while it is ready, and the oldest
// new one).
func (v *view) manage() plan {
	pl := plan{delete: append([]*api.Pod(nil), v.orphanDels...)}
	for _, node := range v.nodeNames() {
		pods := v.alive[node]
		switch {
		case !v.stay[node]:
			pl.delete = append(pl.delete, pods...)
		case len(pods) == 0:
			if v.run[node] {
				pl.create = append(pl.create, node)
			}
		case len(pods) > 1 && !v.surge:
			pl.delete = append(pl.delete, pods[1:]...)
		case len(pods) > 1:
			var oldestNew, oldestOld *api.Pod
			for _, p := range pods {
				switch {
				case v.updated(p) && oldestNew == nil:
					oldestNew = p
				case !v.updated(p) && oldestOld == nil:
					oldestOld = p
				default:
					pl.delete = append(pl.delete, p)
				}
			}
			if oldestNew != nil && oldestOld != nil && (!podstatus.IsReady(oldestOld) || v.available(oldestNew, &pl)) {
				pl.delete = append(pl.delete, oldestOld)
			}
		}
	}
	return pl
}

// onNode is a node's new and old pod; ok is false when it has more than
// one of either (manage cleans that up first).
func (v *view) onNode(node string) (newPod, oldPod *api.Pod, ok bool) {
	for _, p := range v.alive[node] {
		if v.updated(p) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = p
		}
	}
	return newPod, oldPod, true
}

// desired counts the nodes that should run a pod.
func (v *view) desired() int {
	n := 0
	for _, run := range v.run {
		if run {
			n++
		}
	}
	return n
}

// rollingUpdate replaces old pods within the strategy's bounds: without
// surge, old pods are deleted while fewer than maxUnavailable nodes lack
// an available pod (an old pod not available goes at once); with surge,
// new pods start beside old ones on up to maxSurge nodes, and an old pod
// goes once its node's new one is available.
func (v *view) rollingUpdate() plan {
	var pl plan
	ru := v.ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil {
		ru = &api.RollingUpdateDaemonSet{}
	}
	desired := v.desired()
	maxSurge, _ := rollout.Scaled(ru.MaxSurge, "0", desired, true)
	maxUnavailable, _ := rollout.Scaled(ru.MaxUnavailable, "1", desired, true)
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	if maxSurge == 0 {
		unavailable := 0
		var replace, candidates []*api.Pod
		for _, node := range v.nodeNames() {
			if len(v.alive[node]) == 0 {
				continue
			}
			newPod, oldPod, ok := v.onNode(node)
			switch {
			case !ok, newPod != nil && oldPod != nil:
				unavailable++
			case newPod != nil:
				if !v.available(newPod, &pl) {
					unavailable++
				}
			case !v.available(oldPod, &pl):
				replace = append(replace, oldPod)
			default:
				candidates = append(candidates, oldPod)
			}
		}
		room := min(max(maxUnavailable-unavailable, 0), len(candidates))
		pl.delete = append(replace, candidates[:room]...)
		return pl
	}
	surged := 0
	var allowed, candidates []string
	for _, node := range v.nodeNames() {
		if len(v.alive[node]) == 0 {
			continue
		}
		newPod, oldPod, ok := v.onNode(node)
		switch {
		case !ok:
			surged++
		case oldPod == nil:
		case newPod == nil:
			switch {
			case !v.run[node]:
				// A node that only keeps its pod gets no new one.
			case !v.available(oldPod, &pl):
				allowed = append(allowed, node)
			default:
				candidates = append(candidates, node)
			}
		case !v.available(newPod, &pl):
			surged++
		default:
			pl.delete = append(pl.delete, oldPod)
		}
	}
	room := min(max(maxSurge-surged, 0), len(candidates))
	pl.create = append(allowed, candidates[:room]...)
	return pl
}

// status is the set's status as its nodes and pods say it.
func (v *view) status(pl *plan) api.DaemonSetStatus {
	st := v.ds.Status
	st.ObservedGeneration = v.ds.Generation
	st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.NumberMisscheduled = 0, 0, 0
	st.NumberReady, st.NumberAvailable, st.UpdatedNumberScheduled = 0, 0, 0
	for _, node := range v.nodeNames() {
		pods := v.alive[node]
		if !v.run[node] {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		p := pods[0]
		if podstatus.IsReady(p) {
			st.NumberReady++
			if v.available(p, pl) {
				st.NumberAvailable++
			}
		}
		if v.updated(p) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = max(st.DesiredNumberScheduled-st.NumberAvailable, 0)
	return st
}
