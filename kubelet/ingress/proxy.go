package ingress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"

	log "github.com/sirupsen/logrus"

	"minik8s/kubelet/proxy"
	"minik8s/pkg/api"
)

// errNoEndpoint: the backend has no ready endpoint (503, as ingress-nginx
// and Traefik answer).
var errNoEndpoint = errors.New("no ready endpoint")

// ServeHTTP routes a request by its host and path to a ready endpoint of
// the matching backend, or answers 404 (no rule), 503 (no endpoint) or
// 502 (the endpoint failed).
func (ic *Controller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	tg, ok := ic.routes.Load().match(host, r.URL.Path)
	if !ok {
		http.Error(w, "404 page not found: no Ingress rule matches this host and path", http.StatusNotFound)
		return
	}
	endpoint, err := ic.endpoint(tg)
	if err != nil {
		status := http.StatusServiceUnavailable
		if !errors.Is(err, errNoEndpoint) {
			status = http.StatusBadGateway
		}
		http.Error(w, fmt.Sprintf("ingress %s/%s: %v", tg.namespace, tg.ingress, err), status)
		return
	}
	rp := &httputil.ReverseProxy{
		Transport:  ic.transport,
		BufferPool: copyBuffers,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = endpoint
			// The backend sees the host the client asked for, as
			// ingress-nginx and Traefik pass it.
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.WithError(err).WithFields(log.Fields{"ingress": tg.namespace + "/" + tg.ingress, "endpoint": endpoint}).Debug("ingress: backend failed")
			if r.Context().Err() == nil {
				http.Error(w, fmt.Sprintf("ingress %s/%s: the backend at %s failed: %v", tg.namespace, tg.ingress, endpoint, err), http.StatusBadGateway)
			}
		},
	}
	rp.ServeHTTP(w, r)
}

// copyBuffers are the bodies' copy buffers, reused across requests.
var copyBuffers = &bufferPool{sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte  { return *b.p.Get().(*[]byte) }
func (b *bufferPool) Put(v []byte) { b.p.Put(&v) }

// endpoint picks a ready endpoint ("ip:port") of tg's Service port in
// turn.
func (ic *Controller) endpoint(tg target) (string, error) {
	b := tg.backend.Service
	if b == nil {
		return "", fmt.Errorf("a resource backend is not served by minik8s's ingress controller (only Services)")
	}
	svc, ok := ic.services.Lister().Get(tg.namespace, b.Name)
	if !ok {
		return "", fmt.Errorf("service %q not found: %w", b.Name, errNoEndpoint)
	}
	sp, ok := servicePort(svc, b.Port)
	if !ok {
		return "", fmt.Errorf("service %q has no port %s", b.Name, portString(b.Port))
	}
	ep, _ := ic.endpoints.Lister().Get(tg.namespace, b.Name)
	targets := proxy.Targets(ep, sp)
	if len(targets) == 0 {
		return "", fmt.Errorf("service %q: %w", b.Name, errNoEndpoint)
	}
	return targets[int(ic.next.Add(1)%uint64(len(targets)))], nil
}

func servicePort(svc *api.Service, p api.ServiceBackendPort) (api.ServicePort, bool) {
	for _, sp := range svc.Spec.Ports {
		if (p.Name != "" && sp.Name == p.Name) || (p.Name == "" && sp.Port == p.Number) {
			return sp, true
		}
	}
	return api.ServicePort{}, false
}

func portString(p api.ServiceBackendPort) string {
	if p.Name != "" {
		return strconv.Quote(p.Name)
	}
	return strconv.Itoa(int(p.Number))
}
