package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// errNotOwned marks an address that is not a pod of the function.
var errNotOwned = errors.New("not a pod of the function")

// ownerCheckTTL is how long a verified address is trusted without a read.
const ownerCheckTTL = 10 * time.Second

// podOwners tells whether an Endpoints address is a pod of a function's
// ReplicaSet. Anyone may write an Endpoints object named like a
// function's; only the pods the function's ReplicaSet owns get its calls.
type podOwners struct {
	funcs, pods *registry

	mu       sync.Mutex
	verified map[string]time.Time // owner tuple → when it was verified
}

func newPodOwners(funcs, pods *registry) *podOwners {
	return &podOwners{funcs: funcs, pods: pods, verified: map[string]time.Time{}}
}

// check returns nil when addr's pod is owned by f's ReplicaSet and has the
// address's IP and port; an error wrapping errNotOwned says why it is not,
// any other error that it could not be told.
func (o *podOwners) check(ctx context.Context, f *api.Func, addr api.EndpointAddress) error {
	err := o.verify(ctx, f.Namespace, f.Name, f.Status.ReplicaSetUID, addr)
	if errors.Is(err, errNotOwned) {
		// f was read when the step began: its ReplicaSet may have been
		// made or replaced since.
		if obj, ferr := o.funcs.get(ctx, f.Namespace, f.Name); ferr == nil {
			if rs := obj.(*api.Func).Status.ReplicaSetUID; rs != f.Status.ReplicaSetUID {
				err = o.verify(ctx, f.Namespace, f.Name, rs, addr)
			}
		}
	}
	if err != nil && !errors.Is(err, errNotOwned) && errdefs.IsNotFound(err) {
		err = fmt.Errorf("%w: %w", errNotOwned, err)
	}
	return err
}

func (o *podOwners) verify(ctx context.Context, ns, fn, rsUID string, addr api.EndpointAddress) error {
	if rsUID == "" {
		return fmt.Errorf("%w: function %q has no ReplicaSet yet", errNotOwned, fn)
	}
	ref := addr.TargetRef
	if ref == nil || ref.Kind != api.PodsResource.Kind || ref.Name == "" {
		return fmt.Errorf("%w: address %s names no pod", errNotOwned, addrKey(addr))
	}
	if ref.Namespace != "" && ref.Namespace != ns {
		return fmt.Errorf("%w: address %s names pod %s/%s, outside the function's namespace", errNotOwned, addrKey(addr), ref.Namespace, ref.Name)
	}
	key := ns + "/" + ref.Name + "/" + ref.UID + "/" + addrKey(addr) + "/" + rsUID
	o.mu.Lock()
	at, ok := o.verified[key]
	o.mu.Unlock()
	if ok && time.Since(at) < ownerCheckTTL {
		return nil
	}
	obj, err := o.pods.get(ctx, ns, ref.Name)
	if err != nil {
		return fmt.Errorf("address %s: pod %s: %w", addrKey(addr), ref.Name, err)
	}
	pod := obj.(*api.Pod)
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
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, t := range o.verified {
		if now.Sub(t) >= ownerCheckTTL {
			delete(o.verified, k)
		}
	}
	o.verified[key] = now
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
