package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	log "github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Taint-based eviction, as Kubernetes' taint eviction controller does it:
// a pod on a node with a NoExecute taint it does not tolerate is deleted;
// one that tolerates every such taint for a while (tolerationSeconds) is
// deleted once the shortest of those whiles has passed since the taint
// was added (its timeAdded, or when this controller first saw it).

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
	key := node + "\x00" + t.Key + "\x00" + t.Value
	nc.mu.Lock()
	defer nc.mu.Unlock()
	at, ok := nc.taintSeen[key]
	if !ok {
		at = nc.now()
		nc.taintSeen[key] = at
	}
	return at
}

// evictByTaints deletes the node's pods whose time under its NoExecute
// taints is up, and looks again when the next one's will be.
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
	var errs []error
	var next time.Duration
	for _, p := range nc.pods.ByIndex(podNodeIndex, node.Name) {
		if p.DeletionTimestamp != nil || p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed {
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

// forgetTaints drops what was seen of taints the node no longer has.
func (nc *Controller) forgetTaints(node string, taints []corev1.Taint) {
	keep := map[string]bool{}
	for _, t := range taints {
		keep[node+"\x00"+t.Key+"\x00"+t.Value] = true
	}
	prefix := node + "\x00"
	nc.mu.Lock()
	defer nc.mu.Unlock()
	for k := range nc.taintSeen {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix && !keep[k] {
			delete(nc.taintSeen, k)
		}
	}
}
