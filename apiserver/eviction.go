package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/budget"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/podstatus"
)

// maxDisruptedPods bounds a budget's evictions its controller has not yet
// seen through, as Kubernetes bounds them.
const maxDisruptedPods = 2000

// budgetRefused is an eviction a disruption budget does not allow now:
// 429, as Kubernetes answers it, which kubectl drain retries.
type budgetRefused struct{ cause string }

func (e budgetRefused) Error() string {
	return "Cannot evict pod as it would violate the pod's disruption budget."
}

func (e budgetRefused) Unwrap() error { return errdefs.ErrTooManyRequests }

// evict serves a pod's eviction subresource as Kubernetes' EvictionREST:
// the pod is deleted (with the Eviction's delete options) when no budget
// covers it, when it has already stopped or is going, when it is not ready
// and its budget is healthy without it, or when its budget allows one more
// disruption, which the eviction takes from the budget's status (and
// notes the pod among its disruptedPods) before deleting the pod. Else 429.
func (h *handlers) evict(c *gin.Context) {
	var ev api.Eviction
	if err := h.decodeBody(c, &ev); err != nil {
		fail(c, err)
		return
	}
	ns, name := h.ns(c), c.Param("name")
	if err := registry.MatchNamespace(&ev.ObjectMeta, ns); err != nil {
		fail(c, err)
		return
	}
	if ev.Name != name {
		fail(c, errdefs.BadRequest("metadata.name", "name in URL does not match name in Eviction object"))
		return
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	delOpts, err := registryDeleteOptions(opts)
	if err != nil {
		fail(c, err)
		return
	}
	pods, err := h.registryFor(c, delOpts.DryRun...)
	if err != nil {
		fail(c, err)
		return
	}
	budgets := h.srv.registries[api.PodDisruptionBudgetsResource.Name]
	if err := evictPod(c.Request.Context(), pods, budgets, ns, name, delOpts, dryRun(c, delOpts.DryRun)); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, api.Status{TypeMeta: api.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Success", Code: http.StatusCreated})
}

// evictPod decides and deletes; a conflict (the pod changed between the
// read and the delete) is tried again, unless the caller's own
// resourceVersion precondition failed.
func evictPod(ctx context.Context, pods, budgets *registry.Store, ns, name string, opts registry.DeleteOptions, dryRun bool) error {
	callerRV := opts.Preconditions != nil && opts.Preconditions.ResourceVersion != ""
	var err error
	for try := 0; try < 20; try++ {
		err = evictOnce(ctx, pods, budgets, ns, name, opts, dryRun)
		if callerRV || !errdefs.IsConflict(err) || errors.As(err, new(budgetRefused)) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(try+1) * 10 * time.Millisecond):
		}
	}
	return err
}

func evictOnce(ctx context.Context, pods, budgets *registry.Store, ns, name string, opts registry.DeleteOptions, dryRun bool) error {
	obj, err := pods.Get(ctx, ns, name)
	if err != nil {
		return err
	}
	pod := obj.(*api.Pod)
	if canIgnoreBudget(pod) {
		_, err := pods.Delete(ctx, ns, name, opts)
		return err
	}
	pdb, err := budgetOf(ctx, budgets, pod)
	if err != nil {
		return err
	}
	if pdb != nil {
		unhealthy := !podstatus.IsReady(pod)
		alwaysAllow := pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == api.UnhealthyPodEvictionAlwaysAllow
		if unhealthy && (alwaysAllow || (pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0)) {
			// It counts for nothing: delete it, but only as it was read (a
			// pod that became ready meanwhile is judged again).
			withPodVersion(&opts, pod.ResourceVersion)
		} else if err := takeDisruption(ctx, budgets, pdb, pod.Name, dryRun); err != nil {
			return err
		}
	}
	_, err = pods.Delete(ctx, ns, name, opts)
	return err
}

// canIgnoreBudget: a pod that has stopped, has not started or is already
// going disrupts nothing more by going.
func canIgnoreBudget(p *api.Pod) bool {
	switch p.Status.Phase {
	case api.PodSucceeded, api.PodFailed, api.PodPending:
		return true
	}
	return p.DeletionTimestamp != nil
}

func withPodVersion(opts *registry.DeleteOptions, rv string) {
	if opts.Preconditions == nil {
		opts.Preconditions = &struct {
			UID             string `json:"uid,omitempty"`
			ResourceVersion string `json:"resourceVersion,omitempty"`
		}{}
	}
	if opts.Preconditions.ResourceVersion == "" {
		opts.Preconditions.ResourceVersion = rv
	}
}

// budgetOf is the one budget covering the pod (nil for none); more than
// one is a 500, as in Kubernetes: which of them would the eviction take?
func budgetOf(ctx context.Context, budgets *registry.Store, pod *api.Pod) (*api.PodDisruptionBudget, error) {
	objs, _, err := budgets.List(ctx, pod.Namespace, registry.Filter{})
	if err != nil {
		return nil, err
	}
	var found *api.PodDisruptionBudget
	for _, o := range objs {
		pdb := o.(*api.PodDisruptionBudget)
		if !budget.Selects(pdb, pod) {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("this pod has more than one PodDisruptionBudget (%s, %s), which the eviction subresource does not support",
				found.Name, pdb.Name)
		}
		found = pdb
	}
	return found, nil
}

// takeDisruption takes one allowed disruption from the budget's status,
// under compare-and-swap, noting the pod as disrupted so the controller
// does not count it healthy until it is gone.
func takeDisruption(ctx context.Context, budgets *registry.Store, pdb *api.PodDisruptionBudget, pod string, dryRun bool) error {
	check := func(cur *api.PodDisruptionBudget) error {
		switch {
		case cur.Status.ObservedGeneration < cur.Generation:
			return budgetRefused{fmt.Sprintf("The disruption budget %s is still being processed by the server.", cur.Name)}
		case cur.Status.DisruptionsAllowed < 0:
			return fmt.Errorf("poddisruptionbudget %q: pdb disruptions allowed is negative: %w", cur.Name, errdefs.ErrForbidden)
		case len(cur.Status.DisruptedPods) > maxDisruptedPods:
			return fmt.Errorf("poddisruptionbudget %q: DisruptedPods map too big - too many evictions not confirmed by PDB controller: %w",
				cur.Name, errdefs.ErrForbidden)
		case cur.Status.DisruptionsAllowed == 0:
			return budgetRefused{fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently",
				cur.Name, cur.Status.DesiredHealthy, cur.Status.CurrentHealthy)}
		}
		return nil
	}
	if dryRun {
		return check(pdb)
	}
	_, err := budgets.Mutate(ctx, pdb.Namespace, pdb.Name, func(obj api.Object) (api.Object, error) {
		cur := obj.(*api.PodDisruptionBudget)
		if err := check(cur); err != nil {
			return nil, err
		}
		now := time.Now()
		cur.Status.DisruptionsAllowed--
		if cur.Status.DisruptionsAllowed == 0 {
			budget.SetAllowedCondition(cur, now)
		}
		if cur.Status.DisruptedPods == nil {
			cur.Status.DisruptedPods = map[string]time.Time{}
		}
		cur.Status.DisruptedPods[pod] = now.UTC().Truncate(time.Second)
		return cur, nil
	})
	return err
}
