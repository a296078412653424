package apiserver

import (
	"minik8s/apiserver/registry"

	"github.com/gin-gonic/gin"
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
func (h *handlers) registryFor(c *gin.Context, fromBody ...string) (*registry.Store, error) {
	if !dryRun(c, fromBody) {
		return h.reg, nil
	}
	return h.reg.DryRun(), nil
}
