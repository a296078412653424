package call

import (
	"maps"
	"slices"

	"minik8s/pkg/api"
)

// Copy is a deep copy of an instance (strings are shared: they never
// change). Faster than a copy through JSON, it is taken at every step.
func Copy(in *api.FuncInstance) *api.FuncInstance {
	out := *in
	m := &out.ObjectMeta
	m.CreationTimestamp = copyPtr(m.CreationTimestamp)
	m.DeletionTimestamp = copyPtr(m.DeletionTimestamp)
	m.DeletionGracePeriodSeconds = copyPtr(m.DeletionGracePeriodSeconds)
	m.Labels = maps.Clone(m.Labels)
	m.Annotations = maps.Clone(m.Annotations)
	if m.OwnerReferences != nil {
		m.OwnerReferences = make([]api.OwnerReference, len(in.OwnerReferences))
		for i, r := range in.OwnerReferences {
			r.Controller = copyPtr(r.Controller)
			m.OwnerReferences[i] = r
		}
	}
	st := &out.Status
	if in.Status.Callback != nil {
		cb := *in.Status.Callback
		cb.Time = copyPtr(cb.Time)
		st.Callback = &cb
	}
	st.Failure = copyPtr(st.Failure)
	st.Next = copyPtr(st.Next)
	st.CompletionTime = copyPtr(st.CompletionTime)
	// Its own array: the caller appends a step's spans.
	st.Trace = slices.Clone(in.Status.Trace)
	if in.Status.Steps != nil {
		// One spare slot: the caller usually appends a record.
		st.Steps = make([]api.FuncStepRecord, len(in.Status.Steps), len(in.Status.Steps)+1)
		for i, r := range in.Status.Steps {
			st.Steps[i] = copyRecord(r)
		}
	}
	return &out
}

func copyRecord(r api.FuncStepRecord) api.FuncStepRecord {
	r.Check = copyPtr(r.Check)
	r.PluginErrors = slices.Clone(r.PluginErrors)
	r.Start = copyPtr(r.Start)
	return r
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
