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
		c.ips = r.ips.DryRun()
	}
	if r.nodePorts != nil {
		c.nodePorts = r.nodePorts.DryRun()
	}
	if r.podCIDRs != nil {
		c.podCIDRs = r.podCIDRs.DryRun()
	}
	return &c
}
