package apiserver

import (
	"github.com/gin-gonic/gin"

	"minik8s/pkg/storage"
)

// dryRun says whether the request asks dryRun=All (its options, or a
// delete's body: fromBody): everything a write does (admission,
// validation, defaults, the checks of the store) but the write itself, as
// Kubernetes does. The values were validated with the options.
func dryRun(c *gin.Context, fromBody []string) bool {
	return len(requestOf(c).query.dryRun()) > 0 || len(fromBody) > 0
}

// registryFor is the registry a request writes through: h.reg, or its dry
// run (asked in the query, or in a delete's options: fromBody).
func (h *handlers) registryFor(c *gin.Context, fromBody ...string) (*registry, error) {
	if !dryRun(c, fromBody) {
		return h.reg, nil
	}
	return h.reg.dryRun(), nil
}

// dryRun is the registry with every write checked and not made: its store
// and its allocators' stores are dry runs.
func (r *registry) dryRun() *registry {
	c := *r
	c.store = storage.DryRun{Interface: r.store}
	if r.ips != nil {
		ips := *r.ips
		ips.rangeAllocator = r.ips.dryRun()
		c.ips = &ips
	}
	if r.nodePorts != nil {
		np := *r.nodePorts
		np.rangeAllocator = r.nodePorts.dryRun()
		c.nodePorts = &np
	}
	if r.podCIDRs != nil {
		pc := *r.podCIDRs
		pc.rangeAllocator = r.podCIDRs.dryRun()
		c.podCIDRs = &pc
	}
	return &c
}

// dryRun is the allocator over a dry run of its store: it finds a free
// member as it would, and allocates nothing.
func (a *rangeAllocator) dryRun() *rangeAllocator {
	d := *a
	d.store = storage.DryRun{Interface: a.store}
	d.cursor = &rangeCursor{next: a.cursor.get()}
	return &d
}
