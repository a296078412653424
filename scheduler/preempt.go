package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"

	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/events"
)

// Preemption, as kube-scheduler's DefaultPreemption: a pod that fits
// nowhere may take the room of pods of lower priority. On each node where
// it would fit were all of them gone, the fewest are chosen (the most
// important are spared first, while it still fits), and the node whose
// victims matter least is taken: the lowest highest priority, then the
// lowest sum, then the fewest. The victims are deleted with their grace
// period and the pod is nominated to the node (status.nominatedNodeName);
// its room there is counted as taken for pods of no higher priority
// while it waits, so that they do not take what was freed for it.

// PodDeleter deletes a preempted pod (with its grace period).
type PodDeleter interface {
	DeletePod(ctx context.Context, namespace, name, uid string) error
}

// priorityOf is the pod's priority, as the apiserver's priority admission
// set it (0 for none).
func priorityOf(p *api.Pod) int32 {
	if p.Spec.Priority == nil {
		return 0
	}
	return *p.Spec.Priority
}

// mayPreempt: the pod's policy lets it preempt (PreemptLowerPriority, the
// default), and it is not still waiting for its last victims to go.
func (s *Scheduler) mayPreempt(pod *api.Pod) bool {
	if p := pod.Spec.PreemptionPolicy; p != nil && *p == corev1.PreemptNever {
		return false
	}
	node := pod.Status.NominatedNodeName
	if node == "" {
		return true
	}
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	for _, p := range s.cache.pods {
		if p.node == node && p.info.pod.DeletionTimestamp != nil && priorityOf(p.info.pod) < priorityOf(pod) {
			return false // its victims are still going: wait for them
		}
	}
	return true
}

// unmovedFilters are the filters whose answer preempting pods does not
// change here: topology spread and pod affinity are judged with the pods
// as they are, so preemption is not tried where they reject.
var unmovedFilters = []filter{nodeReady, nodeSchedulable, taintToleration, nodeSelector, nodeAffinity, topologySpread, interPodAffinity}

// freedFilters are those removing pods can satisfy.
var freedFilters = []filter{hostPorts, fitsResources}

func passes(pi *podInfo, ni *nodeInfo, fs []filter) bool {
	for _, f := range fs {
		if len(f(pi, ni)) > 0 {
			return false
		}
	}
	return true
}

// candidate is a node and the pods to preempt there.
type candidate struct {
	node    string
	victims []*placement
}

// highest and sum are the victims' highest priority and their sum.
func (c *candidate) highest() int32 {
	h := int32(-1 << 31)
	for _, v := range c.victims {
		h = max(h, priorityOf(v.info.pod))
	}
	return h
}

func (c *candidate) sum() int64 {
	var s int64
	for _, v := range c.victims {
		s += int64(priorityOf(v.info.pod)) + 1<<31 // as kube-scheduler, negative priorities count
	}
	return s
}

func (c *candidate) better(o *candidate) bool {
	if h, oh := c.highest(), o.highest(); h != oh {
		return h < oh
	}
	if s, os := c.sum(), o.sum(); s != os {
		return s < os
	}
	if len(c.victims) != len(o.victims) {
		return len(c.victims) < len(o.victims)
	}
	return c.node < o.node
}

// findPreemption picks where pi may preempt and whom; nil for nowhere.
// The cache's lock is held; infos are this decision's nodes.
func (s *Scheduler) findPreemption(pi *podInfo, infos []*nodeInfo) *candidate {
	prio := priorityOf(pi.pod)
	lower := map[string][]*placement{}
	for _, p := range s.cache.pods {
		if p.info.pod.DeletionTimestamp == nil && priorityOf(p.info.pod) < prio {
			lower[p.node] = append(lower[p.node], p)
		}
	}
	var best *candidate
	for _, ni := range infos {
		pool := lower[ni.node.Name]
		if len(pool) == 0 || !passes(pi, ni, unmovedFilters) {
			continue
		}
		trial := *ni
		trial.used = ni.used.clone()
		for _, v := range pool {
			trial.used.unplace(v.info)
		}
		if !passes(pi, &trial, freedFilters) {
			continue
		}
		// Spare the most important first (higher priority, then older).
		sort.Slice(pool, func(i, j int) bool {
			a, b := pool[i].info.pod, pool[j].info.pod
			if pa, pb := priorityOf(a), priorityOf(b); pa != pb {
				return pa > pb
			}
			if ta, tb := a.CreationTimestamp, b.CreationTimestamp; ta != nil && tb != nil && !ta.Equal(*tb) {
				return ta.Before(*tb)
			}
			return cache.Key(a) < cache.Key(b)
		})
		c := &candidate{node: ni.node.Name}
		for _, v := range pool {
			trial.used.place(v.info)
			if passes(pi, &trial, freedFilters) {
				continue // spared
			}
			trial.used.unplace(v.info)
			c.victims = append(c.victims, v)
		}
		if best == nil || c.better(best) {
			best = c
		}
	}
	return best
}

// preempt deletes the victims for pod, saying so on each.
func (s *Scheduler) preempt(ctx context.Context, pod *api.Pod, c *candidate) error {
	var errs []error
	for _, v := range c.victims {
		victim := v.info.pod
		err := s.deleter.DeletePod(ctx, victim.Namespace, victim.Name, victim.UID)
		if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
			errs = append(errs, fmt.Errorf("preempting pod %s: %w", cache.Key(victim), err))
			continue
		}
		log.WithFields(log.Fields{"pod": cache.Key(victim), "by": cache.Key(pod), "node": c.node}).Info("preempted pod")
		events.Eventf(s.events, victim, api.EventTypeNormal, "Preempted", "Preempted by %s/%s on node %s", pod.Namespace, pod.Name, c.node)
	}
	return errors.Join(errs...)
}

// nominateLocked keeps the pods nominated to a node and not yet bound.
func (c *podCache) nominateLocked(key string, pod *api.Pod) {
	if pod.Status.NominatedNodeName == "" || pod.Spec.NodeName != "" || terminated(pod) || pod.DeletionTimestamp != nil {
		delete(c.nominated, key)
		return
	}
	c.nominated[key] = &placement{uid: pod.UID, node: pod.Status.NominatedNodeName, info: newPodInfo(pod)}
}

// withNominated counts, on each node, the room of pods nominated there
// of at least pi's priority (not pi itself): what was freed for them.
func (c *podCache) withNominated(pi *podInfo, infos []*nodeInfo) {
	if len(c.nominated) == 0 {
		return
	}
	byNode := map[string]*nodeInfo{}
	for _, ni := range infos {
		byNode[ni.node.Name] = ni
	}
	key, prio := cache.Key(pi.pod), priorityOf(pi.pod)
	for k, n := range c.nominated {
		ni := byNode[n.node]
		if k == key || ni == nil || priorityOf(n.info.pod) < prio {
			continue
		}
		if _, bound := c.pods[k]; bound {
			continue
		}
		ni.used = ni.used.clone()
		ni.used.place(n.info)
	}
}
