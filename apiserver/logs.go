package apiserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// kubeletTransport reaches kubelets; log streams have no overall timeout.
var kubeletTransport = &http.Transport{
	Proxy:                 nil,
	DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	ResponseHeaderTimeout: 15 * time.Second,
	MaxIdleConnsPerHost:   8,
}

// kubeletTLS reaches kubelets that serve TLS: it verifies them against the
// cluster CA and presents the apiserver's kubelet client certificate.
func (s *Server) kubeletTLS() *http.Transport {
	s.kubeletOnce.Do(func() {
		t := kubeletTransport.Clone()
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: s.creds.ca.Pool(),
			Certificates: []tls.Certificate{s.creds.kubeletClient}}
		s.kubeletHTTPS = t
	})
	return s.kubeletHTTPS
}

// kubeletTarget is where the kubelet of a pod's node serves, and how the
// apiserver reaches it.
type kubeletTarget struct {
	node      *api.Node
	base      string // scheme://host:port
	https     bool
	transport http.RoundTripper
}

// podKubelet finds the kubelet of the node the pod ns/name is bound to.
func (s *Server) podKubelet(ctx context.Context, ns, name string) (kubeletTarget, error) {
	obj, err := s.registries[api.PodsResource.Name].Get(ctx, ns, name)
	if err != nil {
		return kubeletTarget{}, err
	}
	pod := obj.(*api.Pod)
	if pod.Spec.NodeName == "" {
		return kubeletTarget{}, errdefs.BadRequest("", "pod %s/%s is not scheduled to a node yet", ns, name)
	}
	nobj, err := s.registries[api.NodesResource.Name].Get(ctx, "", pod.Spec.NodeName)
	if err != nil {
		return kubeletTarget{}, fmt.Errorf("node %s of pod %s/%s: %w", pod.Spec.NodeName, ns, name, err)
	}
	return s.nodeKubelet(nobj.(*api.Node))
}

// nodeKubelet is where node's kubelet serves, as the node reports it.
func (s *Server) nodeKubelet(node *api.Node) (kubeletTarget, error) {
	addr := ""
	for _, a := range node.Status.Addresses {
		if a.Type == api.NodeInternalIP {
			addr = a.Address
			break
		}
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if addr == "" || port == 0 {
		return kubeletTarget{}, fmt.Errorf("node %s has not reported its kubelet's address: %w", node.Name, errdefs.ErrUnavailable)
	}
	t := kubeletTarget{node: node, base: "http://" + net.JoinHostPort(addr, strconv.Itoa(int(port))), transport: kubeletTransport}
	if node.Status.DaemonEndpoints.KubeletEndpoint.Scheme == "https" {
		if s.creds == nil {
			return kubeletTarget{}, fmt.Errorf("node %s's kubelet serves TLS and this apiserver has no credentials to reach it: %w", node.Name, errdefs.ErrUnavailable)
		}
		t.base, t.https, t.transport = "https://"+net.JoinHostPort(addr, strconv.Itoa(int(port))), true, s.kubeletTLS()
	}
	return t, nil
}

// checkPeer says whether the kubelet that answered over TLS is the node's:
// another node's kubelet at the address is not the one the pod is bound to.
func (t kubeletTarget) checkPeer(cs *tls.ConnectionState) error {
	want := rbac.NodeUserPrefix + t.node.Name
	if cs == nil || len(cs.PeerCertificates) == 0 || cs.PeerCertificates[0].Subject.CommonName != want {
		return fmt.Errorf("the kubelet at %s is not node %s's (its certificate is not %q): %w", t.base, t.node.Name, want, errdefs.ErrUnavailable)
	}
	return nil
}

// podLog serves GET .../pods/:name/log?container=&follow= by asking the
// kubelet of the pod's node and streaming its answer through.
func (s *Server) podLog(c *gin.Context) {
	ctx := c.Request.Context()
	ns, name := c.Param("ns"), c.Param("name")
	target, err := s.podKubelet(ctx, ns, name)
	if err != nil {
		fail(c, err)
		return
	}
	// The options as decoded (decodeQuery) go to the kubelet, written
	// anew: it reads no other parameters than these.
	o := requestOf(c).query.log
	if o == nil {
		o = &corev1.PodLogOptions{}
	}
	if o.Previous {
		// A restarted container's output follows its previous run's in
		// one log: say so rather than answer as if.
		fail(c, errdefs.BadRequest("previous", "not supported: a restarted container's output follows its previous run's in one log (kubectl logs shows both)"))
		return
	}
	q := url.Values{}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	if o.Follow {
		q.Set("follow", "true")
	}
	if o.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*o.TailLines, 10))
	}
	if o.SinceSeconds != nil {
		q.Set("sinceSeconds", strconv.FormatInt(*o.SinceSeconds, 10))
	}
	if o.SinceTime != nil {
		q.Set("sinceTime", o.SinceTime.UTC().Format(time.RFC3339))
	}
	if o.Timestamps {
		q.Set("timestamps", "true")
	}
	target.base += fmt.Sprintf("/containerLogs/%s/%s", url.PathEscape(ns), url.PathEscape(name))
	if len(q) > 0 {
		target.base += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.base, nil)
	if err != nil {
		fail(c, errdefs.BadRequest("", "log request: %v", err))
		return
	}
	resp, err := target.transport.RoundTrip(req)
	if err != nil {
		fail(c, fmt.Errorf("kubelet of node %s at %s: %w: %v", target.node.Name, req.URL.Host, errdefs.ErrUnavailable, err))
		return
	}
	defer resp.Body.Close()
	if target.https {
		if err := target.checkPeer(resp.TLS); err != nil {
			fail(c, err)
			return
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		c.Header("Content-Type", ct)
	}
	c.Status(resp.StatusCode)
	var body io.Reader = resp.Body
	if o.LimitBytes != nil {
		body = io.LimitReader(body, *o.LimitBytes)
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := c.Writer.Write(buf[:n]); werr != nil {
				return
			}
			c.Writer.Flush()
		}
		if err != nil {
			return
		}
	}
}

// podExec serves .../pods/:name/exec (kubectl exec): the websocket upgrade
// goes through to the kubelet of the pod's node, which runs the command.
func (s *Server) podExec(c *gin.Context) { s.podUpgrade(c, "exec") }

// podPortForward serves .../pods/:name/portforward (kubectl port-forward):
// the SPDY upgrade goes through to the kubelet, which forwards the
// streams to the pod's ports. kubectl first tries SPDY tunnelled in a
// websocket; refused, it speaks SPDY itself.
func (s *Server) podPortForward(c *gin.Context) {
	if strings.EqualFold(c.GetHeader("Upgrade"), "websocket") {
		fail(c, errdefs.BadRequest("", "port-forward is served over SPDY/3.1 (%s), not websockets", "portforward.k8s.io"))
		return
	}
	s.podUpgrade(c, "portForward")
}

// podUpgrade proxies an upgraded connection to the kubelet's handler of
// the pod (/exec/NS/NAME, /portForward/NS/NAME).
func (s *Server) podUpgrade(c *gin.Context, handler string) {
	ns, name := c.Param("ns"), c.Param("name")
	target, err := s.podKubelet(c.Request.Context(), ns, name)
	if err != nil {
		fail(c, err)
		return
	}
	dest, err := url.Parse(fmt.Sprintf("%s/%s/%s/%s?%s", target.base, handler, url.PathEscape(ns), url.PathEscape(name), upgradeQuery(c)))
	if err != nil {
		fail(c, errdefs.BadRequest("", "%s request: %v", handler, err))
		return
	}
	transport := target.transport
	if target.https {
		// The peer is checked as the connection is made: an upgraded
		// connection has no response to check afterwards.
		t := s.kubeletTLS().Clone()
		t.TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error { return target.checkPeer(&cs) }
		transport = t
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL, pr.Out.Host = dest, ""
			// The kubelet knows the apiserver by its certificate; the
			// user's credentials stay here.
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
			dropWebsocketToken(pr.Out.Header)
		},
		Transport:     transport,
		FlushInterval: -1,
		// The kubelet's refusal (no such container, not running…) is
		// answered as this server's errors are.
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode < http.StatusBadRequest {
				return nil
			}
			defer resp.Body.Close()
			var st api.Status
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			if json.Unmarshal(data, &st) != nil || st.Error == "" {
				st.Error = strings.TrimSpace(string(data))
			}
			return kubeletRefusal{errdefs.FromHTTP(resp.StatusCode, st.Reason, st.Field, st.Error)}
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var refusal kubeletRefusal
			if errors.As(err, &refusal) {
				fail(c, refusal.err)
				return
			}
			fail(c, fmt.Errorf("kubelet of node %s: %w: %v", target.node.Name, errdefs.ErrUnavailable, err))
		},
	}
	proxy.ServeHTTP(c.Writer, c.Request)
}

// upgradeQuery is the query an exec or a port-forward sends the kubelet:
// its options as decoded (decodeQuery), written anew.
func upgradeQuery(c *gin.Context) string {
	q := requestOf(c).query
	var opts runtime.Object = &corev1.PodExecOptions{}
	switch {
	case q.exec != nil:
		opts = q.exec
	case q.portForward != nil:
		opts = q.portForward
	}
	v, err := scheme.ParameterCodec.EncodeParameters(opts, corev1.SchemeGroupVersion)
	if err != nil {
		return ""
	}
	return v.Encode()
}

// kubeletRefusal carries an error the kubelet answered through the proxy.
type kubeletRefusal struct{ err error }

func (r kubeletRefusal) Error() string { return r.err.Error() }
