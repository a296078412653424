package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// invokeInFreshPod runs one step of a v1 function the seed's first way: in
// a pod made for this step alone and removed when it ends.
func (c *caller) invokeInFreshPod(ctx context.Context, f *api.Func, inst *api.FuncInstance, arg string) (*function.Result, target, error) {
	ns := f.Namespace
	yes := true
	name := fmt.Sprintf("%s-%s-%d", function.ObjectName(f.Name), inst.Name[:8], inst.Status.Hops)
	pod := &api.Pod{
		ObjectMeta: api.ObjectMeta{
			Name: name,
			Labels: map[string]string{function.LabelFunc: f.Name, function.LabelCode: function.CodeHash(&f.Spec),
				function.LabelInstance: inst.Name},
			OwnerReferences: []api.OwnerReference{{APIVersion: "v1", Kind: "FuncInstance", Name: inst.Name, UID: inst.UID, Controller: &yes}},
		},
		Spec: function.PodSpec(f),
	}
	if _, err := c.pods.create(ctx, ns, pod); err != nil && !errdefs.IsAlreadyExists(err) {
		// AlreadyExists: a resumed step finds the pod of its first attempt.
		return nil, target{}, fmt.Errorf("creating the step's pod: %w", err)
	}
	defer c.removePod(ns, name)
	c.metrics.coldStarts.WithLabelValues(f.Name).Inc()

	wctx, cancel := context.WithTimeout(ctx, c.coldStart)
	defer cancel()
	ready, err := c.waitPod(wctx, ns, name)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return nil, target{}, fmt.Errorf("cold start timed out after %s: pod %s did not become ready: %w", c.coldStart, name, errdefs.ErrTimeout)
		}
		return nil, target{}, err
	}
	tgt := target{pod: name, node: ready.Spec.NodeName}
	port := podPort(ready, function.PortName)
	if port == 0 {
		return nil, tgt, fmt.Errorf("pod %s reports no %q port", name, function.PortName)
	}
	res, err := c.post(ctx, ready.Status.PodIP, port, f, arg)
	return res, tgt, err
}

// removePod deletes a step pod; its kubelet stops it gracefully.
func (c *caller) removePod(ns, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 10*time.Second)
	defer cancel()
	if _, err := c.pods.delete(ctx, ns, name, deleteOptions{}); err != nil && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("pod", name).Warn("function call: removing a step pod failed")
	}
}

// waitPod waits, by watch, until the pod is ready; a pod that ends or is
// deleted first is an error.
func (c *caller) waitPod(ctx context.Context, ns, name string) (*api.Pod, error) {
	for {
		obj, err := c.pods.get(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		pod := obj.(*api.Pod)
		if done, err := podReadyOrFailed(pod); done {
			return pod, err
		}
		rev, _ := strconv.ParseInt(pod.ResourceVersion, 10, 64)
		events, err := c.pods.store.Watch(ctx, c.pods.key(ns, name), rev, c.pods.res.New)
		if err != nil {
			return nil, err
		}
		for ev := range events {
			if ev.Type == api.Error {
				break
			}
			if ev.Type == api.Deleted {
				return nil, fmt.Errorf("pod %s was deleted before it became ready", name)
			}
			p := ev.Object.(*api.Pod)
			if p.Name != name {
				continue
			}
			if done, err := podReadyOrFailed(p); done {
				return p, err
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func podReadyOrFailed(p *api.Pod) (bool, error) {
	switch p.Status.Phase {
	case api.PodFailed, api.PodSucceeded:
		msg := p.Status.Message
		if msg == "" {
			msg = p.Status.Reason
		}
		return true, fmt.Errorf("pod %s ended (%s) before serving: %s", p.Name, p.Status.Phase, msg)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "CreateContainerError") {
			return true, fmt.Errorf("pod %s cannot start: %s: %s", p.Name, w.Reason, w.Message)
		}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == api.PodReady && cond.Status == api.ConditionTrue && p.Status.PodIP != "" {
			return true, nil
		}
	}
	return false, nil
}

// podPort is the allocated number of a named container port.
func podPort(p *api.Pod, name string) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		for _, port := range cs.Ports {
			if port.Name == name && port.ContainerPort != 0 {
				return port.ContainerPort
			}
		}
	}
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == name && port.ContainerPort != 0 {
				return port.ContainerPort
			}
		}
	}
	return 0
}
