package statefulset

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/podstatus"
	"minik8s/pkg/rollout"
)

// A plan is what one sync does, worked out from the set and its pods
// alone (Kubernetes' stateful_set_control.go updateStatefulSet), so that
// the ordering rules are tested without a cluster.
type plan struct {
	// create are the ordinals to make, each of the update revision or
	// (below the partition) the current one.
	create []creation
	delete []*api.Pod
	// recheck, when not 0, is when a ready pod becomes available.
	recheck time.Duration
}

type creation struct {
	ordinal int
	update  bool
}

// view is the set's pods as a sync sees them.
type view struct {
	set              *api.StatefulSet
	current, updated string // revision names
	now              time.Time
	start, replicas  int
	// byOrdinal are the pods of ordinals in [start, start+replicas);
	// condemned the others, highest ordinal first.
	byOrdinal map[int]*api.Pod
	condemned []*api.Pod
	all       []*api.Pod
}

// ordinalOf parses NAME-ORDINAL; ok is false for a pod not so named.
func ordinalOf(set string, p *api.Pod) (int, bool) {
	rest, ok := strings.CutPrefix(p.Name, set+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

func newView(set *api.StatefulSet, current, updated string, pods []*api.Pod, now time.Time) *view {
	v := &view{set: set, current: current, updated: updated, now: now, byOrdinal: map[int]*api.Pod{}, replicas: 1}
	if set.Spec.Replicas != nil {
		v.replicas = int(*set.Spec.Replicas)
	}
	if set.Spec.Ordinals != nil {
		v.start = int(set.Spec.Ordinals.Start)
	}
	for _, p := range pods {
		ord, ok := ordinalOf(set.Name, p)
		if !ok {
			continue
		}
		v.all = append(v.all, p)
		if ord >= v.start && ord < v.start+v.replicas {
			v.byOrdinal[ord] = p
		} else {
			v.condemned = append(v.condemned, p)
		}
	}
	sort.Slice(v.condemned, func(i, j int) bool {
		a, _ := ordinalOf(set.Name, v.condemned[i])
		b, _ := ordinalOf(set.Name, v.condemned[j])
		return a > b
	})
	return v
}

func terminating(p *api.Pod) bool { return p.DeletionTimestamp != nil }

func ended(p *api.Pod) bool {
	return p.Status.Phase == api.PodFailed || p.Status.Phase == api.PodSucceeded
}

// healthy is Kubernetes' isHealthy: running, ready and not going.
func healthy(p *api.Pod) bool {
	return p.Status.Phase == api.PodRunning && podstatus.IsReady(p) && !terminating(p)
}

func (v *view) available(p *api.Pod, pl *plan) bool {
	if !healthy(p) {
		return false
	}
	ok, wait := podstatus.Available(p, time.Duration(v.set.Spec.MinReadySeconds)*time.Second, v.now)
	if wait > 0 && (pl.recheck == 0 || wait < pl.recheck) {
		pl.recheck = wait
	}
	return ok
}

func (v *view) revision(p *api.Pod) string { return p.Labels[api.LabelControllerRevisionHash] }

// partition is the lowest ordinal a rolling update replaces.
func (v *view) partition() int {
	if ru := v.set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return v.start + int(*ru.Partition)
	}
	return v.start
}

// manage makes the pods the set's count says, in order: under
// OrderedReady one step at a time, each once the pods before it are
// Running and Ready (scale down from the highest ordinal, each once the
// previous one is gone); under Parallel all at once. Then a rolling
// update replaces pods from the highest ordinal down to the partition,
// within maxUnavailable.
func (v *view) manage() plan {
	var pl plan
	ordered := v.set.Spec.PodManagementPolicy != api.ParallelPodManagement
	for ord := v.start; ord < v.start+v.replicas; ord++ {
		p := v.byOrdinal[ord]
		switch {
		case p == nil:
			pl.create = append(pl.create, creation{ordinal: ord, update: v.createsUpdated(ord)})
		case ended(p) && !terminating(p):
			// A pod that failed is made again under its name (the
			// next sync, once this one is gone).
			pl.delete = append(pl.delete, p)
		case healthy(p):
			continue
		}
		if ordered {
			return pl // one step, or a pod to wait for
		}
	}
	for _, p := range v.condemned {
		if !terminating(p) {
			pl.delete = append(pl.delete, p)
		}
		if ordered {
			return pl
		}
	}
	if len(pl.create) > 0 || len(pl.delete) > 0 || v.set.Spec.UpdateStrategy.Type == api.StatefulSetOnDelete {
		return pl
	}
	return v.rollingUpdate(pl)
}

// createsUpdated says whether a pod made at ord is of the update
// revision: below the partition it keeps the current one.
func (v *view) createsUpdated(ord int) bool {
	if v.set.Spec.UpdateStrategy.Type == api.StatefulSetRollingUpdate {
		return ord >= v.partition()
	}
	return true
}

func (v *view) rollingUpdate(pl plan) plan {
	maxUnavailable := 1
	if ru := v.set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		if n, err := rollout.Scaled(ru.MaxUnavailable, "1", v.replicas, false); err == nil {
			maxUnavailable = max(n, 1)
		}
	}
	unavailable := 0
	for ord := v.start; ord < v.start+v.replicas; ord++ {
		if p := v.byOrdinal[ord]; p == nil || !v.available(p, &pl) {
			unavailable++
		}
	}
	for ord := v.start + v.replicas - 1; ord >= v.partition() && unavailable < maxUnavailable; ord-- {
		p := v.byOrdinal[ord]
		if p != nil && !terminating(p) && v.revision(p) != v.updated {
			pl.delete = append(pl.delete, p)
			unavailable++
		}
	}
	return pl
}

// status is the set's status as its pods say it (Kubernetes'
// computeReplicaStatus and completeRollingUpdate).
func (v *view) status(pl *plan) api.StatefulSetStatus {
	st := v.set.Status
	st.ObservedGeneration = v.set.Generation
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.CurrentReplicas, st.UpdatedReplicas = 0, 0, 0, 0, 0
	st.CurrentRevision, st.UpdateRevision = v.current, v.updated
	for _, p := range v.all {
		st.Replicas++
		if healthy(p) {
			st.ReadyReplicas++
			if v.available(p, pl) {
				st.AvailableReplicas++
			}
		}
		if terminating(p) {
			continue
		}
		if v.revision(p) == v.current {
			st.CurrentReplicas++
		}
		if v.revision(p) == v.updated {
			st.UpdatedReplicas++
		}
	}
	if v.set.Spec.UpdateStrategy.Type == api.StatefulSetRollingUpdate && st.UpdatedReplicas == st.Replicas && st.ReadyReplicas == st.Replicas {
		st.CurrentReplicas, st.CurrentRevision = st.UpdatedReplicas, st.UpdateRevision
	}
	return st
}
