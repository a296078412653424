package ingress

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	"minik8s/pkg/api"
)

// secretGetter reads one Secret (the node authorizer lets a node get those
// an Ingress of their namespace names for TLS, and no others).
type secretGetter interface {
	Secret(ctx context.Context, namespace, name string) (*api.Secret, error)
}

// certs are the TLS certificates of the served Ingresses by host: exact
// hosts, wildcards by the domain under "*.", and the first of an entry
// that names no host (it serves any host without a certificate of its own).
type certs struct {
	exact, wildcard map[string]*tls.Certificate
	anyHost         *tls.Certificate
}

// loaded is a Secret's certificate as parsed, kept by the Secret's
// resourceVersion so an unchanged Secret is not parsed again.
type loaded struct {
	version string
	cert    *tls.Certificate
	err     error
}

// loadCerts reads the Secrets the Ingresses name (oldest Ingress first: its
// certificate wins a host two name). A Secret that is missing or does not
// hold a key pair is left out, with the reason in problems.
func loadCerts(ctx context.Context, get secretGetter, ings []*api.Ingress, cache map[string]loaded) (c *certs, problems []string) {
	c = &certs{exact: map[string]*tls.Certificate{}, wildcard: map[string]*tls.Certificate{}}
	seen := map[string]bool{}
	for _, ing := range ings {
		for _, t := range ing.Spec.TLS {
			if t.SecretName == "" {
				continue
			}
			key := ing.Namespace + "/" + t.SecretName
			cert, err := loadCert(ctx, get, ing.Namespace, t.SecretName, cache)
			seen[key] = true
			if err != nil {
				problems = append(problems, fmt.Sprintf("ingress %s/%s: TLS secret %q: %v", ing.Namespace, ing.Name, t.SecretName, err))
				continue
			}
			if len(t.Hosts) == 0 && c.anyHost == nil {
				c.anyHost = cert
			}
			for _, h := range t.Hosts {
				h = strings.ToLower(h)
				m, name := c.exact, h
				if d, ok := strings.CutPrefix(h, "*."); ok {
					m, name = c.wildcard, d
				}
				if _, taken := m[name]; !taken {
					m[name] = cert
				}
			}
		}
	}
	for k := range cache {
		if !seen[k] {
			delete(cache, k)
		}
	}
	return c, problems
}

func loadCert(ctx context.Context, get secretGetter, ns, name string, cache map[string]loaded) (*tls.Certificate, error) {
	key := ns + "/" + name
	s, err := get.Secret(ctx, ns, name)
	if err != nil {
		delete(cache, key)
		return nil, err
	}
	if l, ok := cache[key]; ok && l.version == s.ResourceVersion {
		return l.cert, l.err
	}
	var cert *tls.Certificate
	pair, err := tls.X509KeyPair(s.Data[api.TLSCertKey], s.Data[api.TLSPrivateKeyKey])
	if err != nil {
		err = fmt.Errorf("no usable %s and %s: %v", api.TLSCertKey, api.TLSPrivateKeyKey, err)
	} else {
		cert = &pair
	}
	cache[key] = loaded{version: s.ResourceVersion, cert: cert, err: err}
	return cert, err
}

// forHost picks the certificate of a TLS client's server name: its own,
// a wildcard's, one for any host, else none (the caller's default).
func (c *certs) forHost(name string) *tls.Certificate {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if cert := c.exact[name]; cert != nil {
		return cert
	}
	if _, domain, ok := strings.Cut(name, "."); ok {
		if cert := c.wildcard[domain]; cert != nil {
			return cert
		}
	}
	return c.anyHost
}
