package functions

import (
	"testing"

	"minik8s/apiserver"
	"minik8s/pkg/api"
)

// A component's test may start another component.
func TestCount(t *testing.T) {
	apiserver.Serve()
	inst := api.FuncInstance{}
	inst.Status.Phase = "Failed"
}
