// Package other imports its own component and reads statuses.
package other

import (
	"minik8s/controller/functions"
	"minik8s/pkg/api"
)

func Reads(inst *api.FuncInstance, f *api.Func, pod *api.Pod) bool {
	functions.Count(f)
	pod.Status.Phase = "Running" // no owner for Pod
	s := inst.Status             // a local copy, changed and dropped
	s.Phase = ""
	_ = compare(inst.Status)
	return inst.Status.Phase == "Succeeded" && f.Status.Counter > 0 && len(inst.Status.Trace) > 0
}

func compare(s api.FuncInstanceStatus) bool {
	s.Hops = 0
	return s.Phase != ""
}
