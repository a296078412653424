package function

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Function runners announce themselves with a Lease each, in RunnerNamespace,
// labelled LabelComponent=ComponentRunner. The Lease's holderIdentity names
// the runner in FuncInstance.status.runner; its annotations carry the URL
// the apiserver hands synchronous calls to and the runner's demand report,
// which the function controller turns into Func.status.counter.
const (
	RunnerNamespace = "minik8s-system"
	LabelComponent  = "minik8s.io/component"
	ComponentRunner = "funcrunner"
	// AnnotationRunnerURL is the base URL of the runner's call endpoint.
	AnnotationRunnerURL = "funcrunner.minik8s.io/url"
	// AnnotationRunnerCert is the SHA-256 (hex) of the certificate an
	// https runner serves: the apiserver pins it.
	AnnotationRunnerCert = "funcrunner.minik8s.io/cert-sha256"
	// AnnotationDemand holds the runner's Demand as JSON.
	AnnotationDemand = "funcrunner.minik8s.io/demand"

	// RunnerLeaseDuration is how long a runner's claims hold without a renewal.
	RunnerLeaseDuration = 5 * time.Second
	// RunnerRenewInterval is how often a runner renews its Lease.
	RunnerRenewInterval = 1500 * time.Millisecond

	// RunnerCallPath is the runner's endpoint for synchronous calls handed
	// over by the apiserver: POST RunnerCallPath/NS/NAME?id=ID&wait=DUR with
	// the argument as body. The answer is the FuncInstance as JSON: ended,
	// or still running (claimed by the runner) when wait ran out first.
	RunnerCallPath = "/v1/calls"
)

// ErrNotServing says a runner did not take a call (it is not serving yet,
// or any more): the call may go to another runner. Any other error of a
// runner may come after the call started, and must not be retried.
var ErrNotServing = fmt.Errorf("function runner is not serving: %w", errdefs.ErrUnavailable)

// ErrAbandoned, as the cause of a runner's context
// (context.WithCancelCause), stops it as a crash would: it leaves its
// Lease and its claims for the other runners to find expired. Tests use
// it to stand for SIGKILL.
var ErrAbandoned = errors.New("funcrunner abandoned")

// Abandoned says whether ctx ended with ErrAbandoned: a runner stopping so
// writes nothing on its way out.
func Abandoned(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrAbandoned) }

// HeaderInstanceID names, in a function gateway's answer, the call's
// instance (GET /api/funcs/ID reads it).
const HeaderInstanceID = "X-Minik8s-Instance-Id"

// HeaderFiltered names, on a 204 of the gateway, the trigger whose
// filters the request's event did not pass: no call was made.
const HeaderFiltered = "X-Minik8s-Filtered-By"

// MaxInstanceBytes bounds a FuncInstance as a runner writes it (JSON):
// under the apiserver's limit for an instance's status and etcd's limit on
// one request, so an outcome too large to store is told before it is sent.
const MaxInstanceBytes = 7 << 20

// RunnerLeaseName is the name of a runner's Lease.
func RunnerLeaseName(identity string) string { return "funcrunner-" + identity }

// Demand is what one runner reports about the calls it drives, per
// function ("namespace/name").
type Demand struct {
	Functions map[string]FuncDemand `json:"functions,omitempty"`
	// Unfinished counts the calls not ended yet (all runners see them
	// all): the backlog the apiserver bounds asynchronous calls by.
	Unfinished int `json:"unfinished,omitempty"`
}

// FuncDemand is one function's demand as one runner sees it.
type FuncDemand struct {
	// Started counts the calls (steps) of the function this runner has
	// started since it started: a cumulative count, so a lost report loses
	// nothing.
	Started int64 `json:"started"`
	// InFlight is the steps running or waiting now; Peak the most at once
	// since the previous report, so short bursts are seen.
	InFlight int `json:"inFlight"`
	Peak     int `json:"peak"`
	// Waiting counts the steps that wait because no pod is ready.
	Waiting int `json:"waiting"`
	// LastCall is when the last step started.
	LastCall *time.Time `json:"lastCall,omitempty"`
}

// RunnerDemand reads a runner Lease's demand report; a missing or broken
// annotation reads as no demand.
func RunnerDemand(l *api.Lease) Demand {
	var d Demand
	if s := l.Annotations[AnnotationDemand]; s != "" {
		_ = json.Unmarshal([]byte(s), &d)
	}
	return d
}

// LeaseLive says whether a Lease is held at now: renewed less than its
// duration ago.
func LeaseLive(l *api.Lease, now time.Time) bool {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
		return false
	}
	d := RunnerLeaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.Before(l.Spec.RenewTime.Add(d))
}
