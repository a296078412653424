package apiserver

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/errdefs"
	"minik8s/pkg/pki"
	"minik8s/pkg/rbac"
)

// Who a request comes from. On the secure port: a client certificate
// signed by the cluster CA (CommonName the user, Organization the
// groups), a bearer token of the static token file, a service account's
// token, or the node join token (which may only fetch a node's
// credentials). On the local port: the admin, as kubectl proxy acts.

// localPortKey marks a connection accepted on the local port.
type localPortKey struct{}

// The identity of requests on the local port.
var localAdmin = rbac.User{Name: "system:admin", Groups: []string{rbac.Masters, rbac.AllAuthenticated}}

// The user the join token stands for.
var bootstrapUser = rbac.User{Name: "system:bootstrap:node", Groups: []string{rbac.BootstrappersGroup, rbac.AllAuthenticated}}

// authenticate says who sent r; an error (401) for credentials that do
// not hold. A request without any is anonymous: authorization decides.
func (s *Server) authenticate(r *http.Request) (rbac.User, error) {
	if fromLocalPort(r) {
		return localAdmin, nil
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		if cert.Subject.CommonName == "" {
			return rbac.User{}, fmt.Errorf("the client certificate names no user: %w", errdefs.ErrUnauthorized)
		}
		groups := append(append([]string{}, cert.Subject.Organization...), rbac.AllAuthenticated)
		return rbac.User{Name: cert.Subject.CommonName, Groups: groups}, nil
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		token, found := websocketBearerToken(r)
		if !found {
			return rbac.AnonymousUser, nil
		}
		auth = "Bearer " + token
	}
	token, ok := strings.CutPrefix(auth, "Bearer ")
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		return rbac.User{}, fmt.Errorf("the Authorization header is not a bearer token: %w", errdefs.ErrUnauthorized)
	}
	if u, ok := s.tokens[token]; ok {
		return u, nil
	}
	if s.creds != nil {
		if _, secret := pki.ParseNodeToken(token); subtle.ConstantTimeCompare([]byte(secret), []byte(s.creds.nodeToken)) == 1 {
			return bootstrapUser, nil
		}
		if u, err := s.verifyServiceAccountToken(r.Context(), token); err == nil {
			return u, nil
		}
	}
	return rbac.User{}, fmt.Errorf("the bearer token is not valid: %w", errdefs.ErrUnauthorized)
}

// anonymousPath: paths served without credentials: the CA a joining node
// checks against its token's hash, and the dashboard's files, which hold no
// data (the page signs in to read any).
func anonymousPath(p string) bool {
	return p == "/cacerts" || p == uiRoot || strings.HasPrefix(p, uiRoot+"/")
}

// authn sets the request's user, refusing credentials that do not hold
// and (but for anonymousPath) requests without any: 401.
func (s *Server) authn() gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := localRequestAllowed(c.Request); err != nil {
			fail(c, err)
			return
		}
		u, err := s.authenticate(c.Request)
		if err == nil && u.Name == rbac.AnonymousUser.Name && !anonymousPath(c.Request.URL.Path) {
			err = fmt.Errorf("no credentials: send a bearer token or a client certificate of the cluster CA "+
				"(the admin's are in DATA/%s): %w", AdminKubeconfig, errdefs.ErrUnauthorized)
		}
		if err != nil {
			c.Header("WWW-Authenticate", `Bearer realm="minik8s"`)
			fail(c, err)
			return
		}
		// The token has done its work: nothing after this (a proxied
		// exec's kubelet) gets it, as Kubernetes strips it too.
		dropWebsocketToken(c.Request.Header)
		c.Request = c.Request.WithContext(rbac.WithUser(c.Request.Context(), u))
		c.Next()
	}
}

// localRequestAllowed refuses, on the local port, what a web page of
// another site can make a browser send: the port acts as the admin
// without credentials, a browser sends a page's simple requests (a POST
// of text) to any address without asking, and it lets a page whose name
// resolves to 127.0.0.1 (DNS rebinding) read the answers. Programs send
// no Origin and name the address they dial.
func localRequestAllowed(r *http.Request) error {
	if !fromLocalPort(r) {
		return nil
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	host = strings.Trim(host, "[]")
	if ip := net.ParseIP(host); host != "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("the local port answers only requests for a loopback address, not %q "+
			"(a web page reaching it through a name of its own?): %w", host, errdefs.ErrForbidden)
	}
	if !sameOrigin(r) {
		return fmt.Errorf("the local port acts as the admin: it refuses requests of web pages from other origins (%s): %w",
			r.Header.Get("Origin"), errdefs.ErrForbidden)
	}
	return nil
}

// caCerts serves the cluster CA (PEM) to anyone: a joining node fetches it
// and checks it against the hash its token carries before trusting it.
func (s *Server) caCerts(c *gin.Context) {
	if s.creds == nil {
		fail(c, fmt.Errorf("this apiserver serves no secure port: %w", errdefs.ErrNotFound))
		return
	}
	c.Data(http.StatusOK, "application/x-pem-file", s.creds.ca.CertPEM)
}

// fromLocalPort says whether r came in on the local port.
func fromLocalPort(r *http.Request) bool {
	local, _ := r.Context().Value(localPortKey{}).(bool)
	return local
}

// markLocal marks the connections of the local port.
func markLocal(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, localPortKey{}, true)
}
