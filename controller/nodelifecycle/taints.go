package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/nodecondition"
)

// Taint-based eviction, as Kubernetes' taint eviction controller does it:
// a pod on a node with a NoExecute taint it does not tolerate is deleted;
// one that tolerates every such taint for a while (tolerationSeconds) is
// deleted once the shortest of those whiles has passed since the taint
// was added (its timeAdded, or when this controller first saw it). The
// node's own state comes in as taints too (conditionTaints), so a lost
// node's pods go by the same rule: at once, unless they tolerate
// node.kubernetes.io/unreachable. There is no DefaultTolerationSeconds
// admission: a pod that asks nothing goes at the end of the node's grace
// period, not 300 s later.

// conditionTaints are the taints of the controller's own keys that a node
// whose Ready condition is ready carries, as Kubernetes' node lifecycle
// controller keeps them (TaintNodesByCondition, and the NoExecute taints
// of taint-based eviction): unreachable while Unknown, not-ready while
// False, none while True (or before the kubelet ever posted).
func conditionTaints(ready string) []corev1.Taint {
	var key string
	switch ready {
	case api.ConditionUnknown:
		key = corev1.TaintNodeUnreachable
	case api.ConditionFalse:
		key = corev1.TaintNodeNotReady
	default:
		return nil
	}
	return []corev1.Taint{{Key: key, Effect: corev1.TaintEffectNoSchedule}, {Key: key, Effect: corev1.TaintEffectNoExecute}}
}

// ownTaint says whether t is one the controller keeps (by key, NoSchedule
// or NoExecute); it never touches others (an admin's).
func ownTaint(t corev1.Taint) bool {
	return (t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady) &&
		(t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute)
}

// withConditionTaints is taints with the controller's own made those of
// the Ready status: others kept in their order, one of its own that stays
// kept as it is (its timeAdded is when the node's trouble began), a
// NoExecute one it adds stamped with now, as Kubernetes stamps it.
func withConditionTaints(taints []corev1.Taint, ready string, now time.Time) (out []corev1.Taint, changed bool) {
	want := conditionTaints(ready)
	has := func(t corev1.Taint, in []corev1.Taint) bool {
		return slices.ContainsFunc(in, func(o corev1.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect })
	}
	for _, t := range taints {
		if ownTaint(t) && !has(t, want) {
			changed = true
			continue
		}
		out = append(out, t)
	}
	for _, t := range want {
		if has(t, taints) {
			continue
		}
		if t.Effect == corev1.TaintEffectNoExecute {
			t.TimeAdded = &metav1.Time{Time: now.UTC().Truncate(time.Second)}
		}
		out, changed = append(out, t), true
	}
	return out, changed
}

// keepConditionTaints writes the node's taints for its Ready condition
// when they differ, conditional on the version read (a conflict is
// retried: the sync is requeued), and returns the node as written.
func (nc *Controller) keepConditionTaints(ctx context.Context, node *api.Node) (*api.Node, error) {
	ready := nodecondition.ReadyStatus(node)
	taints, changed := withConditionTaints(node.Spec.Taints, ready, nc.now())
	if !changed {
		return node, nil
	}
	up := cache.DeepCopy(node)
	up.Spec.Taints = taints
	out, err := nc.api.UpdateNode(ctx, up)
	if err != nil {
		return nil, fmt.Errorf("tainting node %s for Ready=%s: %w", node.Name, ready, err)
	}
	log.WithFields(log.Fields{"node": node.Name, "ready": ready}).Info("node's condition taints updated")
	return out, nil
}

// noExecuteTaints are the node's NoExecute taints.
func noExecuteTaints(n *api.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// evictionDelay says how long pod p may stay on a node with the NoExecute
// taints: not at all when one is untolerated, else the shortest
// tolerationSeconds of the tolerations that match one (Kubernetes'
// getMinTolerationTime), or forever when none of those has a limit.
func evictionDelay(p *api.Pod, taints []corev1.Taint) (delay time.Duration, forever bool) {
	var shortest *int64
	for i := range taints {
		tolerated := false
		for _, tol := range p.Spec.Tolerations {
			if !tol.ToleratesTaint(klog.Background(), &taints[i], true) {
				continue
			}
			tolerated = true
			if s := tol.TolerationSeconds; s != nil && (shortest == nil || *s < *shortest) {
				shortest = s
			}
		}
		if !tolerated {
			return 0, false
		}
	}
	if shortest == nil {
		return 0, true
	}
	return time.Duration(max(*shortest, 0)) * time.Second, false
}

// taintSince is when the controller counts taint t of node from.
func (nc *Controller) taintSince(node string, t corev1.Taint) time.Time {
	if t.TimeAdded != nil {
		return t.TimeAdded.Time
	}
	key := taintKey(node, t)
	nc.mu.Lock()
	defer nc.mu.Unlock()
	at, ok := nc.taintSeen[key]
	if !ok {
		at = nc.now()
		nc.taintSeen[key] = at
	}
	return at
}

// taintKey names taint t of node in taintSeen.
func taintKey(node string, t corev1.Taint) string {
	return node + "\x00" + t.Key + "\x00" + t.Value
}

// evictByTaints deletes the node's pods whose time under its NoExecute
// taints is up, and looks again when the next one's will be. A pod of a
// live node is deleted with its grace period; one of an unreachable node
// (Ready Unknown) is marked Failed and deleted at once: no kubelet is
// there to finish a graceful deletion.
func (nc *Controller) evictByTaints(ctx context.Context, node *api.Node) error {
	taints := noExecuteTaints(node)
	nc.forgetTaints(node.Name, taints)
	if len(taints) == 0 {
		return nil
	}
	// A pod tolerating several taints for a while goes once the taint it
	// tolerates for the shortest while has lasted that long: count from
	// the latest taint, as Kubernetes restarts the clock on each change.
	var since time.Time
	for _, t := range taints {
		if s := nc.taintSince(node.Name, t); s.After(since) {
			since = s
		}
	}
	lost := nodecondition.ReadyStatus(node) == api.ConditionUnknown
	var errs []error
	var next time.Duration
	for _, p := range nc.pods.ByIndex(podNodeIndex, node.Name) {
		// A live node's kubelet finishes these; a lost node's pods are
		// removed whatever their state.
		if !lost && (p.DeletionTimestamp != nil || p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed) {
			continue
		}
		delay, forever := evictionDelay(p, taints)
		if forever {
			continue
		}
		if left := since.Add(delay).Sub(nc.now()); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		if lost {
			if err := nc.evict(ctx, p, unresponsive(node.Name)); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		err := nc.api.DeletePod(ctx, p.Namespace, p.Name, p.UID)
		switch {
		case err == nil:
			log.WithFields(log.Fields{"pod": p.Namespace + "/" + p.Name, "node": node.Name}).Info("evicted pod: its node has a NoExecute taint it does not tolerate")
		case !errdefs.IsNotFound(err) && !errdefs.IsConflict(err):
			errs = append(errs, fmt.Errorf("evicting pod %s/%s from tainted node %s: %w", p.Namespace, p.Name, node.Name, err))
		}
	}
	if next > 0 {
		nc.queue.AddAfter(node.Name, next+10*time.Millisecond)
	}
	return errors.Join(errs...)
}

// forgetTaints drops what was seen of taints the node no longer has (all
// of them when taints is nil: the node is gone).
func (nc *Controller) forgetTaints(node string, taints []corev1.Taint) {
	keep := map[string]bool{}
	for _, t := range taints {
		keep[taintKey(node, t)] = true
	}
	prefix := node + "\x00"
	nc.mu.Lock()
	defer nc.mu.Unlock()
	for k := range nc.taintSeen {
		if strings.HasPrefix(k, prefix) && !keep[k] {
			delete(nc.taintSeen, k)
		}
	}
}
