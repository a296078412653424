// Package call owns FuncInstance.Status.
package call

import "minik8s/pkg/api"

func Start(inst *api.FuncInstance) {
	inst.Status = api.FuncInstanceStatus{Phase: "Running"}
	inst.Status.Hops++
	inst.Status.Trace = append(inst.Status.Trace, api.FuncSpan{Name: "call"})
	st := &inst.Status
	st.Next = &api.FuncStep{Function: "f"}
}
