package scheduler

import (
	"sync"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
)

// placement is a pod counted on a node.
type placement struct {
	uid  string
	node string
	info *podInfo
	// assumed: this scheduler bound (or is binding) the pod and has not yet
	// seen the binding in the watch. Counting it at once keeps the next
	// decisions from overcommitting the node while the cache catches up.
	assumed bool
}

// nodeUsage is what the pods on a node hold.
type nodeUsage struct {
	req, nonZero resources
	pods         int64
	ports        map[hostPort]int
}

// podCache sums, per node, the requests of the pods placed there: the
// bound, non-terminated pods seen in the watch and the pods this scheduler
// assumed. It is fed by the pod informer's handlers.
type podCache struct {
	mu    sync.Mutex
	pods  map[string]*placement
	nodes map[string]*nodeUsage
	// withRequiredAnti and withWeighingTerms are the placed pods whose pod
	// (anti-)affinity bears on others (podTerms.bearsOnOthers), so that a
	// decision walks only those, and none when there are none.
	withRequiredAnti, withWeighingTerms map[string]*placement
	// nominated are pods waiting for the pods preempted for them to go,
	// by key: their room on the node is theirs (preempt.go).
	nominated map[string]*placement
}

func newPodCache() *podCache {
	return &podCache{pods: map[string]*placement{}, nodes: map[string]*nodeUsage{},
		withRequiredAnti: map[string]*placement{}, withWeighingTerms: map[string]*placement{},
		nominated: map[string]*placement{}}
}

// setPod records the pod's current state from the watch.
func (c *podCache) setPod(pod *api.Pod) {
	key := cache.Key(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nominateLocked(key, pod)
	cur := c.pods[key]
	if pod.Spec.NodeName == "" || terminated(pod) {
		// The watch has not caught up with our binding yet: keep counting it.
		if cur != nil && cur.assumed && cur.uid == pod.UID && !terminated(pod) {
			return
		}
		c.removeLocked(key)
		return
	}
	// A pod seen going is placed again: preemption passes over it.
	if cur != nil && !cur.assumed && cur.uid == pod.UID && cur.node == pod.Spec.NodeName &&
		(cur.info.pod.DeletionTimestamp != nil || pod.DeletionTimestamp == nil) {
		return
	}
	c.removeLocked(key)
	c.placeLocked(key, &placement{uid: pod.UID, node: pod.Spec.NodeName, info: newPodInfo(pod)})
}

// deletePod forgets a pod that is gone.
func (c *podCache) deletePod(pod *api.Pod) {
	key := cache.Key(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.pods[key]; cur != nil && cur.uid == pod.UID {
		c.removeLocked(key)
	}
	delete(c.nominated, key)
}

// assumeLocked counts pi on node before the binding is seen.
func (c *podCache) assumeLocked(pi *podInfo, node string) {
	key := cache.Key(pi.pod)
	c.removeLocked(key)
	c.placeLocked(key, &placement{uid: pi.pod.UID, node: node, info: pi, assumed: true})
}

// forget drops an assumption whose binding failed; true if there was one.
func (c *podCache) forget(key, uid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.pods[key]; cur != nil && cur.assumed && cur.uid == uid {
		c.removeLocked(key)
		return true
	}
	return false
}

// isAssumed reports whether this scheduler is binding (or bound) the pod
// and has not seen the result yet.
func (c *podCache) isAssumed(key, uid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.pods[key]
	return cur != nil && cur.assumed && cur.uid == uid
}

func (c *podCache) placeLocked(key string, p *placement) {
	c.pods[key] = p
	if anti, weighs := p.info.terms.bearsOnOthers(); anti || weighs {
		if anti {
			c.withRequiredAnti[key] = p
		}
		if weighs {
			c.withWeighingTerms[key] = p
		}
	}
	u := c.nodes[p.node]
	if u == nil {
		u = &nodeUsage{ports: map[hostPort]int{}}
		c.nodes[p.node] = u
	}
	u.place(p.info)
}

// place counts pi's holdings in u.
func (u *nodeUsage) place(pi *podInfo) {
	u.req.add(pi.req)
	u.nonZero.add(pi.nonZero)
	u.pods++
	for _, hp := range pi.ports {
		u.ports[hp]++
	}
}

// unplace takes pi's holdings out of u.
func (u *nodeUsage) unplace(pi *podInfo) {
	u.req.sub(pi.req)
	u.nonZero.sub(pi.nonZero)
	u.pods--
	for _, hp := range pi.ports {
		if u.ports[hp]--; u.ports[hp] == 0 {
			delete(u.ports, hp)
		}
	}
}

// clone is a copy of u to count in without changing u.
func (u *nodeUsage) clone() *nodeUsage {
	out := &nodeUsage{req: u.req, nonZero: u.nonZero, pods: u.pods, ports: make(map[hostPort]int, len(u.ports))}
	for k, v := range u.ports {
		out.ports[k] = v
	}
	return out
}

func (c *podCache) removeLocked(key string) {
	p := c.pods[key]
	if p == nil {
		return
	}
	delete(c.pods, key)
	delete(c.withRequiredAnti, key)
	delete(c.withWeighingTerms, key)
	u := c.nodes[p.node]
	u.unplace(p.info)
	if u.pods == 0 {
		delete(c.nodes, p.node)
	}
}

// usageLocked is what is placed on node (never nil).
func (c *podCache) usageLocked(node string) *nodeUsage {
	if u := c.nodes[node]; u != nil {
		return u
	}
	return &nodeUsage{}
}
