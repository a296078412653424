package ingress

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/pki"
)

// secrets is a fake secretGetter counting its reads.
type secrets map[string]*api.Secret

func (s secrets) Secret(_ context.Context, ns, name string) (*api.Secret, error) {
	if sec, ok := s[ns+"/"+name]; ok {
		return sec, nil
	}
	return nil, fmt.Errorf("secret %s/%s not found", ns, name)
}

func TestLoadCertsAndForHost(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), "test")
	if err != nil {
		t.Fatal(err)
	}
	secret := func(ns, name, cn string) *api.Secret {
		crt, key, err := ca.Issue(pki.CertSpec{CommonName: cn, DNSNames: []string{cn}, Server: true})
		if err != nil {
			t.Fatal(err)
		}
		return &api.Secret{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}, Type: api.SecretTypeTLS,
			Data: map[string][]byte{api.TLSCertKey: crt, api.TLSPrivateKeyKey: key}}
	}
	get := secrets{
		"a/exact":    secret("a", "exact", "a.example.com"),
		"a/wild":     secret("a", "wild", "*.w.example.com"),
		"b/taken":    secret("b", "taken", "b-takes-a.example.com"),
		"b/any":      secret("b", "any", "any"),
		"b/notapair": {ObjectMeta: api.ObjectMeta{Namespace: "b", Name: "notapair", ResourceVersion: "1"}, Data: map[string][]byte{api.TLSCertKey: []byte("x")}},
	}
	ings := []*api.Ingress{
		{ObjectMeta: api.ObjectMeta{Namespace: "a", Name: "old"}, Spec: api.IngressSpec{TLS: []api.IngressTLS{
			{Hosts: []string{"a.example.com"}, SecretName: "exact"}, {Hosts: []string{"*.w.example.com"}, SecretName: "wild"}}}},
		{ObjectMeta: api.ObjectMeta{Namespace: "b", Name: "new"}, Spec: api.IngressSpec{TLS: []api.IngressTLS{
			{Hosts: []string{"A.example.com"}, SecretName: "taken"}, {SecretName: "any"},
			{Hosts: []string{"x.example.com"}, SecretName: "missing"}, {Hosts: []string{"y.example.com"}, SecretName: "notapair"}}}},
	}
	cache := map[string]loaded{}
	c, problems := loadCerts(context.Background(), get, ings, cache)
	if len(problems) != 2 {
		t.Errorf("problems %q, want the missing Secret and the one without a key pair", problems)
	}
	cn := func(host string) string {
		cert := c.forHost(host)
		if cert == nil {
			return ""
		}
		return cert.Leaf.Subject.CommonName
	}
	for host, want := range map[string]string{
		"a.example.com":         "a.example.com", // the older Ingress's, not b's
		"A.EXAMPLE.COM.":        "a.example.com",
		"one.w.example.com":     "*.w.example.com",
		"w.example.com":         "any",
		"two.one.w.example.com": "any",
		"x.example.com":         "any",
	} {
		if got := cn(host); got != want {
			t.Errorf("certificate for %s: %q, want %q", host, got, want)
		}
	}
	if len(cache) != 5 {
		t.Errorf("%d Secrets parsed and kept, want 5", len(cache))
	}
	// A Secret no Ingress names any longer is forgotten.
	loadCerts(context.Background(), get, ings[:1], cache)
	if len(cache) != 2 {
		t.Errorf("after b's Ingress went, %d Secrets kept, want 2", len(cache))
	}
}
