// Package client is the Go client of the minik8s API: typed CRUD for every
// kind and watches that resume where they left off. Every component but the
// apiserver reaches cluster state only through it.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
)

// DefaultServer is where the apiserver listens unless told otherwise.
const DefaultServer = "http://127.0.0.1:8080"

// ServerFromEnv returns $MINIK8S_SERVER or DefaultServer.
func ServerFromEnv() string {
	if s := os.Getenv("MINIK8S_SERVER"); s != "" {
		return s
	}
	return DefaultServer
}

// Client talks to one apiserver.
type Client struct {
	base string
	// http serves ordinary requests; stream has no overall timeout, for
	// watches and followed logs.
	http   *http.Client
	stream *http.Client
	// ca is the cluster CA the client trusts (nil for plain HTTP).
	ca []byte
	// cert is the client's certificate, if it has one.
	cert *tls.Certificate
}

// CA is the CA (PEM) the client verifies the apiserver with, nil when it
// talks plain HTTP: components that serve the apiserver verify it with it.
func (c *Client) CA() []byte { return c.ca }

// Certificate is the client certificate the client presents, nil when it
// has none: a function runner presents it to the pods it specialises.
func (c *Client) Certificate() *tls.Certificate { return c.cert }

// New returns a client of the apiserver at server ("http://host:port";
// a bare "host:port" is taken as http), without credentials: for the
// local port, which acts as the admin.
func New(server string) *Client {
	c, err := NewForConfig(Config{Server: server})
	if err != nil {
		panic(err) // a config without TLS material cannot fail
	}
	return c
}

// Config says how to reach an apiserver and who to be there.
type Config struct {
	// Server is the apiserver's URL.
	Server string
	// CAData (PEM) verifies an https server; without it, the system's roots.
	CAData []byte
	// CertData and KeyData (PEM): a client certificate.
	CertData, KeyData []byte
	// Token: a bearer token.
	Token string
	// UserAgent names the client to the server, which records the fields
	// it writes under the name's first word (metadata.managedFields);
	// the program's name when empty, as client-go does.
	UserAgent string
}

// NewForConfig returns a client of the apiserver cfg names, with its
// credentials.
func NewForConfig(cfg Config) (*Client, error) {
	server := cfg.Server
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	transport := &http.Transport{
		Proxy:               nil, // cluster traffic never goes through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   false,
	}
	var cert *tls.Certificate
	if len(cfg.CAData) > 0 || len(cfg.CertData) > 0 {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if len(cfg.CAData) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(cfg.CAData) {
				return nil, errdefs.BadRequest("certificate-authority-data", "no PEM certificate in the CA data")
			}
			tc.RootCAs = pool
		}
		if len(cfg.CertData) > 0 || len(cfg.KeyData) > 0 {
			pair, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
			if err != nil {
				return nil, errdefs.BadRequest("client-certificate-data", "the client certificate and key: %v", err)
			}
			tc.Certificates = []tls.Certificate{pair}
			cert = &pair
		}
		transport.TLSClientConfig = tc
	}
	agent := cfg.UserAgent
	if agent == "" {
		agent = filepath.Base(os.Args[0]) + "/minik8s"
	}
	rt := headers{agent: agent, token: cfg.Token, next: transport}
	return &Client{
		base:   strings.TrimRight(server, "/"),
		http:   &http.Client{Transport: rt, Timeout: 60 * time.Second},
		stream: &http.Client{Transport: rt},
		ca:     cfg.CAData,
		cert:   cert,
	}, nil
}

// headers adds the user agent (unless the request has its own) and the
// bearer token, when there is one, to every request.
type headers struct {
	agent, token string
	next         http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", h.agent)
	}
	if h.token != "" {
		r.Header.Set("Authorization", "Bearer "+h.token)
	}
	return h.next.RoundTrip(r)
}

// Server is the base URL of the apiserver.
func (c *Client) Server() string { return c.base }

// Do sends in (JSON-encoded unless it is []byte or json.RawMessage) to path
// and decodes the answer into out (when out is not nil). Error answers come
// back as errors of the errdefs classes.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, c.http, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading answer: %w", method, path, errdefs.ErrUnavailable)
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decoding answer: %w", method, path, err)
	}
	return nil
}

// maxRetries429 bounds how often a request the server sheds (429) is sent
// again, after the Retry-After it names (as client-go does).
const maxRetries429 = 10

// send performs a request and returns the response of a 2xx answer.
func (c *Client) send(ctx context.Context, hc *http.Client, method, path string, in any) (*http.Response, error) {
	var data []byte
	contentType := "application/json"
	switch v := in.(type) {
	case nil:
	case []byte:
		data = v
		contentType = "application/octet-stream"
	case json.RawMessage:
		data = v
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("encoding request: %w", err)
		}
	}
	for attempt := 0; ; attempt++ {
		var body io.Reader
		if in != nil {
			body = bytes.NewReader(data)
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
		if err != nil {
			return nil, errdefs.BadRequest("", "building request: %v", err)
		}
		if body != nil {
			req.Header.Set("Content-Type", contentType)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
			}
			return nil, fmt.Errorf("%s %s: %w: %v", method, c.base+path, errdefs.ErrUnavailable, err)
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		if d, ok := retryAfter(resp); ok && attempt < maxRetries429 {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if !wait.Sleep(ctx, d) {
				return nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
			}
			continue
		}
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
}

// retryAfter says whether an answer asks to be sent again later (429 with
// Retry-After in seconds), and when.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 0 {
		return 0, false
	}
	return min(time.Duration(secs)*time.Second, 10*time.Second), true
}

func decodeError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var st api.Status
	if err := json.Unmarshal(data, &st); err != nil || st.Error == "" {
		msg := strings.TrimSpace(string(data))
		if msg == "" {
			msg = resp.Status
		}
		return errdefs.FromHTTP(resp.StatusCode, "", "", msg)
	}
	return errdefs.FromHTTP(resp.StatusCode, st.Reason, st.Field, st.Error)
}

// ListOptions narrow lists and watches.
type ListOptions struct {
	LabelSelector string
	FieldSelector string
	// ResourceVersion: for Watch, the version after which to start ("" lists first).
	ResourceVersion string
}

func (o ListOptions) query(watch bool) string {
	q := url.Values{}
	if o.LabelSelector != "" {
		q.Set("labelSelector", o.LabelSelector)
	}
	if o.FieldSelector != "" {
		q.Set("fieldSelector", o.FieldSelector)
	}
	if watch {
		q.Set("watch", "true")
		if o.ResourceVersion != "" {
			q.Set("resourceVersion", o.ResourceVersion)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// Healthy reports whether the apiserver answers /healthz.
func (c *Client) Healthy(ctx context.Context) error {
	return c.Do(ctx, http.MethodGet, "/healthz", nil, nil)
}
