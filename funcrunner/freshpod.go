package funcrunner

import (
	"context"
	"errors"
	"fmt"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/podstatus"
)

// invokeInFreshPod runs one step of a v1 function the seed's first way: in
// a pod made for this step alone and removed when it ends.
func (s *stepper) invokeInFreshPod(ctx context.Context, f *api.Func, inst *api.FuncInstance, call stepCall) (*function.Result, stepTarget, error) {
	ns := funcNamespace(f)
	name := freshPodName(f, inst)
	waitStart := time.Now()
	if res, tgt, err := s.invokeInWarmPod(ctx, f, call); !errors.Is(err, errNoWarmPod) {
		return res, tgt, err
	}
	pod := &api.Pod{
		ObjectMeta: api.ObjectMeta{
			Name: name,
			Labels: map[string]string{function.LabelFunc: f.Name, function.LabelCode: function.CodeHash(&f.Spec),
				function.LabelInstance: inst.Name},
			OwnerReferences: []api.OwnerReference{freshPodOwner(f, inst)},
		},
		Spec: function.PodSpec(f),
	}
	if _, err := s.c.Pods(ns).Create(ctx, pod); err != nil && !errdefs.IsAlreadyExists(err) {
		// AlreadyExists: a resumed step finds the pod of its first attempt.
		if ctx.Err() != nil {
			return nil, stepTarget{}, ctx.Err()
		}
		return nil, stepTarget{}, fmt.Errorf("creating the step's pod: %w", err)
	}
	defer s.removePod(ctx, ns, name)

	coldStart := s.cfg.ColdStartTimeout
	wctx, cancel := context.WithTimeout(ctx, coldStart)
	defer cancel()
	ready, err := s.waitPod(wctx, ns, name)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return nil, stepTarget{}, fmt.Errorf("cold start timed out after %s: pod %s did not become ready: %w", coldStart, name, errdefs.ErrTimeout)
		}
		return nil, stepTarget{}, err
	}
	tgt := stepTarget{pod: name, node: ready.Spec.NodeName, waitStart: waitStart, waitEnd: time.Now()}
	port := podPort(ready, function.PortName)
	if port == 0 {
		return nil, tgt, fmt.Errorf("pod %s reports no %q port", name, function.PortName)
	}
	res, err := postStep(ctx, s.http, ready.Status.PodIP, port, f, call)
	return res, tgt, err
}

// invokeInWarmPod runs one step of a v1 function in a warm pod
// specialised for it (relabelled as its, so that no one else takes it) and
// removed when the step ends: a fresh pod still, made before the call.
// errNoWarmPod: none was ready, the step takes a pod of its own.
func (s *stepper) invokeInWarmPod(ctx context.Context, f *api.Func, call stepCall) (*function.Result, stepTarget, error) {
	waitStart := time.Now()
	p, err := s.warm.take(ctx, f)
	if err != nil {
		return nil, stepTarget{}, err
	}
	relabelled := make(chan struct{})
	go func() {
		defer close(relabelled)
		s.warm.relabel(context.WithoutCancel(ctx), f, p)
	}()
	defer func() {
		<-relabelled
		s.warm.remove(context.WithoutCancel(ctx), p)
	}()
	tgt := stepTarget{pod: p.Name, node: p.Spec.NodeName, waitStart: waitStart, waitEnd: time.Now()}
	res, err := postStep(ctx, s.http, p.Status.PodIP, podPort(p, function.PortName), f, call)
	return res, tgt, err
}

// freshPodName names the pod of one step: the function, the instance and
// the step, so that a step run again finds the pod of its first attempt.
func freshPodName(f *api.Func, inst *api.FuncInstance) string {
	id := inst.Name
	if len(id) > 8 {
		id = id[:8]
	}
	return fmt.Sprintf("%s-%s-%d", function.ObjectName(f.Name), id, inst.Status.Hops)
}

// freshPodOwner makes the instance own its step pods, so they go with it.
// An instance not stored yet (a synchronous call runs in memory first)
// has no uid: the function owns the pod then, since an owner that does
// not exist would have the garbage collector delete the pod mid-step.
func freshPodOwner(f *api.Func, inst *api.FuncInstance) api.OwnerReference {
	if inst.UID == "" {
		return function.OwnerRef(f)
	}
	yes := true
	return api.OwnerReference{APIVersion: "v1", Kind: "FuncInstance", Name: inst.Name, UID: inst.UID, Controller: &yes}
}

// removePod deletes a step pod; its kubelet stops it gracefully. It runs
// even when ctx ended: the pod must not outlive its step.
func (s *stepper) removePod(ctx context.Context, ns, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := s.c.Pods(ns).Delete(ctx, name, client.DeleteOptions{}); err != nil && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("pod", name).Warn("function runner: removing a step pod failed")
	}
}

// waitPod waits, by the pods cache, until the pod is ready; a pod that
// ends or is deleted first is an error.
func (s *stepper) waitPod(ctx context.Context, ns, name string) (*api.Pod, error) {
	recheck := time.NewTicker(recheckInterval)
	defer recheck.Stop()
	seen := false
	for {
		wake := s.changes.Watch(podKey(ns, name))
		p, ok := s.pods.Get(ns, name)
		switch {
		case ok:
			seen = true
			if done, err := podReadyOrFailed(p); done {
				return p, err
			}
		case seen:
			return nil, fmt.Errorf("pod %s was deleted before it became ready", name)
		}
		select {
		case <-wake:
		case <-recheck.C:
			if !ok {
				// The cache may have missed a pod deleted at once; the
				// apiserver knows.
				if _, err := s.c.Pods(ns).Get(ctx, name); errdefs.IsNotFound(err) {
					return nil, fmt.Errorf("pod %s was deleted before it became ready", name)
				}
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func podReadyOrFailed(p *api.Pod) (bool, error) {
	if f := function.PodStartFailure(p); f != nil {
		return true, fmt.Errorf("pod %s cannot start: %w", p.Name, f)
	}
	return podstatus.IsReady(p) && p.Status.PodIP != "", nil
}
