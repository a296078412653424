package pod

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/kubelet/prober"
	"minik8s/pkg/api"
	"minik8s/pkg/events"
	"minik8s/pkg/wait"
)

// Lifecycle hooks, as Kubernetes' kubelet runs them: postStart as the
// container starts (it is not running until the hook is done; a failed
// hook kills it), preStop before the container is told to stop, within
// its grace period.

// maxPostStart bounds a postStart hook, which holds the pod's worker:
// Kubernetes sets none, but a hook that never ends would keep the pod
// from being deleted here.
const maxPostStart = 2 * time.Minute

// runHook runs handler h of container c (spec).
func (w *Worker) runHook(ctx context.Context, spec api.Container, id string, h *corev1.LifecycleHandler) error {
	switch {
	case h.Exec != nil:
		code, out, err := w.rt.Exec(ctx, id, h.Exec.Command)
		if err != nil {
			return fmt.Errorf("exec %q: %w", strings.Join(h.Exec.Command, " "), err)
		}
		if code != 0 {
			return fmt.Errorf("exec %q exited with %d: %s", strings.Join(h.Exec.Command, " "), code, strings.TrimSpace(out))
		}
		return nil
	case h.HTTPGet != nil:
		return w.hookGet(ctx, spec, h.HTTPGet)
	case h.Sleep != nil:
		wait.Sleep(ctx, time.Duration(h.Sleep.Seconds)*time.Second)
		return nil
	}
	return fmt.Errorf("the hook has no exec, httpGet or sleep handler")
}

// hookGet is an httpGet handler: a status below 400 passes. It goes to
// the pod's address unless the handler names a host (which admission
// allows only for privileged pods).
func (w *Worker) hookGet(ctx context.Context, spec api.Container, g *corev1.HTTPGetAction) error {
	port, err := prober.ResolvePort(g.Port.String(), w.assigned[spec.Name])
	if err != nil {
		return err
	}
	host := g.Host
	if host == "" {
		host = w.podAddress()
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	url := scheme + "://" + net.JoinHostPort(host, strconv.Itoa(int(port))) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	// As for probes: the container's own certificate is not checked.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // Kubernetes' rule for hooks
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// postStart runs container c's postStart hook, if it has one; false when
// it failed and the container was told to stop.
func (w *Worker) postStart(ctx context.Context, p *api.Pod, spec api.Container, c *container) bool {
	if spec.Lifecycle == nil || spec.Lifecycle.PostStart == nil {
		return true
	}
	hctx, cancel := context.WithTimeout(ctx, maxPostStart)
	defer cancel()
	err := w.runHook(hctx, spec, c.id, spec.Lifecycle.PostStart)
	if err == nil {
		return true
	}
	w.log.WithError(err).WithField("container", c.name).Warn("postStart hook failed; stopping the container")
	events.Eventf(w.cfg.Events, p, api.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed: %v", err)
	c.state = waiting("PostStartHookError", err.Error())
	if err := w.rt.StopContainer(ctx, c.id, w.grace(p)); err != nil {
		w.log.WithError(err).Warn("stopping a container whose postStart hook failed")
	}
	return false
}

// preStops runs the preStop hooks of the pod's running containers, side
// by side, for at most grace; it returns what is left of grace for the
// containers to stop, at least 2 seconds when a hook took it all (as
// Kubernetes gives).
func (w *Worker) preStops(ctx context.Context, p *api.Pod, grace time.Duration) time.Duration {
	begun := time.Now()
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	var wg sync.WaitGroup
	ran := false
	for _, spec := range podContainers(p) {
		c := w.containers[spec.Name]
		if spec.Lifecycle == nil || spec.Lifecycle.PreStop == nil || c == nil || c.id == "" || c.state.Running == nil {
			continue
		}
		ran = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.runPreStop(hctx, p, spec, c.id)
		}()
	}
	wg.Wait()
	if !ran {
		return grace
	}
	return max(grace-time.Since(begun), 2*time.Second)
}

// preStop runs one container's preStop hook, if it has one, before it is
// killed alone (a failed liveness probe), as Kubernetes does; it returns
// what is left of grace, as preStops.
func (w *Worker) preStop(ctx context.Context, p *api.Pod, spec api.Container, id string, grace time.Duration) time.Duration {
	if spec.Lifecycle == nil || spec.Lifecycle.PreStop == nil || grace <= 0 {
		return grace
	}
	begun := time.Now()
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	w.runPreStop(hctx, p, spec, id)
	return max(grace-time.Since(begun), 2*time.Second)
}

// runPreStop runs the hook, telling its failure (an event): the
// container is stopped whatever the hook did.
func (w *Worker) runPreStop(ctx context.Context, p *api.Pod, spec api.Container, id string) {
	if err := w.runHook(ctx, spec, id, spec.Lifecycle.PreStop); err != nil && ctx.Err() == nil {
		w.log.WithError(err).WithField("container", spec.Name).Warn("preStop hook failed")
		events.Eventf(w.cfg.Events, p, api.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed: %v", err)
	}
}
