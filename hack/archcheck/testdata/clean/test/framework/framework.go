// Package framework starts components; code under test/ may write statuses.
package framework

import (
	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/test/harness"
)

func Start(inst *api.FuncInstance) {
	harness.Main()
	apiserver.Serve()
	inst.Status.Phase = "Pending"
}
