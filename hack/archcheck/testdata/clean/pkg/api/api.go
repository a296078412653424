// Package api mirrors the shape of minik8s/pkg/api that archcheck reads.
package api

type FuncInstance struct {
	Name   string
	Spec   FuncInstanceSpec
	Status FuncInstanceStatus
}

type FuncInstanceSpec struct{ Arg string }

type FuncInstanceStatus struct {
	Phase string
	Hops  int
	Next  *FuncStep
	Trace []FuncSpan
}

// Reset has a pointer receiver: calling it on a status writes it.
func (s *FuncInstanceStatus) Reset() { *s = FuncInstanceStatus{} }

type FuncStep struct{ Function string }

type FuncSpan struct{ Name string }

type Func struct {
	Name   string
	Status FuncStatus
}

type FuncStatus struct{ Counter int }

// Pod's status has no owner in the table: anyone may write it.
type Pod struct{ Status PodStatus }

type PodStatus struct{ Phase string }

// DeepCopy is the declaring package's own copy: allowed.
func (in *FuncInstance) DeepCopy() *FuncInstance {
	out := &FuncInstance{Name: in.Name, Spec: in.Spec}
	out.Status = in.Status
	out.Status.Trace = append([]FuncSpan(nil), in.Status.Trace...)
	return out
}
