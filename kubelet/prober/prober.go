// Package prober runs the readiness and liveness probes of a running
// container: an HTTP GET or a TCP connection to the pod's address, or a
// command run in the container.
package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
)

// ResolvePort turns a probe's port, a number or the name of a container
// port, into the number the container listens on.
func ResolvePort(port string, ports []api.ContainerPort) (int32, error) {
	if n, err := strconv.Atoi(port); err == nil {
		if n <= 0 || n > 65535 {
			return 0, errdefs.Invalid("httpGet.port", "%d is not a port number", n)
		}
		return int32(n), nil
	}
	for _, p := range ports {
		if p.Name == port && port != "" {
			return p.ContainerPort, nil
		}
	}
	return 0, errdefs.Invalid("httpGet.port", "no container port is named %q", port)
}

// check makes one HTTP GET with the probe's headers (a Host header names
// the virtual host, as in Kubernetes); 2xx and 3xx pass.
func check(ctx context.Context, client *http.Client, url string, headers []corev1.HTTPHeader) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "minik8s-probe")
	for _, h := range headers {
		if http.CanonicalHeaderKey(h.Name) == "Host" {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe of %s answered %s", url, resp.Status)
	}
	return nil
}

// probeURL of an HTTP probe against a container on host (the probe's own
// host if it names one) with its ports.
func probeURL(host string, g *api.HTTPGetAction, ports []api.ContainerPort) (string, error) {
	port, err := ResolvePort(string(g.Port), ports)
	if err != nil {
		return "", err
	}
	if g.Host != "" {
		host = g.Host
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	scheme := "http"
	if strings.EqualFold(g.Scheme, string(corev1.URISchemeHTTPS)) {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(int(port))) + path, nil
}

// Worker probes one container until stopped.
type Worker struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	ready      bool
	liveFailed bool
	message    string
	// failedBy is the probe that failed liveness (startup or liveness).
	failedBy *api.Probe
}

// Execer runs a command in the probed container: its exit code and output.
type Execer func(ctx context.Context, cmd []string) (code int, output string, err error)

// checker is one probe's check of a container on host: it passes when it
// returns nil.
func checker(host string, p *api.Probe, ports []api.ContainerPort, exec Execer, timeout time.Duration) (func(context.Context) error, error) {
	switch {
	case p.HTTPGet != nil:
		url, err := probeURL(host, p.HTTPGet, ports)
		if err != nil {
			return nil, err
		}
		// HTTPS probes do not verify the certificate, as Kubernetes'
		// kubelet does not: the pod's certificate is not for its address.
		transport := &http.Transport{Proxy: nil, DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // as Kubernetes' prober
		if pr := p.HTTPGet.Protocol; pr != nil && *pr == corev1.HTTPProtocolHTTP2 {
			var protocols http.Protocols
			protocols.SetHTTP2(true)
			protocols.SetUnencryptedHTTP2(true)
			transport.Protocols = &protocols
		}
		client := &http.Client{Timeout: timeout, Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		headers := p.HTTPGet.HTTPHeaders
		return func(ctx context.Context) error { return check(ctx, client, url, headers) }, nil
	case p.GRPC != nil:
		if p.GRPC.Port <= 0 || p.GRPC.Port > 65535 {
			return nil, errdefs.Invalid("grpc.port", "%d is not a port number", p.GRPC.Port)
		}
		addr := net.JoinHostPort(host, strconv.Itoa(int(p.GRPC.Port)))
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return func(ctx context.Context) error { return grpcCheck(ctx, addr, service, timeout) }, nil
	case p.TCPSocket != nil:
		port, err := ResolvePort(string(p.TCPSocket.Port), ports)
		if err != nil {
			return nil, err
		}
		if p.TCPSocket.Host != "" {
			host = p.TCPSocket.Host
		}
		addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
		return func(ctx context.Context) error {
			d := net.Dialer{Timeout: timeout}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return fmt.Errorf("TCP probe of %s: %w", addr, err)
			}
			return c.Close()
		}, nil
	case p.Exec != nil && exec != nil:
		cmd := p.Exec.Command
		return func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			code, out, err := exec(ctx, cmd)
			if err != nil {
				return fmt.Errorf("exec probe %q: %w", strings.Join(cmd, " "), err)
			}
			if code != 0 {
				return fmt.Errorf("exec probe %q exited with %d: %s", strings.Join(cmd, " "), code, strings.TrimSpace(out))
			}
			return nil
		}, nil
	}
	return nil, errdefs.Invalid("probe", "one of httpGet, tcpSocket, grpc and exec is required")
}

// Probes are a container's probes; any may be nil.
type Probes struct {
	Startup, Readiness, Liveness *api.Probe
}

// Start probes a container on host; exec runs the exec probes' commands
// in it. onChange is called (from the worker's goroutines) when readiness
// changes or liveness fails. Without a readiness probe the container is
// ready at once, once started. A startup probe holds the others back
// until it passes, and failing its threshold fails liveness, as in
// Kubernetes.
func Start(ctx context.Context, host string, ports []api.ContainerPort, exec Execer, probes Probes, onChange func()) *Worker {
	ctx, cancel := context.WithCancel(ctx)
	readiness, liveness := probes.Readiness, probes.Liveness
	w := &Worker{cancel: cancel, done: make(chan struct{}), ready: readiness == nil && probes.Startup == nil}
	var wg sync.WaitGroup
	if probes.Startup != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !w.startup(ctx, host, ports, exec, probes.Startup, onChange) {
				return
			}
			// Added to wg before this goroutine is done: Wait below
			// cannot end in between.
			w.startAfterStartup(ctx, &wg, host, ports, exec, readiness, liveness, onChange)
		}()
	} else {
		w.startAfterStartup(ctx, &wg, host, ports, exec, readiness, liveness, onChange)
	}
	go func() { wg.Wait(); close(w.done) }()
	return w
}

// startup runs the startup probe until it passes (true) or fails its
// threshold, which is reported as a liveness failure.
func (w *Worker) startup(ctx context.Context, host string, ports []api.ContainerPort, exec Execer, p *api.Probe, onChange func()) bool {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	passed := false
	w.run(ctx, host, ports, exec, p, false, func(ok bool, msg string) {
		if ok {
			passed = true
			stop()
			return
		}
		w.failLiveness(p, "startup probe failed: "+msg, onChange)
		stop()
	})
	return passed
}

// startAfterStartup starts the readiness and liveness probes.
func (w *Worker) startAfterStartup(ctx context.Context, wg *sync.WaitGroup, host string, ports []api.ContainerPort, exec Execer, readiness, liveness *api.Probe, onChange func()) {
	if readiness == nil {
		w.setReady(true, "", onChange)
	}
	if readiness != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx, host, ports, exec, readiness, true, func(ok bool, msg string) {
				w.setReady(ok, "readiness probe failed: "+msg, onChange)
			})
		}()
	}
	if liveness != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx, host, ports, exec, liveness, false, func(ok bool, msg string) {
				if !ok {
					w.failLiveness(liveness, "liveness probe failed: "+msg, onChange)
				}
			})
		}()
	}
}

// setReady records readiness (why not, when not), calling onChange when
// it changed.
func (w *Worker) setReady(ok bool, why string, onChange func()) {
	w.mu.Lock()
	changed := w.ready != ok
	w.ready = ok
	if !ok {
		w.message = why
	}
	w.mu.Unlock()
	if changed {
		onChange()
	}
}

// failLiveness records that the container must be restarted and why,
// calling onChange the first time.
func (w *Worker) failLiveness(p *api.Probe, why string, onChange func()) {
	w.mu.Lock()
	changed := !w.liveFailed
	w.liveFailed = true
	w.failedBy = p
	w.message = why
	w.mu.Unlock()
	if changed {
		onChange()
	}
}

// startupInterval is how often a readiness probe runs until it first
// succeeds: a pod is then ready within a tenth of a second of serving, not
// a whole period later, which is most of a function's cold start. Failing
// readiness before the first success changes nothing (the container is not
// ready yet), so probing faster cannot make it less ready.
const startupInterval = 100 * time.Millisecond

// run probes every period, reporting a result when the failure or success
// threshold is reached. With fastStart it probes every startupInterval
// until the first success.
func (w *Worker) run(ctx context.Context, host string, ports []api.ContainerPort, exec Execer, p *api.Probe, fastStart bool, report func(ok bool, msg string)) {
	period := secondsOr(p.PeriodSeconds, 10)
	timeout := secondsOr(p.TimeoutSeconds, 1)
	failureThreshold := intOr(p.FailureThreshold, 3)
	successThreshold := intOr(p.SuccessThreshold, 1)
	check, checkErr := checker(host, p, ports, exec, timeout)
	if !wait.Sleep(ctx, time.Duration(p.InitialDelaySeconds)*time.Second) {
		return
	}
	var successes, failures int32
	started := !fastStart
	for {
		var err error
		if checkErr != nil {
			err = checkErr
		} else {
			err = check(ctx)
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
			successes++
			if successes >= successThreshold {
				started = true
				report(true, "")
			}
		} else {
			successes = 0
			failures++
			if failures >= failureThreshold {
				report(false, err.Error())
			}
		}
		next := period
		if !started {
			next = min(period, startupInterval)
		}
		if !wait.Sleep(ctx, next) {
			return
		}
	}
}

func secondsOr(v, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

func intOr(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// Ready is the readiness result so far.
func (w *Worker) Ready() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready
}

// LivenessFailed tells that the liveness probe failed its threshold, and why.
func (w *Worker) LivenessFailed() (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.liveFailed, w.message
}

// KillGrace is the grace the probe that failed liveness gives the
// container it kills (its terminationGracePeriodSeconds), or def.
func (w *Worker) KillGrace(def time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failedBy != nil && w.failedBy.TerminationGracePeriodSeconds != nil {
		return time.Duration(*w.failedBy.TerminationGracePeriodSeconds) * time.Second
	}
	return def
}

// Stop ends the probes and waits for them.
func (w *Worker) Stop() {
	w.cancel()
	<-w.done
}
