package funcapi

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/storage"
	"minik8s/pkg/wait"
)

// runnerDirectory follows the function runners' Leases by watch, so that a
// synchronous call is handed to a live runner without a store read.
type runnerDirectory struct {
	reg *registry.Store

	mu      sync.Mutex
	leases  map[string]*api.Lease // name → lease
	next    int
	changed chan struct{} // closed and replaced on every change
}

func newRunnerDirectory(reg *registry.Store) *runnerDirectory {
	return &runnerDirectory{reg: reg, leases: map[string]*api.Lease{}, changed: make(chan struct{})}
}

// run follows the runners' Leases until ctx ends, relisting when the watch breaks.
func (d *runnerDirectory) run(ctx context.Context) {
	sel := labels.SelectorFromSet(map[string]string{function.LabelComponent: function.ComponentRunner})
	f := registry.Filter{Labels: sel}
	for ctx.Err() == nil {
		objs, rev, err := d.reg.List(ctx, function.RunnerNamespace, f)
		if err != nil {
			log.WithError(err).Warn("runner directory: list failed")
			wait.Sleep(ctx, time.Second)
			continue
		}
		d.replace(objs)
		events, err := d.reg.Storage.Watch(ctx, d.reg.Prefix(function.RunnerNamespace), rev, d.reg.Resource.New)
		if err != nil {
			wait.Sleep(ctx, time.Second)
			continue
		}
		d.follow(events, f)
	}
}

func (d *runnerDirectory) follow(events <-chan storage.Event, f registry.Filter) {
	for ev := range events {
		if ev.Type == api.Error {
			log.WithError(ev.Err).Debug("runner directory: watch ended, relisting")
			return
		}
		l := ev.Object.(*api.Lease)
		d.mu.Lock()
		if ev.Type == api.Deleted || !f.Matches(l) {
			delete(d.leases, l.Name)
		} else {
			d.leases[l.Name] = l
		}
		d.broadcastLocked()
		d.mu.Unlock()
	}
}

func (d *runnerDirectory) replace(objs []api.Object) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.leases = map[string]*api.Lease{}
	for _, o := range objs {
		l := o.(*api.Lease)
		d.leases[l.Name] = l
	}
	d.broadcastLocked()
}

func (d *runnerDirectory) broadcastLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// runner is a live runner a call can be handed to.
type runner struct {
	identity, url string
	// certSum pins the certificate an https runner serves.
	certSum string
}

// pick returns a live runner that serves calls, in turn; ok is false when
// there is none.
func (d *runnerDirectory) pick() (r runner, ok bool) {
	live := d.live(time.Now())
	if len(live) == 0 {
		return runner{}, false
	}
	d.mu.Lock()
	d.next++
	n := d.next
	d.mu.Unlock()
	return live[n%len(live)], true
}

// backlog is the unfinished calls the live runners report: each sees them
// all, so the largest report (a runner's report lags a little behind).
func (d *runnerDirectory) backlog(now time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	most := 0
	for _, l := range d.leases {
		if function.LeaseLive(l, now) {
			most = max(most, function.RunnerDemand(l).Unfinished)
		}
	}
	return most
}

// live lists the runners whose Lease is held and that publish a URL,
// ordered by identity.
func (d *runnerDirectory) live(now time.Time) []runner {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]runner, 0, len(d.leases))
	for _, l := range d.leases {
		url := l.Annotations[function.AnnotationRunnerURL]
		if url == "" || !function.LeaseLive(l, now) {
			continue
		}
		out = append(out, runner{identity: *l.Spec.HolderIdentity, url: url, certSum: l.Annotations[function.AnnotationRunnerCert]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].identity < out[j].identity })
	return out
}

// clientFor is the HTTP client that reaches runner r: for an https runner,
// TLS with the apiserver's client certificate, trusting only the
// certificate r published on its Lease.
func (c *Calls) clientFor(r runner) (*http.Client, error) {
	if !strings.HasPrefix(r.url, "https://") {
		return c.http, nil
	}
	var cert *tls.Certificate
	if c.clientCert != nil {
		cert = c.clientCert()
	}
	if cert == nil || r.certSum == "" {
		return nil, fmt.Errorf("function runner %s serves TLS and this apiserver cannot reach it (no credentials, or no certificate on its Lease): %w",
			r.identity, errdefs.ErrUnavailable)
	}
	if hc, ok := c.pinned.Load(r.certSum); ok {
		return hc.(*http.Client), nil
	}
	want := r.certSum
	t := c.http.Transport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert},
		// The runner's certificate is its own, made at its start: it is
		// checked against the hash on its Lease instead of a CA.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the function runner showed no certificate")
			}
			sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if hex.EncodeToString(sum[:]) != want {
				return errors.New("the function runner's certificate is not the one on its Lease")
			}
			return nil
		}}
	hc, _ := c.pinned.LoadOrStore(want, &http.Client{Transport: t})
	return hc.(*http.Client), nil
}
