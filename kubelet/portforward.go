package kubelet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"minik8s/pkg/errdefs"
)

// kubectl port-forward speaks Kubernetes' portforward protocol over SPDY:
// for each connection it opens a pair of streams with the same requestID,
// one of data, one for an error message, naming the pod's port.
const (
	portForwardProtocol = "portforward.k8s.io"
	// portForwardIdle ends a session no stream has used for this long.
	portForwardIdle = 4 * time.Hour
	// portForwardPairWait is how long the second stream of a pair may
	// take to come.
	portForwardPairWait = 30 * time.Second
)

// servePortForward forwards connections to ports of a pod (kubectl
// port-forward), which the apiserver proxies here.
func (k *Kubelet) servePortForward(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("pod")
	k.mu.Lock()
	wk := k.workers[k.byName[ns+"/"+name]]
	k.mu.Unlock()
	if wk == nil {
		writeError(w, fmt.Errorf("pod %s/%s is not on node %s: %w", ns, name, k.cfg.NodeName, errdefs.ErrNotFound))
		return
	}
	ip := wk.Pod().Status.PodIP
	if ip == "" {
		writeError(w, errdefs.BadRequest("", "pod %s/%s has no address yet", ns, name))
		return
	}
	if !httpstream.IsUpgradeRequest(r) {
		writeError(w, errdefs.BadRequest("", "port-forward needs an upgrade to SPDY/3.1 (%s)", portForwardProtocol))
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{portForwardProtocol}); err != nil {
		return // answered
	}
	streams := make(chan httpstream.Stream, 4)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		if _, err := forwardPort(s); err != nil {
			return err
		}
		streams <- s
		return nil
	})
	if conn == nil {
		return // answered
	}
	defer conn.Close()
	conn.SetIdleTimeout(portForwardIdle)
	f := &forwarder{addr: ip, pod: ns + "/" + name, pairs: map[string]*streamPair{}}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	for {
		select {
		case <-conn.CloseChan():
			return
		case s := <-streams:
			f.add(ctx, s)
		}
	}
}

// forwardPort is the port a stream names.
func forwardPort(s httpstream.Stream) (uint16, error) {
	p := s.Headers().Get("port")
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q is not a port number", p)
	}
	return uint16(n), nil
}

// forwarder pairs the streams of one session and forwards each pair.
type forwarder struct {
	addr, pod string
	mu        sync.Mutex
	pairs     map[string]*streamPair
}

type streamPair struct {
	data, errs httpstream.Stream
}

func (f *forwarder) add(ctx context.Context, s httpstream.Stream) {
	id := s.Headers().Get("requestID")
	f.mu.Lock()
	p, ok := f.pairs[id]
	if !ok {
		p = &streamPair{}
		f.pairs[id] = p
		// A pair left half made is dropped.
		time.AfterFunc(portForwardPairWait, func() { f.drop(id, p) })
	}
	switch s.Headers().Get("streamType") {
	case "data":
		p.data = s
	case "error":
		p.errs = s
	default:
		f.mu.Unlock()
		_ = s.Reset()
		return
	}
	complete := p.data != nil && p.errs != nil
	if complete {
		delete(f.pairs, id)
	}
	f.mu.Unlock()
	if complete {
		go f.forward(ctx, p)
	}
}

func (f *forwarder) drop(id string, p *streamPair) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pairs[id] != p {
		return
	}
	delete(f.pairs, id)
	for _, s := range []httpstream.Stream{p.data, p.errs} {
		if s != nil {
			_ = s.Reset()
		}
	}
}

// forward copies between the data stream and a connection to the pod's
// port, both ways until both ends are done; a failure is written to the
// error stream, which kubectl prints.
func (f *forwarder) forward(ctx context.Context, p *streamPair) {
	defer p.errs.Close()
	defer p.data.Close()
	port, _ := forwardPort(p.data)
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(f.addr, strconv.Itoa(int(port))))
	if err != nil {
		fmt.Fprintf(p.errs, "error forwarding port %d to pod %s: %v", port, f.pod, err)
		return
	}
	defer conn.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(conn, p.data)
		// The client is done sending: the pod sees the end of its input.
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	if _, err := io.Copy(p.data, conn); err != nil {
		log.WithError(err).WithFields(log.Fields{"pod": f.pod, "port": port}).Debug("port-forward copy ended")
	}
	_ = p.data.Close()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
