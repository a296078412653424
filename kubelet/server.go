package kubelet

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"

	"minik8s/kubelet/logs"
	"minik8s/kubelet/pod"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/pki"
)

// scheme is how the apiserver reaches this kubelet.
func (k *Kubelet) scheme() string {
	if len(k.cfg.ServingCert) > 0 {
		return "https"
	}
	return "http"
}

// secure wraps l in TLS when the kubelet has a serving certificate: it
// then answers only the apiserver (see pki.OnlyAPIServer).
func (k *Kubelet) secure(l net.Listener) (net.Listener, error) {
	if len(k.cfg.ServingCert) == 0 {
		return l, nil
	}
	pair, err := tls.X509KeyPair(k.cfg.ServingCert, k.cfg.ServingKey)
	if err != nil {
		return nil, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	cfg, err := pki.ServerTLS(pair, k.cfg.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("the CA that verifies the apiserver: %w", err)
	}
	return tls.NewListener(l, cfg), nil
}

// handler serves the kubelet's HTTP API: container logs (which the
// apiserver proxies for `mkctl logs`), the pods it runs, and health.
func (k *Kubelet) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /pods", k.servePods)
	mux.HandleFunc("GET /stats/summary", k.serveSummary)
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}", k.serveLogs)
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.serveLogs)
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", k.serveExec)
	mux.HandleFunc("/exec/{namespace}/{pod}", k.serveExec)
	mux.HandleFunc("/portForward/{namespace}/{pod}", k.servePortForward)
	return pki.OnlyAPIServer("the kubelet's API", mux)
}

func writeError(w http.ResponseWriter, err error) {
	code, reason := errdefs.HTTPStatus(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(api.Status{Error: err.Error(), Reason: reason, Code: code})
}

func (k *Kubelet) servePods(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	list := api.PodList{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: []api.Pod{}}
	for _, wk := range k.workers {
		list.Items = append(list.Items, *wk.Pod())
	}
	k.mu.Unlock()
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// serveLogs streams a container's log; ?follow=true keeps streaming until
// the container stops or the client goes.
func (k *Kubelet) serveLogs(w http.ResponseWriter, r *http.Request) {
	wk, container, err := k.podContainer(r)
	if err != nil {
		writeError(w, err)
		return
	}
	opts, err := k.logOptions(r.URL.Query())
	if err != nil {
		writeError(w, err)
		return
	}
	path := logs.Path(wk.Dir(), container)
	flusher, _ := w.(http.Flusher)
	headerSent := false
	out := &lazyHeader{w: w, sent: &headerSent}
	flush := func() {
		out.header()
		if flusher != nil {
			flusher.Flush()
		}
	}
	done := func() bool {
		select {
		case <-wk.Finished():
			return true
		default:
		}
		return !wk.ContainerRunning(container)
	}
	err = logs.Stream(r.Context(), path, opts, out, flush, done)
	if err != nil && !headerSent {
		if errors.Is(err, errdefs.ErrNotFound) {
			// Not started yet: an empty log.
			out.header()
			return
		}
		writeError(w, err)
	}
}

// logOptions reads a log request's options as Kubernetes names them:
// follow, tailLines, sinceSeconds or sinceTime (RFC 3339), timestamps.
func (k *Kubelet) logOptions(q url.Values) (logs.StreamOptions, error) {
	flag := func(name string) bool { return q.Get(name) == "true" || q.Get(name) == "1" }
	opts := logs.StreamOptions{Follow: flag("follow"), TailLines: -1, Timestamps: flag("timestamps")}
	if t := q.Get("tailLines"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return opts, errdefs.BadRequest("tailLines", "%q is not a number of lines", t)
		}
		opts.TailLines = n
	}
	switch s, t := q.Get("sinceSeconds"), q.Get("sinceTime"); {
	case s != "" && t != "":
		return opts, errdefs.BadRequest("sinceSeconds", "give sinceSeconds or sinceTime, not both")
	case s != "":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return opts, errdefs.BadRequest("sinceSeconds", "%q is not a positive number of seconds", s)
		}
		opts.Since = time.Now().Add(-time.Duration(n) * time.Second)
	case t != "":
		since, err := time.Parse(time.RFC3339, t)
		if err != nil {
			return opts, errdefs.BadRequest("sinceTime", "%q is not an RFC 3339 time", t)
		}
		opts.Since = since
	}
	if (opts.Timestamps || !opts.Since.IsZero()) && !k.rt.Timestamped() {
		field := "timestamps"
		if !opts.Since.IsZero() {
			field = "since"
		}
		return opts, errdefs.BadRequest(field, "node %s keeps container output without times: its kubelet has no %s", k.cfg.NodeName, LoggerName)
	}
	return opts, nil
}

// podContainer finds the pod worker and the container a request names by
// its path ({namespace}, {pod}, {container}) or ?container=; a pod of one
// container need not name it.
func (k *Kubelet) podContainer(r *http.Request) (*pod.Worker, string, error) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	k.mu.Lock()
	wk := k.workers[k.byName[ns+"/"+name]]
	k.mu.Unlock()
	if wk == nil {
		return nil, "", fmt.Errorf("pod %s/%s is not on node %s: %w", ns, name, k.cfg.NodeName, errdefs.ErrNotFound)
	}
	p := wk.Pod()
	if container == "" {
		container = r.URL.Query().Get("container")
	}
	names := make([]string, 0, len(p.Spec.InitContainers)+len(p.Spec.Containers))
	for _, c := range append(append([]api.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		names = append(names, c.Name)
	}
	if container == "" {
		if len(names) != 1 {
			return nil, "", errdefs.BadRequest("container", "pod %s has several containers %v: name one", name, names)
		}
		container = names[0]
	}
	if !slices.Contains(names, container) {
		return nil, "", fmt.Errorf("pod %s has no container %q: %w", name, container, errdefs.ErrNotFound)
	}
	return wk, container, nil
}

// lazyHeader sets the content type before the first byte, so that an
// error found before any output can still be answered as JSON.
type lazyHeader struct {
	w    http.ResponseWriter
	sent *bool
}

func (l *lazyHeader) header() {
	if !*l.sent {
		l.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		l.w.WriteHeader(http.StatusOK)
		*l.sent = true
	}
}

func (l *lazyHeader) Write(p []byte) (int, error) {
	l.header()
	return l.w.Write(p)
}
