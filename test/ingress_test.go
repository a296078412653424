package test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/kubelet"
	"minik8s/pkg/pki"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// echoBackend is a Deployment and Service whose pod answers every GET with
// "NAME PATH HOST" (the pods share the node's network: HOST and PORT are
// what the kubelet gave the pod).
func echoBackend(name string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
spec:
  replicas: 1
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
      - name: echo
        image: ` + containerdtest.PythonRuntimeImage + `
        env:
        - {name: NAME, value: ` + name + `}
        ports:
        - {name: http}
        readinessProbe:
          httpGet: {path: /, port: http}
          periodSeconds: 1
        command:
        - python3
        - -c
        - |
          import http.server, os
          class H(http.server.BaseHTTPRequestHandler):
              def do_GET(self):
                  body = ("%s %s %s" % (os.environ["NAME"], self.path, self.headers["Host"])).encode()
                  self.send_response(200)
                  self.send_header("Content-Length", str(len(body)))
                  self.end_headers()
                  self.wfile.write(body)
              def log_message(self, *args):
                  pass
          http.server.ThreadingHTTPServer((os.environ["HOST"], int(os.environ["PORT"])), H).serve_forever()
---
apiVersion: v1
kind: Service
metadata:
  name: ` + name + `
spec:
  selector: {app: ` + name + `}
  ports:
  - {name: web, port: 8080, targetPort: http}
---
`
}

// webIngress is an Ingress as Kubernetes' documentation writes one: no
// class (the default is given), TLS for one host, two hosts, paths by
// prefix and exact, a default backend.
const webIngress = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  defaultBackend:
    service: {name: other, port: {number: 8080}}
  tls:
  - hosts: [a.example.com]
    secretName: a-tls
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {name: web}}}}
      - {path: /api, pathType: Prefix, backend: {service: {name: api, port: {number: 8080}}}}
      - {path: /exact, pathType: Exact, backend: {service: {name: api, port: {number: 8080}}}}
  - host: B_TARGET_HOST
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: B_TARGET, port: {number: 8080}}}}
`

// TestIngress: with stock kubectl, an Ingress from a manifest is served
// on every node's ingress ports: two hosts and their paths (Prefix by
// whole elements, Exact), a default backend, TLS from a Secret (verified
// by its CA; another name gets the default certificate); kubectl shows
// its class (the default, given at create) and the nodes' addresses; a
// change of its rules drops none of the requests running through it; an
// Ingress of another class is not served; deleted, its routes go. The
// kubelets run with node credentials: the TLS Secret reaches them through
// the node authorizer.
func TestIngress(t *testing.T) {
	t.Parallel()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	s := framework.StartSecureAPIServer(t, "")
	framework.StartControllers(t, s, controller.Config{})
	framework.StartScheduler(t, s, scheduler.Config{})
	type node struct{ http, https string }
	var nodes []node
	for i, ip := range []string{"127.0.0.121", "127.0.0.122"} {
		hp, sp := framework.FreePort(t), framework.FreePort(t)
		framework.SecureKubelet(t, s, ctd, fmt.Sprintf("ing-%d", i+1), ip, func(cfg *kubelet.Config) {
			cfg.IngressHTTPPort, cfg.IngressHTTPSPort = hp, sp
		})
		nodes = append(nodes, node{net.JoinHostPort(ip, strconv.Itoa(hp)), net.JoinHostPort(ip, strconv.Itoa(sp))})
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mustKubectl(t, s, "deployment.apps/web created", "apply", "-f", write("backends.yaml", echoBackend("web")+echoBackend("api")+echoBackend("other")))

	// The TLS Secret, as kubectl makes one from a certificate and key.
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), "ingress test CA")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(pki.CertSpec{CommonName: "a.example.com", DNSNames: []string{"a.example.com"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, s, "secret/a-tls created", "create", "secret", "tls", "a-tls",
		"--cert", write("a.crt", string(certPEM)), "--key", write("a.key", string(keyPEM)))
	ingress := func(bHost, bTarget string) string {
		return write("ingress.yaml", strings.NewReplacer("B_TARGET_HOST", bHost, "B_TARGET", bTarget).Replace(webIngress))
	}
	mustKubectl(t, s, "ingress.networking.k8s.io/web created", "apply", "-f", ingress("b.example.com", "other"))
	for _, d := range []string{"web", "api", "other"} {
		mustKubectl(t, s, "successfully rolled out", "rollout", "status", "deploy/"+d, "--timeout=3m")
	}

	plain := &http.Client{Timeout: 10 * time.Second}
	get := func(addr, host, path string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Host = host
		resp, err := plain.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	routes := []struct{ host, path, want string }{
		{"a.example.com", "/", "web / a.example.com"},
		{"a.example.com", "/index.html", "web /index.html"},
		{"a.example.com", "/api", "api /api"},
		{"a.example.com", "/api/v1/items?x=1", "api /api/v1/items?x=1"},
		{"a.example.com", "/apix", "web /apix"}, // a prefix matches whole elements
		{"a.example.com", "/exact", "api /exact"},
		{"a.example.com", "/exact/more", "web /exact/more"},
		{"b.example.com", "/anything", "other /anything b.example.com"},
		{"unknown.example.com", "/", "other / unknown.example.com"}, // the default backend
	}
	for _, n := range nodes {
		waitUntil(t, time.Minute, "the node at "+n.http+" serving the Ingress", func() bool {
			code, body := get(n.http, "a.example.com", "/")
			return code == 200 && strings.HasPrefix(body, "web ")
		})
		for _, r := range routes {
			if code, body := get(n.http, r.host, r.path); code != 200 || !strings.HasPrefix(body, r.want) {
				t.Errorf("http://%s%s (Host %s): %d %q, want %q", n.http, r.path, r.host, code, body, r.want)
			}
		}
	}

	// HTTPS: the Secret's certificate for its host, verified by its CA;
	// the default certificate for another name.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	for _, n := range nodes {
		secure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, n.https)
			}}}
		var resp *http.Response
		waitUntil(t, 30*time.Second, "HTTPS with the Secret's certificate at "+n.https, func() bool {
			resp, err = secure.Get("https://a.example.com/api/tls")
			return err == nil
		})
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "api /api/tls a.example.com") {
			t.Errorf("https://a.example.com/api/tls at %s: %d %q", n.https, resp.StatusCode, b)
		}
		conn, err := tls.Dial("tcp", n.https, &tls.Config{ServerName: "b.example.com", InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("TLS to %s for b.example.com: %v", n.https, err)
		}
		if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; !strings.Contains(cn, "default") {
			t.Errorf("b.example.com (no TLS of its own) got the certificate of %q, want the default one", cn)
		}
		conn.Close()
	}

	// kubectl: the default class given at create, the nodes' addresses.
	waitUntil(t, 30*time.Second, "kubectl get ingress showing the class and both nodes", func() bool {
		out, _, err := kubectl(t, s, "get", "ingress", "web")
		return err == nil && strings.Contains(out, "minik8s") && strings.Contains(out, "127.0.0.121,127.0.0.122") &&
			strings.Contains(out, "a.example.com,b.example.com") && strings.Contains(out, "80, 443")
	})
	mustKubectl(t, s, "minik8s.io/ingress", "get", "ingressclass")

	// A change of the rules, while four clients keep calling b.example.com
	// over kept-alive connections: no request fails, and the new backend
	// takes over.
	var stop atomic.Bool
	var calls, failures atomic.Int64
	var sawAPI atomic.Bool
	var wg sync.WaitGroup
	var firstFailure atomic.Value
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				code, body := get(nodes[i%2].http, "b.example.com", "/switch")
				calls.Add(1)
				if code != 200 {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %s", code, body))
				}
				if strings.HasPrefix(body, "api ") {
					sawAPI.Store(true)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	mustKubectl(t, s, "ingress.networking.k8s.io/web configured", "apply", "-f", ingress("b.example.com", "api"))
	waitUntil(t, 30*time.Second, "b.example.com routed to the new backend", sawAPI.Load)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d requests over the change, %d failed", calls.Load(), failures.Load())
	if failures.Load() != 0 {
		t.Errorf("%d of %d requests failed over the change of rules; the first: %v", failures.Load(), calls.Load(), firstFailure.Load())
	}

	// An Ingress of another controller's class is not served here.
	mustKubectl(t, s, "ingressclass.networking.k8s.io/nginx created", "apply", "-f", write("nginx.yaml", `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
`))
	mustKubectl(t, s, "ingress.networking.k8s.io/theirs created", "apply", "-f", write("theirs.yaml", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: theirs}
spec:
  ingressClassName: nginx
  rules:
  - host: c.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: api, port: {number: 8080}}}}
`))
	time.Sleep(2 * time.Second) // long enough for a served Ingress to be routed (see above)
	if _, body := get(nodes[0].http, "c.example.com", "/"); !strings.HasPrefix(body, "other ") {
		t.Errorf("c.example.com, of another controller's class, was routed: %q (want the default backend)", body)
	}
	if ing, err := s.Client.Ingresses("default").Get(context.Background(), "theirs"); err != nil || len(ing.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("another controller's Ingress got a status from minik8s: %+v (%v)", ing.Status, err)
	}

	// Deleted, its routes go.
	mustKubectl(t, s, `ingress.networking.k8s.io "web" deleted`, "delete", "ingress", "web")
	waitUntil(t, 30*time.Second, "the routes gone with the Ingress", func() bool {
		code, _ := get(nodes[1].http, "a.example.com", "/")
		return code == http.StatusNotFound
	})
}
