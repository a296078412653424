package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"math"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// TestTokenExpirationBounds: Kubernetes' ValidateTokenRequest bounds.
func TestTokenExpirationBounds(t *testing.T) {
	for _, tc := range []struct {
		exp   int64
		valid bool
	}{
		{-5, false}, {0, false}, {599, false}, {600, true}, {3600, true}, {maxTokenSeconds + 1, true},
		{1 << 32, true}, {1<<32 + 1, false}, {math.MaxInt64, false}, {math.MinInt64, false},
	} {
		err := validTokenExpiration(tc.exp)
		if tc.valid != (err == nil) || (err != nil && !errdefs.IsInvalid(err)) {
			t.Errorf("expirationSeconds %d: %v, want valid %v (else 422)", tc.exp, err, tc.valid)
		}
	}
}

// TestVerifyServiceAccountToken: what a token must carry to authenticate.
func TestVerifyServiceAccountToken(t *testing.T) {
	s := New(Config{}, testStore(t))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s.creds = &credentials{saKey: key}
	ctx := context.Background()
	create := func(res api.Resource, ns string, obj api.Object) *api.ObjectMeta {
		t.Helper()
		out, err := s.registries[res.Name].create(ctx, ns, obj)
		if err != nil {
			t.Fatal(err)
		}
		return out.GetObjectMeta()
	}
	create(api.NamespacesResource, "", &api.Namespace{ObjectMeta: api.ObjectMeta{Name: "default"}})
	sa := create(api.ServiceAccountsResource, "default", &api.ServiceAccount{ObjectMeta: api.ObjectMeta{Name: "robot"}})
	secret := create(api.SecretsResource, "default", &api.Secret{ObjectMeta: api.ObjectMeta{Name: "s"}})
	pod := create(api.PodsResource, "default", &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p"},
		Spec: api.PodSpec{ServiceAccountName: "robot", Containers: []api.Container{{Name: "c", Image: "i"}}}})
	// A pod being deleted for longer than the leeway no longer carries its tokens.
	gone := create(api.PodsResource, "default", &api.Pod{ObjectMeta: api.ObjectMeta{Name: "gone"},
		Spec: api.PodSpec{ServiceAccountName: "robot", Containers: []api.Container{{Name: "c", Image: "i"}}}})
	long := time.Now().Add(-2 * tokenLeeway)
	if _, err := s.registries[api.PodsResource.Name].mutate(ctx, "default", "gone", func(o api.Object) (api.Object, error) {
		o.GetObjectMeta().DeletionTimestamp = &long
		return o, nil
	}); err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	good := func() saClaims {
		return saClaims{RegisteredClaims: jwt.RegisteredClaims{Issuer: saIssuer, Subject: "system:serviceaccount:default:robot",
			Audience: jwt.ClaimStrings{saIssuer}, IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
			Kubernetes: saPrivateClaims{Namespace: "default", ServiceAccount: objectRef{"robot", sa.UID}}}
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tc := range []struct {
		name  string
		edit  func(*saClaims)
		key   *ecdsa.PrivateKey
		valid bool
	}{
		{"as issued", func(*saClaims) {}, nil, true},
		{"the old audience", func(c *saClaims) { c.Audience = jwt.ClaimStrings{"minik8s"} }, nil, true},
		{"another audience among them", func(c *saClaims) { c.Audience = jwt.ClaimStrings{"vault", saIssuer} }, nil, true},
		{"another audience only", func(c *saClaims) { c.Audience = jwt.ClaimStrings{"https://vault.example"} }, nil, false},
		{"no audience", func(c *saClaims) { c.Audience = nil }, nil, false},
		{"no exp", func(c *saClaims) { c.ExpiresAt = nil }, nil, false},
		{"expired", func(c *saClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-2 * time.Minute)) }, nil, false},
		{"expired within the leeway", func(c *saClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-30 * time.Second)) }, nil, true},
		{"not valid yet", func(c *saClaims) { c.NotBefore = jwt.NewNumericDate(now.Add(5 * time.Minute)) }, nil, false},
		{"issued in the future", func(c *saClaims) { c.IssuedAt = jwt.NewNumericDate(now.Add(5 * time.Minute)) }, nil, false},
		{"another issuer", func(c *saClaims) { c.Issuer = "kubernetes/serviceaccount" }, nil, false},
		{"another key", func(*saClaims) {}, other, false},
		{"another account uid", func(c *saClaims) { c.Kubernetes.ServiceAccount.UID = "x" }, nil, false},
		{"an account that is not there", func(c *saClaims) { c.Kubernetes.ServiceAccount.Name = "nobody" }, nil, false},
		{"bound to its pod", func(c *saClaims) { c.Kubernetes.Pod = &objectRef{"p", pod.UID} }, nil, true},
		{"bound to a pod of another uid", func(c *saClaims) { c.Kubernetes.Pod = &objectRef{"p", "x"} }, nil, false},
		{"bound to a pod deleted long ago", func(c *saClaims) { c.Kubernetes.Pod = &objectRef{"gone", gone.UID} }, nil, false},
		{"bound to its secret", func(c *saClaims) { c.Kubernetes.Secret = &objectRef{"s", secret.UID} }, nil, true},
		{"bound to a secret not there", func(c *saClaims) { c.Kubernetes.Secret = &objectRef{"t", "x"} }, nil, false},
		{"bound to a node not there", func(c *saClaims) { c.Kubernetes.Node = &objectRef{"n", "x"} }, nil, false},
		{"a pod's token names its node", func(c *saClaims) {
			c.Kubernetes.Pod, c.Kubernetes.Node = &objectRef{"p", pod.UID}, &objectRef{"n", ""}
		}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.edit(&c)
			k := tc.key
			if k == nil {
				k = key
			}
			token, err := jwt.NewWithClaims(jwt.SigningMethodES256, c).SignedString(k)
			if err != nil {
				t.Fatal(err)
			}
			u, err := s.verifyServiceAccountToken(ctx, token)
			switch {
			case tc.valid && (err != nil || u.Name != "system:serviceaccount:default:robot"):
				t.Errorf("refused: %v (%+v)", err, u)
			case !tc.valid && !errdefs.IsUnauthorized(err):
				t.Errorf("authenticated as %+v (%v)", u, err)
			}
		})
	}
}
