package apiserver

import (
	"github.com/gin-gonic/gin"

	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// dryRun says whether the request asks ?dryRun=All: everything a write
// does (admission, validation, defaults, the checks of the store) but the
// write itself, as Kubernetes does.
func dryRun(c *gin.Context, fromBody []string) (bool, error) {
	vals := append(c.QueryArray("dryRun"), fromBody...)
	if len(vals) == 0 {
		return false, nil
	}
	for _, v := range vals {
		if v != "All" {
			return false, errdefs.BadRequest("dryRun", "%q is not a dry run: the only one is All", v)
		}
	}
	return true, nil
}

// registryFor is the registry a request writes through: h.reg, or its dry
// run (asked in the query, or in a delete's options: fromBody).
func (h *handlers) registryFor(c *gin.Context, fromBody ...string) (*registry, error) {
	dry, err := dryRun(c, fromBody)
	if err != nil || !dry {
		return h.reg, err
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
