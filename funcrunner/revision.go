package funcrunner

import (
	"context"
	"fmt"
	"sync"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/podstatus"
)

// A step runs on one revision of its function: the one its cursor names
// (the call named it, or the chain ran the function on it before), else
// the one the function's traffic picks for the call. The latest is served
// by the function's own pool, an older one by its unit (function.Unit).

// target is what a step of f runs on for inst: f itself on its latest
// revision, else the unit of the older revision; and the revision's number
// (0: not known yet, for a function just made or changed).
func (s *stepper) target(ctx context.Context, inst *api.FuncInstance, f *api.Func, cur *api.FuncStep) (*api.Func, int64, error) {
	n := cur.Revision
	if n == 0 {
		n = function.PickRevision(f, inst.Name+"/"+f.Name)
	}
	latest := s.latestRevision(f)
	if n == 0 || n == latest {
		return f, latest, nil
	}
	r, err := s.revision(ctx, f, n)
	if err != nil {
		return nil, 0, err
	}
	if r.Labels[function.LabelRevisionHash] == s.hashes.of(f).revision {
		// f's spec is that revision again (a rollback the status has
		// not caught up with).
		return f, n, nil
	}
	if f.APIVersion == api.FuncAPIVersionV1 {
		return nil, 0, fmt.Errorf("function %q runs a fresh pod per call (apiVersion v1) and serves its latest revision only, not %d: %w",
			f.Name, n, errdefs.ErrInvalid)
	}
	return function.Unit(f, r), n, nil
}

// latestRevision is the number of the revision f's spec is: its
// status.revision when that is this very spec, else the revision the
// cache has with this spec's hash; 0 while the function controller has
// not made it yet.
func (s *stepper) latestRevision(f *api.Func) int64 {
	n := f.Status.Revision
	if s.revs == nil {
		return n
	}
	hash := s.hashes.of(f).revision
	if r, ok := s.revs.Get(funcNamespace(f), function.RevisionName(f.Name, n)); ok && r.Labels[function.LabelRevisionHash] == hash {
		return n
	}
	sel := labels.SelectorFromSet(map[string]string{function.LabelFunc: f.Name, function.LabelRevisionHash: hash})
	for _, r := range s.revs.ListNamespace(funcNamespace(f), sel) {
		if r.Spec.Function == f.Name && ownedByFunc(r, f) {
			return r.Spec.Revision
		}
	}
	return 0
}

// revision reads revision n of f: from the cache, else the apiserver.
func (s *stepper) revision(ctx context.Context, f *api.Func, n int64) (*api.FuncRevision, error) {
	ns, name := funcNamespace(f), function.RevisionName(f.Name, n)
	r, ok := (*api.FuncRevision)(nil), false
	if s.revs != nil {
		r, ok = s.revs.Get(ns, name)
	}
	if !ok {
		var err error
		if r, err = s.c.FuncRevisions(ns).Get(ctx, name); err != nil && !errdefs.IsNotFound(err) {
			return nil, err
		}
		ok = err == nil
	}
	if !ok || r.Spec.Function != f.Name || !ownedByFunc(r, f) {
		return nil, fmt.Errorf("function %q has no revision %d: %w", f.Name, n, errdefs.ErrNotFound)
	}
	return r, nil
}

func ownedByFunc(r *api.FuncRevision, f *api.Func) bool {
	for _, ref := range r.OwnerReferences {
		if ref.UID == f.UID {
			return true
		}
	}
	return f.UID == ""
}

// unitCannotStart says why a call waiting for a pod of unit u will not get
// one: its function or its revision was deleted meanwhile, or its pods
// fail to start (and none serves). A function's Ready condition speaks
// for its latest revision's pods only: an older one's are judged here.
func (s *stepper) unitCannotStart(ctx context.Context, u *api.Func) error {
	fn, n, _ := function.SplitTarget(u.Name)
	ns := funcNamespace(u)
	f, err := s.lookupFunc(ctx, ns, fn)
	if err != nil || f == nil {
		return fmt.Errorf("the function was deleted while the call waited for a pod: %w", errdefs.ErrNotFound)
	}
	r, err := s.revision(ctx, f, n)
	if errdefs.IsNotFound(err) || (err == nil && r.UID != u.UID) {
		return fmt.Errorf("revision %d was deleted while the call waited for a pod: %w", n, errdefs.ErrNotFound)
	}
	var failure *function.StartFailure
	for _, p := range s.pods.ListNamespace(ns, labels.SelectorFromSet(function.Selector(u.Name))) {
		if p.DeletionTimestamp != nil {
			continue
		}
		if podstatus.IsReady(p) {
			return nil
		}
		if sf := function.PodStartFailure(p); sf != nil && failure == nil {
			failure = sf
		}
	}
	if failure != nil {
		return fmt.Errorf("revision %d cannot start: %s: %s", n, failure.Reason, failure.Message)
	}
	return nil
}

// unitReplicaSet is the ReplicaSet the cache says u's revision has now.
func (s *stepper) unitReplicaSet(u *api.Func) string {
	fn, n, _ := function.SplitTarget(u.Name)
	if s.revs == nil || n == 0 {
		return ""
	}
	if r, ok := s.revs.Get(funcNamespace(u), function.RevisionName(fn, n)); ok {
		return r.Status.ReplicaSetUID
	}
	return ""
}

// specHashes are the hashes of a function's spec, which the steps need
// on every call: computed once per version of the function.
type specHashes struct {
	mu sync.Mutex
	m  map[string]hashPair
}

type hashPair struct{ code, revision string }

// maxSpecHashes bounds the versions remembered; past it all are forgotten.
const maxSpecHashes = 4096

func (h *specHashes) of(f *api.Func) hashPair {
	// A unit's spec is its revision's, which never changes.
	cacheable := f.ResourceVersion != "" || (function.IsUnit(f.Name) && f.UID != "")
	key := f.UID + "/" + f.Name + "/" + f.ResourceVersion
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.m[key]; ok && cacheable {
		return p
	}
	p := hashPair{code: function.CodeHash(&f.Spec), revision: function.RevisionHash(&f.Spec)}
	if h.m == nil || len(h.m) >= maxSpecHashes {
		h.m = map[string]hashPair{}
	}
	h.m[key] = p
	return p
}
