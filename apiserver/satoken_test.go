package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"minik8s/apiserver/auth"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// TestVerifyServiceAccountToken: what a token must carry to authenticate.
func TestVerifyServiceAccountToken(t *testing.T) {
	s := New(Config{}, etcdtest.Start(t))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s.creds = &credentials{saKey: key}
	ctx := context.Background()
	create := func(res api.Resource, ns string, obj api.Object) *api.ObjectMeta {
		t.Helper()
		out, err := s.registries[res.Name].Create(ctx, ns, obj)
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
	long := time.Now().Add(-2 * auth.Leeway)
	if _, err := s.registries[api.PodsResource.Name].Mutate(ctx, "default", "gone", func(o api.Object) (api.Object, error) {
		o.GetObjectMeta().DeletionTimestamp = &long
		return o, nil
	}); err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	good := func() auth.Claims {
		return auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: auth.Issuer, Subject: "system:serviceaccount:default:robot",
			Audience: jwt.ClaimStrings{auth.Issuer}, IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
			Kubernetes: auth.PrivateClaims{Namespace: "default", ServiceAccount: auth.ObjectRef{Name: "robot", UID: sa.UID}}}
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tc := range []struct {
		name  string
		edit  func(*auth.Claims)
		key   *ecdsa.PrivateKey
		valid bool
	}{
		{"as issued", func(*auth.Claims) {}, nil, true},
		{"the old audience", func(c *auth.Claims) { c.Audience = jwt.ClaimStrings{"minik8s"} }, nil, true},
		{"another audience among them", func(c *auth.Claims) { c.Audience = jwt.ClaimStrings{"vault", auth.Issuer} }, nil, true},
		{"another audience only", func(c *auth.Claims) { c.Audience = jwt.ClaimStrings{"https://vault.example"} }, nil, false},
		{"no audience", func(c *auth.Claims) { c.Audience = nil }, nil, false},
		{"no exp", func(c *auth.Claims) { c.ExpiresAt = nil }, nil, false},
		{"expired", func(c *auth.Claims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-2 * time.Minute)) }, nil, false},
		{"expired within the leeway", func(c *auth.Claims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-30 * time.Second)) }, nil, true},
		{"not valid yet", func(c *auth.Claims) { c.NotBefore = jwt.NewNumericDate(now.Add(5 * time.Minute)) }, nil, false},
		{"issued in the future", func(c *auth.Claims) { c.IssuedAt = jwt.NewNumericDate(now.Add(5 * time.Minute)) }, nil, false},
		{"another issuer", func(c *auth.Claims) { c.Issuer = "kubernetes/serviceaccount" }, nil, false},
		{"another key", func(*auth.Claims) {}, other, false},
		{"another account uid", func(c *auth.Claims) { c.Kubernetes.ServiceAccount.UID = "x" }, nil, false},
		{"an account that is not there", func(c *auth.Claims) { c.Kubernetes.ServiceAccount.Name = "nobody" }, nil, false},
		{"bound to its pod", func(c *auth.Claims) { c.Kubernetes.Pod = &auth.ObjectRef{Name: "p", UID: pod.UID} }, nil, true},
		{"bound to a pod of another uid", func(c *auth.Claims) { c.Kubernetes.Pod = &auth.ObjectRef{Name: "p", UID: "x"} }, nil, false},
		{"bound to a pod deleted long ago", func(c *auth.Claims) { c.Kubernetes.Pod = &auth.ObjectRef{Name: "gone", UID: gone.UID} }, nil, false},
		{"bound to its secret", func(c *auth.Claims) { c.Kubernetes.Secret = &auth.ObjectRef{Name: "s", UID: secret.UID} }, nil, true},
		{"bound to a secret not there", func(c *auth.Claims) { c.Kubernetes.Secret = &auth.ObjectRef{Name: "t", UID: "x"} }, nil, false},
		{"bound to a node not there", func(c *auth.Claims) { c.Kubernetes.Node = &auth.ObjectRef{Name: "n", UID: "x"} }, nil, false},
		{"a pod's token names its node", func(c *auth.Claims) {
			c.Kubernetes.Pod, c.Kubernetes.Node = &auth.ObjectRef{Name: "p", UID: pod.UID}, &auth.ObjectRef{Name: "n", UID: ""}
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
