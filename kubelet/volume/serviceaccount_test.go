package volume

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// fakeTokens answers token requests with tokenErr or a token "tok-N"
// living ttl; caErr (ErrNotFound) plays an apiserver without a secure port.
type fakeTokens struct {
	caErr    error
	tokenErr error
	ttl      time.Duration
	accounts map[string]bool // namespace/name
	asked    []*api.TokenRequest
	askedFor []string
}

func (f *fakeTokens) ClusterCA(context.Context) ([]byte, error) {
	if f.caErr != nil {
		return nil, f.caErr
	}
	return []byte("CA PEM"), nil
}

func (f *fakeTokens) CreateToken(_ context.Context, ns, sa string, req *api.TokenRequest) (*api.TokenRequest, error) {
	f.asked = append(f.asked, req)
	f.askedFor = append(f.askedFor, ns+"/"+sa)
	if f.tokenErr != nil {
		return nil, f.tokenErr
	}
	out := *req
	out.Status.Token = "tok-" + string(rune('0'+len(f.asked)))
	out.Status.ExpirationTimestamp = time.Now().Add(f.ttl)
	return &out, nil
}

func (f *fakeTokens) GetServiceAccount(_ context.Context, ns, name string) (*api.ServiceAccount, error) {
	if f.accounts[ns+"/"+name] {
		return &api.ServiceAccount{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns}}, nil
	}
	return nil, errdefs.ErrNotFound
}

func saPod(account string) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}, Spec: api.PodSpec{ServiceAccountName: account}}
}

func TestServiceAccountToken(t *testing.T) {
	podDir := t.TempDir()
	src := &fakeTokens{ttl: time.Hour}
	start := time.Now()
	tok, err := ServiceAccountToken(context.Background(), saPod(""), podDir, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(src.asked) != 1 || src.askedFor[0] != "ns/default" {
		t.Fatalf("asked %v", src.askedFor)
	}
	req := src.asked[0].Spec
	if b := req.BoundObjectRef; b == nil || *b != (api.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "uid-1"}) {
		t.Errorf("bound to %+v", req.BoundObjectRef)
	}
	if req.ExpirationSeconds == nil || *req.ExpirationSeconds != 3600 {
		t.Errorf("expirationSeconds %v", req.ExpirationSeconds)
	}
	if want := filepath.Join(Dir(podDir), "kube-api-access"); tok.Dir != want {
		t.Errorf("dir %s, want %s", tok.Dir, want)
	}
	for name, want := range map[string]string{"token": "tok-1", "ca.crt": "CA PEM", "namespace": "ns"} {
		if data, err := os.ReadFile(filepath.Join(tok.Dir, name)); err != nil || string(data) != want {
			t.Errorf("%s = %q, %v; want %q", name, data, err, want)
		}
	}
	if d := tok.RefreshAt.Sub(start); d < 47*time.Minute || d > 49*time.Minute {
		t.Errorf("refresh in %s, want 80%% of an hour", d)
	}
	// A refresh rewrites the token in the same dir.
	if _, err := ServiceAccountToken(context.Background(), saPod(""), podDir, src); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(tok.Dir, "token")); string(data) != "tok-2" {
		t.Errorf("token after refresh = %q", data)
	}
}

func TestServiceAccountTokenFailures(t *testing.T) {
	internal := errdefs.FromHTTP(http.StatusInternalServerError, "", "", "500 Internal Server Error")
	tests := []struct {
		name    string
		account string
		src     fakeTokens
		noToken bool   // the pod runs without a token
		class   error  // else the error's class
		msg     string // and what it says
	}{
		{"no secure port, default", "", fakeTokens{caErr: errdefs.ErrNotFound}, true, nil, "no secure port"},
		{"no secure port, named and there", "robot", fakeTokens{caErr: errdefs.ErrNotFound, accounts: map[string]bool{"ns/robot": true}}, true, nil, ""},
		{"no secure port, named and missing", "robot", fakeTokens{caErr: errdefs.ErrNotFound}, false, errdefs.ErrNotFound, `service account "robot" of pod ns/p not found`},
		{"default account missing", "default", fakeTokens{tokenErr: errdefs.ErrNotFound}, true, nil, ""},
		{"cannot sign", "", fakeTokens{tokenErr: internal}, true, nil, "500"},
		{"named account missing", "robot", fakeTokens{tokenErr: errdefs.ErrNotFound}, false, errdefs.ErrNotFound, `service account "robot" of pod ns/p not found`},
		{"named account forbidden", "robot", fakeTokens{tokenErr: errdefs.ErrForbidden}, false, errdefs.ErrForbidden, `"robot"`},
		{"apiserver down", "", fakeTokens{tokenErr: errdefs.ErrUnavailable}, false, errdefs.ErrUnavailable, ""},
		{"CA unreadable", "", fakeTokens{caErr: errdefs.ErrUnavailable}, false, errdefs.ErrUnavailable, "cluster CA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := ServiceAccountToken(context.Background(), saPod(tt.account), t.TempDir(), &tt.src)
			if tok != nil || err == nil {
				t.Fatalf("token %+v, err %v", tok, err)
			}
			if errors.Is(err, ErrNoToken) != tt.noToken {
				t.Errorf("err %v: ErrNoToken %v, want %v", err, !tt.noToken, tt.noToken)
			}
			if tt.class != nil && !errors.Is(err, tt.class) {
				t.Errorf("err %v is not %v", err, tt.class)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err %q lacks %q", err, tt.msg)
			}
		})
	}
}
