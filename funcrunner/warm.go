package funcrunner

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/podstatus"
)

// claimTTL is how long a pod this runner claimed takes its function's
// calls without its ReplicaSet owning it: the owner check then decides, as
// for any pod.
const claimTTL = 30 * time.Second

// warm claims warm generic pods (pkg/function's warm.go) for calls that
// find no pod of their function ready: it hands one the function on its
// specialise port, which answers once the function serves (the answer is
// the claim: a pod handed another function already answers 409), and
// relabels it as the function's pod, for its ReplicaSet to adopt. One
// claim per function runs at a time; the calls that arrive meanwhile wait
// for it and share the pod up to its containerConcurrency.
type warm struct {
	s  *stepper
	hc *http.Client

	mu       sync.Mutex
	inflight map[string]*claimCall
	// claimed are the pods claimed lately, per Endpoints key, by address.
	claimed map[string]map[string]claimedPod
}

type claimCall struct {
	done chan struct{}
	err  error // nil: a pod was claimed
}

type claimedPod struct {
	addr  api.EndpointAddress
	until time.Time
}

// errNoWarmPod says no warm pod could be claimed: the call takes the
// function's own pods' path.
var errNoWarmPod = errors.New("no warm pod")

// newWarm returns nil when the runner cannot specialise pods: without a
// certificate of the cluster CA, no pod would take its function.
func newWarm(s *stepper, c *client.Client) *warm {
	cert := c.Certificate()
	if cert == nil {
		return nil
	}
	return &warm{s: s, inflight: map[string]*claimCall{}, claimed: map[string]map[string]claimedPod{},
		hc: &http.Client{Transport: &http.Transport{
			Proxy:       nil,
			DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			// The pod's certificate is its own, made at its start: nothing
			// vouches for it. What authenticates the exchange is the
			// runner's certificate, which the pod checks; the address is
			// the pod's as its kubelet reported it, on a pod network whose
			// nodes drop spoofed pod addresses.
			TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}, InsecureSkipVerify: true},
			DisableKeepAlives: true,
		}}}
}

// addresses are the pods claimed lately for key, still in their claimTTL.
func (w *warm) addresses(key string) []api.EndpointAddress {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []api.EndpointAddress
	now := time.Now()
	for k, c := range w.claimed[key] {
		if now.After(c.until) || !w.alive(c.addr) {
			delete(w.claimed[key], k)
			continue
		}
		out = append(out, c.addr)
	}
	if len(w.claimed[key]) == 0 {
		delete(w.claimed, key)
	}
	return out
}

// alive says whether a claimed pod is still there as claimed: a pod
// deleted (the function went back to zero) must not be called again at
// an address that now leads nowhere.
func (w *warm) alive(addr api.EndpointAddress) bool {
	ref := addr.TargetRef
	p, ok := w.s.pods.Get(ref.Namespace, ref.Name)
	return ok && p.UID == ref.UID && p.DeletionTimestamp == nil && p.Status.PodIP == addr.IP
}

// isClaimed says whether addr is a pod this runner claimed for key lately:
// it needs no owner check (the runner itself handed it the function).
func (w *warm) isClaimed(key string, addr api.EndpointAddress) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.claimed[key][addrKey(addr)]
	return ok && time.Now().Before(c.until) && w.alive(c.addr)
}

// forget drops a claimed address that refused a call.
func (w *warm) forget(key string, addr api.EndpointAddress) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.claimed[key], addrKey(addr))
}

// claim claims a warm pod for f, or waits for the claim of f already
// running. nil: a pod is claimed (addresses has it); errNoWarmPod: none
// could be; another error: the function cannot start (its import failed
// in the pod), which the call reports.
func (w *warm) claim(ctx context.Context, f *api.Func, key string) error {
	if w == nil || f.APIVersion == api.FuncAPIVersionV1 || !function.CanUseWarm(f) {
		return errNoWarmPod
	}
	w.mu.Lock()
	if c := w.inflight[key]; c != nil {
		w.mu.Unlock()
		select {
		case <-c.done:
			return c.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c := &claimCall{done: make(chan struct{})}
	w.inflight[key] = c
	w.mu.Unlock()
	c.err = w.claimOne(ctx, f, key)
	w.mu.Lock()
	delete(w.inflight, key)
	w.mu.Unlock()
	close(c.done)
	return c.err
}

func (w *warm) claimOne(ctx context.Context, f *api.Func, key string) error {
	p, err := w.take(ctx, f)
	if err != nil {
		return err
	}
	addr := api.EndpointAddress{IP: p.Status.PodIP, Port: podPort(p, function.PortName), NodeName: p.Spec.NodeName,
		TargetRef: &api.ObjectReference{Kind: api.PodsResource.Kind, Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
	w.mu.Lock()
	if w.claimed[key] == nil {
		w.claimed[key] = map[string]claimedPod{}
	}
	w.claimed[key][addrKey(addr)] = claimedPod{addr: addr, until: time.Now().Add(claimTTL)}
	w.mu.Unlock()
	// The relabel runs beside the call: the ReplicaSet adopts the pod
	// once the call's demand has raised the function's counter, a report
	// later.
	go w.relabel(context.WithoutCancel(ctx), f, p)
	return nil
}

// take specialises a warm pod of f's namespace and runtime for f and
// returns it; errNoWarmPod when none took f; a start error (the function's
// import failed in the pod) fails the call.
func (w *warm) take(ctx context.Context, f *api.Func) (*api.Pod, error) {
	if w == nil || !function.CanUseWarm(f) {
		return nil, errNoWarmPod
	}
	pods := w.candidates(f)
	if len(pods) == 0 {
		return nil, errNoWarmPod
	}
	sp, err := function.Specialize(f)
	if err != nil {
		return nil, errNoWarmPod
	}
	body, err := json.Marshal(sp)
	if err != nil {
		return nil, errNoWarmPod
	}
	for _, p := range pods {
		err := w.specialize(ctx, p, body)
		var startErr *startError
		switch {
		case err == nil:
			return p, nil
		case errors.As(err, &startErr):
			// The pod ends, and would start this function again after a
			// restart: it is of no use to anyone.
			go w.remove(context.WithoutCancel(ctx), p)
			return nil, fmt.Errorf("cannot start: %s", startErr.msg)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			// Claimed by another function, draining, or unreachable: the
			// next one.
			log.WithError(err).WithFields(log.Fields{"function": f.Namespace + "/" + f.Name, "pod": p.Name}).Debug("function runner: a warm pod could not be claimed")
		}
	}
	return nil, errNoWarmPod
}

// candidates are the ready warm pods of f's namespace and runtime, in a
// random order, so that runners claiming at once seldom meet. A pod is a
// candidate by its spec, not only its label: anyone who may create pods
// in the namespace may label one warm (function.IsWarmPodSpec).
func (w *warm) candidates(f *api.Func) []*api.Pod {
	runtime := function.Runtime(&f.Spec)
	sel := labels.SelectorFromSet(map[string]string{function.LabelWarm: function.WarmRuntime(runtime)})
	var out []*api.Pod
	for _, p := range w.s.pods.ListNamespace(funcNamespace(f), sel) {
		if p.DeletionTimestamp != nil || !podstatus.IsReady(p) || p.Status.PodIP == "" ||
			!function.IsWarmPodSpec(&p.Spec, runtime) ||
			podPort(p, function.PortName) == 0 || podPort(p, function.SpecializePortName) == 0 {
			continue
		}
		out = append(out, p)
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// startError is a 422 of the specialise endpoint: the function's preRun
// or import failed.
type startError struct{ msg string }

func (e *startError) Error() string { return e.msg }

func (w *warm) specialize(ctx context.Context, p *api.Pod, body []byte) error {
	url := "https://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(podPort(p, function.SpecializePortName)))) + function.SpecializePath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var st api.Status
	msg := string(data)
	if json.Unmarshal(data, &st) == nil && st.Message != "" {
		msg = st.Message
	}
	if resp.StatusCode == http.StatusUnprocessableEntity {
		return &startError{msg: msg}
	}
	return fmt.Errorf("pod %s: specialise: %d %s", p.Name, resp.StatusCode, msg)
}

// relabel makes a claimed pod f's: its labels those of f's pods, the
// time of the claim for the function controller. Conflicts (its kubelet
// writes its status) are retried on a fresh read; a pod that cannot be
// relabelled is removed, since no ReplicaSet would ever adopt it.
func (w *warm) relabel(ctx context.Context, f *api.Func, p *api.Pod) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pods := w.s.c.Pods(p.Namespace)
	cur := p
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			if cur, err = pods.Get(ctx, p.Name); err != nil {
				break
			}
			if cur.UID != p.UID {
				return
			}
		}
		next := *cur
		next.Labels = function.ClaimLabels(cur.Labels, f)
		next.Annotations = make(map[string]string, len(cur.Annotations)+1)
		for k, v := range cur.Annotations {
			next.Annotations[k] = v
		}
		next.Annotations[function.AnnotationClaimed] = time.Now().UTC().Format(time.RFC3339Nano)
		if _, err = pods.Update(ctx, &next); err == nil || !errdefs.IsConflict(err) {
			break
		}
	}
	if err == nil || errdefs.IsNotFound(err) {
		return
	}
	log.WithError(err).WithFields(log.Fields{"function": f.Name, "pod": p.Name}).Warn("function runner: relabelling a claimed warm pod failed; removing it")
	w.remove(ctx, p)
}

func (w *warm) remove(ctx context.Context, p *api.Pod) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := w.s.c.Pods(p.Namespace).Delete(ctx, p.Name, client.DeleteOptions{UID: p.UID}); err != nil && !errdefs.IsNotFound(err) {
		log.WithError(err).WithField("pod", p.Name).Warn("function runner: removing a warm pod failed")
	}
}
