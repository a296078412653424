package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
)

// A request's resourceVersion is read as Kubernetes reads it: "" or "0"
// is any version; another must be a version ("invalid resource version",
// 400). A version the store has not reached is waited for a little (another
// writer may be ahead) and then refused with Kubernetes' "Too large
// resource version" (504, retry after a second): a watch from it would
// skip the changes up to it, a list or a get would be older than asked.

// freshWait is how long a version the store has not reached is waited
// for, as Kubernetes' watch cache blocks for it.
const freshWait = 3 * time.Second

// parseResourceVersion reads a resourceVersion of a request; 0 is any.
func parseResourceVersion(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 63)
	if err != nil {
		return 0, errdefs.BadRequest("resourceVersion", "invalid resource version %q: %v", rv, err)
	}
	return int64(n), nil
}

// tooLargeResourceVersion is Kubernetes' timeout for a version the store
// has not reached.
type tooLargeResourceVersion struct{ want, current int64 }

func (e tooLargeResourceVersion) Error() string {
	return fmt.Sprintf("Too large resource version: %d, current: %d", e.want, e.current)
}

func (e tooLargeResourceVersion) Unwrap() error { return errdefs.ErrTimeout }

// waitRevision waits until the store has reached revision rv, for
// freshWait at most (or until ctx ends, a watch's timeoutSeconds).
func (s *Server) waitRevision(ctx context.Context, rv int64) error {
	deadline := time.Now().Add(freshWait)
	for {
		cur, err := s.store.Revision(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return tooLargeResourceVersion{rv, cur}
			}
			return err
		}
		if rv <= cur {
			return nil
		}
		if time.Now().After(deadline) {
			return tooLargeResourceVersion{rv, cur}
		}
		wait.Sleep(ctx, 100*time.Millisecond)
		if ctx.Err() != nil {
			return tooLargeResourceVersion{rv, cur}
		}
	}
}

// listObjects lists what opts select: the latest objects, at least as
// new as their resourceVersion, or exactly at it (resourceVersionMatch
// Exact). Lists are answered whole: limit is honoured by sending
// everything (Kubernetes lets a server), so no continue token is ever
// given, and one sent is not valid.
func (h *handlers) listObjects(ctx context.Context, ns string, f registry.Filter, opts *metainternalversion.ListOptions) ([]api.Object, int64, error) {
	if opts.Continue != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return nil, 0, errdefs.BadRequest("continue", "specifying resource version is not allowed when using continue")
		}
		return nil, 0, errdefs.BadRequest("continue", "invalid continue token: %q: this server answers lists whole and gives no continue tokens", opts.Continue)
	}
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, 0, err
	}
	if rv > 0 {
		if err := h.srv.waitRevision(ctx, rv); err != nil {
			return nil, 0, err
		}
	}
	if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact && rv > 0 {
		return h.reg.ListAt(ctx, ns, f, rv)
	}
	return h.reg.List(ctx, ns, f)
}

// checkGetVersion checks a get's resourceVersion: a version the store has not
// reached is waited for, or refused.
func (h *handlers) checkGetVersion(ctx context.Context, opts *metav1.GetOptions) error {
	if opts == nil {
		return nil
	}
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil || rv == 0 {
		return err
	}
	return h.srv.waitRevision(ctx, rv)
}
