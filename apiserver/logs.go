package apiserver

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

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

// podLog serves GET .../pods/:name/log?container=&follow= by asking the
// kubelet of the pod's node and streaming its answer through.
func (s *Server) podLog(c *gin.Context) {
	ctx := c.Request.Context()
	ns, name := c.Param("ns"), c.Param("name")
	obj, err := s.registries[api.PodsResource.Name].get(ctx, ns, name)
	if err != nil {
		fail(c, err)
		return
	}
	pod := obj.(*api.Pod)
	if pod.Spec.NodeName == "" {
		fail(c, errdefs.BadRequest("", "pod %s/%s is not scheduled to a node yet: it has no logs", ns, name))
		return
	}
	nobj, err := s.registries[api.NodesResource.Name].get(ctx, "", pod.Spec.NodeName)
	if err != nil {
		fail(c, fmt.Errorf("node %s of pod %s/%s: %w", pod.Spec.NodeName, ns, name, err))
		return
	}
	node := nobj.(*api.Node)
	addr := ""
	for _, a := range node.Status.Addresses {
		if a.Type == api.NodeInternalIP {
			addr = a.Address
			break
		}
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if addr == "" || port == 0 {
		fail(c, fmt.Errorf("node %s has not reported its kubelet's address: %w", node.Name, errdefs.ErrUnavailable))
		return
	}
	q := url.Values{}
	if ct := c.Query("container"); ct != "" {
		q.Set("container", ct)
	}
	if f := c.Query("follow"); f == "true" || f == "1" {
		q.Set("follow", "true")
	}
	if t := c.Query("tailLines"); t != "" {
		q.Set("tailLines", t)
	}
	for _, p := range []string{"sinceSeconds", "sinceTime", "timestamps", "previous"} {
		// Container output is kept as written, without times or the
		// previous run's apart: say so rather than answer as if.
		if v := c.Query(p); v != "" && v != "false" {
			fail(c, errdefs.BadRequest(p, "not supported: the kubelet keeps container output without timestamps, and a restarted container's output follows its previous run's"))
			return
		}
	}
	scheme, transport := "http", http.RoundTripper(kubeletTransport)
	if node.Status.DaemonEndpoints.KubeletEndpoint.Scheme == "https" {
		if s.creds == nil {
			fail(c, fmt.Errorf("node %s's kubelet serves TLS and this apiserver has no credentials to reach it: %w", node.Name, errdefs.ErrUnavailable))
			return
		}
		scheme, transport = "https", s.kubeletTLS()
	}
	target := fmt.Sprintf("%s://%s/containerLogs/%s/%s", scheme, net.JoinHostPort(addr, strconv.Itoa(int(port))),
		url.PathEscape(ns), url.PathEscape(name))
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		fail(c, errdefs.BadRequest("", "log request: %v", err))
		return
	}
	resp, err := transport.RoundTrip(req)
	if err != nil {
		fail(c, fmt.Errorf("kubelet of node %s at %s: %w: %v", node.Name, req.URL.Host, errdefs.ErrUnavailable, err))
		return
	}
	defer resp.Body.Close()
	if scheme == "https" {
		// The certificate must be this node's: another node's kubelet at
		// the address is not the one the pod is bound to.
		want := rbac.NodeUserPrefix + node.Name
		if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 || resp.TLS.PeerCertificates[0].Subject.CommonName != want {
			fail(c, fmt.Errorf("the kubelet at %s is not node %s's (its certificate is not %q): %w", req.URL.Host, node.Name, want, errdefs.ErrUnavailable))
			return
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		c.Header("Content-Type", ct)
	}
	c.Status(resp.StatusCode)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
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
