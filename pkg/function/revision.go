package function

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"

	"minik8s/pkg/api"
)

// A function's revisions (api.FuncRevision): one per version of its code
// and config. The latest (the one the Func's spec is now) is served by the
// function's own pool; an older one that gets calls (it is in spec.traffic,
// or a call names it as NAME@N) by a pool of its own, a "unit" named
// NAME@N, with its own ConfigMap, Service, ReplicaSet and counter, which
// scales on its own, to zero included.

const (
	// RevisionSep separates a function's name and a revision number in a
	// call's target (POST /api/funcs/NAME@N) and in a unit's name.
	RevisionSep = "@"
	// LabelRevisionOf and LabelRevision mark the pods and objects of an
	// older revision's pool: they do not carry LabelFunc, so that the
	// function's own Service, ReplicaSet and controller never take them.
	LabelRevisionOf = "minik8s.io/func-revision-of"
	LabelRevision   = "minik8s.io/func-revision"
	// LabelRevisionHash on a FuncRevision is the hash of its template
	// (RevisionHash): a spec that comes back to it reuses it.
	LabelRevisionHash = "minik8s.io/func-revision-hash"
	// RevisionHistory is how many revisions a function keeps besides the
	// ones that serve (the latest, those in its traffic, those with pods).
	RevisionHistory = 10
)

// RevisionName is the name of revision n of function fn: a valid object
// name whatever fn holds, distinct per (fn, n).
func RevisionName(fn string, n int64) string {
	return strings.TrimPrefix(ObjectName(fn), "func-") + "-r" + strconv.FormatInt(n, 10) + nameHash(fn)
}

// nameHash tells apart the revision names of functions whose names map
// alike ("a-r1" revision 2 and "a" revision... never, but "A" and "a" do).
func nameHash(fn string) string {
	h := fnv.New32a()
	h.Write([]byte(fn))
	return "-" + strconv.FormatUint(uint64(h.Sum32()%(36*36*36*36)), 36)
}

// UnitName is the name under which revision n of fn is served when it is
// not the latest.
func UnitName(fn string, n int64) string {
	return fn + RevisionSep + strconv.FormatInt(n, 10)
}

// SplitTarget splits a call's target NAME@N into the function and the
// revision (0 when none is named); ok is false when the revision is not
// a positive number.
func SplitTarget(target string) (fn string, n int64, ok bool) {
	fn, rev, found := strings.Cut(target, RevisionSep)
	if !found {
		return target, 0, true
	}
	n, err := strconv.ParseInt(rev, 10, 64)
	if err != nil || n < 1 {
		return fn, 0, false
	}
	return fn, n, true
}

// IsUnit says whether a function name is a revision's unit (NAME@N).
func IsUnit(name string) bool { return strings.Contains(name, RevisionSep) }

// BaseName is the function a unit serves (the name itself for a function).
func BaseName(name string) string {
	fn, _, _ := strings.Cut(name, RevisionSep)
	return fn
}

// RevisionTemplate is what a revision keeps of a function's spec: all
// but what belongs to the function across its revisions (its name, its
// address, its pool's bounds, its traffic).
func RevisionTemplate(spec *api.FuncSpec) api.FuncSpec {
	t := *spec
	t.Name, t.Mode, t.ServiceAddress = "", "", ""
	t.InitInstanceNum, t.MinInstanceNum, t.MaxInstanceNum = nil, nil, nil
	t.Traffic = nil
	return t
}

// RevisionHash identifies a revision's template: equal specs (but for
// what RevisionTemplate leaves out) have the same.
func RevisionHash(spec *api.FuncSpec) string {
	b, _ := json.Marshal(RevisionTemplate(spec))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// WithRevision is f's spec with revision r's template in place of its
// code and config: what a rollback writes.
func WithRevision(spec *api.FuncSpec, r *api.FuncRevision) api.FuncSpec {
	out := r.Spec.Template
	out.Name, out.Mode, out.ServiceAddress = spec.Name, spec.Mode, spec.ServiceAddress
	out.InitInstanceNum, out.MinInstanceNum, out.MaxInstanceNum = spec.InitInstanceNum, spec.MinInstanceNum, spec.MaxInstanceNum
	return out
}

// Unit is the function as revision r serves it when r is not the latest:
// named NAME@N, with r's code and config, f's upper bound and no lower one
// (it scales to zero once idle). Its pool (a Func's status) is r's status,
// which the function controller copies in where it needs it.
func Unit(f *api.Func, r *api.FuncRevision) *api.Func {
	zero := 0
	u := &api.Func{TypeMeta: f.TypeMeta, ObjectMeta: api.ObjectMeta{Name: UnitName(f.Name, r.Spec.Revision), Namespace: f.Namespace,
		UID: r.UID, CreationTimestamp: r.CreationTimestamp, Generation: f.Generation}}
	u.Spec = r.Spec.Template
	u.Spec.Name = u.Name
	u.Spec.MaxInstanceNum = f.Spec.MaxInstanceNum
	u.Spec.MinInstanceNum, u.Spec.InitInstanceNum = &zero, &zero
	return u
}

// unitLabels are the labels that select the pods serving name: a
// function's, or a unit's.
func unitLabels(name string) map[string]string {
	fn, n, _ := SplitTarget(name)
	if n == 0 {
		return map[string]string{LabelFunc: fn}
	}
	return map[string]string{LabelRevisionOf: fn, LabelRevision: strconv.FormatInt(n, 10)}
}

// TrafficPercent is the share of f's calls revision n gets (the latest's
// when n is f's current revision).
func TrafficPercent(f *api.Func, n int64) int {
	if len(f.Spec.Traffic) == 0 {
		if n == f.Status.Revision {
			return 100
		}
		return 0
	}
	p := 0
	for _, t := range f.Spec.Traffic {
		if t.Revision == n || (t.Latest && n == f.Status.Revision) {
			p += t.Percent
		}
	}
	return p
}

// PickRevision chooses the revision a call of f runs on by f's traffic:
// 0 for the latest. key (the call's id and the function) places the call
// in [0, 100) the same way every time, so a call driven again (another
// runner, a restart) takes the same revision while the traffic holds.
func PickRevision(f *api.Func, key string) int64 {
	if len(f.Spec.Traffic) == 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	at := int(h.Sum64() % 100)
	for _, t := range f.Spec.Traffic {
		if at < t.Percent {
			if t.Latest {
				return 0
			}
			return t.Revision
		}
		at -= t.Percent
	}
	return 0
}
