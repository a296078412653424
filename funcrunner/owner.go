package funcrunner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// errNotOwned marks an address that is not a pod of the function.
var errNotOwned = errors.New("not a pod of the function")

// ownerCheckTTL is how long a verdict read from the apiserver holds while
// the caches say nothing new.
const ownerCheckTTL = 10 * time.Second

// podOwners tells whether an Endpoints address is a pod of a function's
// ReplicaSet. Anyone may write an Endpoints object named like a
// function's; only the pods the function's ReplicaSet owns get its calls.
// The caches answer first; when they do not say yes (they may lag a pod or
// a ReplicaSet just made) the apiserver is asked, and its verdict kept
// until the caches change or ownerCheckTTL passes.
type podOwners struct {
	s *stepper

	mu       sync.Mutex
	verdicts map[string]verdict
}

type verdict struct {
	err error // nil: owned
	at  time.Time
}

func newPodOwners(s *stepper) *podOwners {
	return &podOwners{s: s, verdicts: map[string]verdict{}}
}

// check returns nil when addr's pod is owned by f's ReplicaSet and has the
// address's IP and port; an error wrapping errNotOwned says why it is not,
// any other error that it could not be told.
func (o *podOwners) check(ctx context.Context, f *api.Func, addr api.EndpointAddress) error {
	key, ok := o.cached(f, addr)
	if ok {
		return nil
	}
	if err, ok := o.lookup(key); ok {
		return err
	}
	err := o.verifyFresh(ctx, f, addr)
	if err != nil && !errors.Is(err, errNotOwned) {
		return err
	}
	if err != nil {
		log.WithError(err).WithField("function", f.Name).Warn("function runner: skipping an endpoint that is not the function's pod")
	}
	o.store(key, err)
	return err
}

// knownBad says whether addr was found not to be f's pod, and nothing
// changed since: it does no I/O.
func (o *podOwners) knownBad(f *api.Func, addr api.EndpointAddress) bool {
	key, ok := o.cached(f, addr)
	if ok {
		return false
	}
	err, ok := o.lookup(key)
	return ok && err != nil
}

// cached checks addr against the caches; when they do not say it is owned
// it returns the key of the apiserver's verdict given what they hold.
func (o *podOwners) cached(f *api.Func, addr api.EndpointAddress) (string, bool) {
	ns := funcNamespace(f)
	rsUIDs := o.replicaSets(f)
	var pod *api.Pod
	rv := "-"
	if ref := addr.TargetRef; ref != nil && ref.Name != "" {
		if p, ok := o.s.pods.Get(ns, ref.Name); ok {
			pod, rv = p, p.ResourceVersion
		}
	}
	if pod != nil && verifyAny(pod, ns, f.Name, rsUIDs, addr) == nil {
		return "", true
	}
	ref := addr.TargetRef
	if ref == nil {
		ref = &api.ObjectReference{}
	}
	key := strings.Join([]string{ns, ref.Kind, ref.Namespace, ref.Name, ref.UID, addrKey(addr), strings.Join(rsUIDs, ","), rv}, "/")
	return key, false
}

// replicaSets are the UIDs f's ReplicaSet may have: f's copy may be older
// than the cache's.
func (o *podOwners) replicaSets(f *api.Func) []string {
	out := []string{f.Status.ReplicaSetUID}
	if function.IsUnit(f.Name) {
		if rs := o.s.unitReplicaSet(f); rs != "" && rs != f.Status.ReplicaSetUID {
			out = append(out, rs)
		}
		return out
	}
	if c, ok := o.s.funcs.Get(funcNamespace(f), f.Name); ok && c.Status.ReplicaSetUID != f.Status.ReplicaSetUID {
		out = append(out, c.Status.ReplicaSetUID)
	}
	return out
}

func (o *podOwners) lookup(key string) (error, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.verdicts[key]
	if !ok || time.Since(v.at) >= ownerCheckTTL {
		return nil, false
	}
	return v.err, true
}

func (o *podOwners) store(key string, err error) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, v := range o.verdicts {
		if now.Sub(v.at) >= ownerCheckTTL {
			delete(o.verdicts, k)
		}
	}
	o.verdicts[key] = verdict{err: err, at: now}
}

// verifyFresh checks addr with the pod and the function as the apiserver
// has them.
func (o *podOwners) verifyFresh(ctx context.Context, f *api.Func, addr api.EndpointAddress) error {
	ns := funcNamespace(f)
	rsUIDs := o.replicaSets(f)
	if err := verifyRef(ns, addr); err != nil {
		return err
	}
	name := addr.TargetRef.Name
	pod, err := o.s.c.Pods(ns).Get(ctx, name)
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%w: address %s: pod %s: %w", errNotOwned, addrKey(addr), name, err)
	}
	if err != nil {
		return fmt.Errorf("address %s: pod %s: %w", addrKey(addr), name, err)
	}
	err = verifyAny(pod, ns, f.Name, rsUIDs, addr)
	if errors.Is(err, errNotOwned) && function.IsUnit(f.Name) {
		// The revision may have a ReplicaSet neither copy knows yet.
		fn, n, _ := function.SplitTarget(f.Name)
		if r, rerr := o.s.c.FuncRevisions(ns).Get(ctx, function.RevisionName(fn, n)); rerr == nil && r.UID == f.UID &&
			!slices.Contains(rsUIDs, r.Status.ReplicaSetUID) && verify(pod, ns, f.Name, r.Status.ReplicaSetUID, addr) == nil {
			return nil
		}
		return err
	}
	if errors.Is(err, errNotOwned) {
		// The function may have a ReplicaSet neither copy knows yet.
		if cur, ferr := o.s.c.Funcs(ns).Get(ctx, f.Name); ferr == nil && !slices.Contains(rsUIDs, cur.Status.ReplicaSetUID) {
			if verify(pod, ns, f.Name, cur.Status.ReplicaSetUID, addr) == nil {
				return nil
			}
		}
	}
	return err
}

// verifyRef checks what the address says of its pod.
func verifyRef(ns string, addr api.EndpointAddress) error {
	ref := addr.TargetRef
	if ref == nil || ref.Kind != api.PodsResource.Kind || ref.Name == "" {
		return fmt.Errorf("%w: address %s names no pod", errNotOwned, addrKey(addr))
	}
	if ref.Namespace != "" && ref.Namespace != ns {
		return fmt.Errorf("%w: address %s names pod %s/%s, outside the function's namespace", errNotOwned, addrKey(addr), ref.Namespace, ref.Name)
	}
	return nil
}

// verifyAny is verify against each of the ReplicaSets; the first one's
// error when none owns the pod.
func verifyAny(pod *api.Pod, ns, fn string, rsUIDs []string, addr api.EndpointAddress) error {
	var first error
	for _, rs := range rsUIDs {
		err := verify(pod, ns, fn, rs, addr)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// verify checks that pod is the one addr names, owned by the ReplicaSet
// rsUID, serving at addr.
func verify(pod *api.Pod, ns, fn, rsUID string, addr api.EndpointAddress) error {
	if err := verifyRef(ns, addr); err != nil {
		return err
	}
	if rsUID == "" {
		return fmt.Errorf("%w: function %q has no ReplicaSet yet", errNotOwned, fn)
	}
	ref := addr.TargetRef
	if ref.UID != "" && pod.UID != ref.UID {
		return fmt.Errorf("%w: address %s names pod %s with uid %s, but that pod is now %s", errNotOwned, addrKey(addr), ref.Name, ref.UID, pod.UID)
	}
	if !ownedBy(pod, rsUID) {
		return fmt.Errorf("%w: pod %s is not owned by ReplicaSet %s of function %q", errNotOwned, pod.Name, rsUID, fn)
	}
	if pod.Status.PodIP != addr.IP {
		return fmt.Errorf("%w: address %s is not pod %s's (its IP is %q)", errNotOwned, addrKey(addr), pod.Name, pod.Status.PodIP)
	}
	if p := podPort(pod, function.PortName); p != 0 && p != addr.Port {
		return fmt.Errorf("%w: address %s is not pod %s's (its %s port is %d)", errNotOwned, addrKey(addr), pod.Name, function.PortName, p)
	}
	return nil
}

func ownedBy(pod *api.Pod, rsUID string) bool {
	for _, r := range pod.OwnerReferences {
		if r.Kind == api.ReplicaSetsResource.Kind && r.UID == rsUID && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}
