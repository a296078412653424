package test

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"minik8s/pkg/api"
	"minik8s/pkg/pki"
	"minik8s/test/framework"
)

// tokenPayload is a token's claims, read without checking them.
type tokenPayload struct {
	Aud []string `json:"aud"`
	Exp int64    `json:"exp"`
	Iat int64    `json:"iat"`
	Nbf int64    `json:"nbf"`
	Jti string   `json:"jti"`
	K   struct {
		Pod    *struct{ Name string } `json:"pod"`
		Secret *struct{ Name string } `json:"secret"`
	} `json:"kubernetes.io"`
}

func readToken(t *testing.T, token string) tokenPayload {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var p tokenPayload
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServiceAccountTokenRules: TokenRequest and the tokens it gives follow
// Kubernetes: a token names the audiences asked for and authenticates at
// the apiserver only when one is its own; expirationSeconds under 10
// minutes (negative too) or over 2^32 is 422, over the maximum (48 h) is
// cut to it with a warning; a bound object must be a Pod of the account
// (400 otherwise), a Secret or a Node of the UID named (409 otherwise), and
// its token ends with it; a token without exp is refused even when signed
// with the apiserver's key.
func TestServiceAccountTokenRules(t *testing.T) {
	s := framework.StartSecureAPIServer(t, secureTokens)
	for path, body := range map[string]string{
		"/api/v1/namespaces/default/serviceaccounts": `{"metadata":{"name":"robot"}}`,
		"/api/v1/namespaces/default/secrets":         `{"metadata":{"name":"s"}}`,
		"/api/v1/namespaces/default/pods": `{"metadata":{"name":"p"},"spec":{"serviceAccountName":"robot",` +
			`"containers":[{"name":"c","image":"i"}]}}`,
	} {
		if code, data := httpDo(t, "POST", s.URL+path, "application/json", []byte(body)); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", path, code, data)
		}
	}
	if code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/pods", "application/json",
		[]byte(`{"metadata":{"name":"other"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)); code != http.StatusCreated {
		t.Fatalf("pod: %d %s", code, data)
	}
	ask := func(body string) (int, api.TokenRequest, http.Header, string) {
		t.Helper()
		resp, err := http.Post(s.URL+"/api/v1/namespaces/default/serviceaccounts/robot/token", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var tr api.TokenRequest
		_ = json.Unmarshal(data, &tr)
		return resp.StatusCode, tr, resp.Header, string(data)
	}
	issue := func(body string) (api.TokenRequest, http.Header) {
		t.Helper()
		code, tr, h, data := ask(body)
		if code != http.StatusCreated {
			t.Fatalf("token %s: %d %s", body, code, data)
		}
		return tr, h
	}
	// authenticates says whether the apiserver takes the token (403 for a
	// service account without roles; 401 when the token does not hold).
	authenticates := func(token string) bool {
		t.Helper()
		code, data := newCaller(t, s, token).do("GET", "/api/v1/namespaces/default/secrets", "")
		switch code {
		case http.StatusForbidden:
			if !strings.Contains(string(data), `User \"system:serviceaccount:default:robot\"`) {
				t.Errorf("403 for another user: %s", data)
			}
			return true
		case http.StatusUnauthorized:
			return false
		}
		t.Fatalf("GET with a token: %d %s", code, data)
		return false
	}
	apiAudiences := []string{"https://kubernetes.default.svc.cluster.local", "minik8s"}

	t.Run("audiences", func(t *testing.T) {
		tr, _ := issue(`{"spec":{"audiences":["https://vault.example"]}}`)
		if p := readToken(t, tr.Status.Token); !slices.Equal(p.Aud, []string{"https://vault.example"}) {
			t.Errorf("aud %v, want the audience asked for", p.Aud)
		}
		if authenticates(tr.Status.Token) {
			t.Error("a token for another audience authenticates at the apiserver")
		}
		tr, _ = issue(`{}`)
		p := readToken(t, tr.Status.Token)
		if !slices.Equal(p.Aud, apiAudiences) || !slices.Equal(tr.Spec.Audiences, apiAudiences) {
			t.Errorf("a token asked without audiences: aud %v, spec %v, want the apiserver's %v", p.Aud, tr.Spec.Audiences, apiAudiences)
		}
		if p.Exp-p.Iat != 3600 || p.Nbf != p.Iat || p.Jti == "" || tr.Spec.ExpirationSeconds == nil || *tr.Spec.ExpirationSeconds != 3600 {
			t.Errorf("default token: %+v, spec %+v", p, tr.Spec)
		}
		if !authenticates(tr.Status.Token) {
			t.Error("the apiserver's own token does not authenticate")
		}
	})

	t.Run("expiration", func(t *testing.T) {
		for _, tc := range []struct{ exp, says string }{
			{"9223372036854775807", "may not specify a duration larger than 2^32 seconds"},
			{"4294967297", "may not specify a duration larger than 2^32 seconds"},
			{"-5", "may not specify a duration less than 10 minutes"},
			{"599", "may not specify a duration less than 10 minutes"},
		} {
			code, _, _, data := ask(`{"spec":{"expirationSeconds":` + tc.exp + `}}`)
			if code != http.StatusUnprocessableEntity || !strings.Contains(data, "spec.expirationSeconds") || !strings.Contains(data, tc.says) {
				t.Errorf("expirationSeconds %s: %d %s", tc.exp, code, data)
			}
		}
		tr, h := issue(`{"spec":{"expirationSeconds":4294967296}}`)
		p := readToken(t, tr.Status.Token)
		if p.Exp-p.Iat != 48*3600 || *tr.Spec.ExpirationSeconds != 48*3600 ||
			!strings.Contains(h.Get("Warning"), "requested expiration of 4294967296 seconds shortened to 172800 seconds") {
			t.Errorf("2^32 s: lifetime %d, spec %d, warning %q; want cut to 48 h", p.Exp-p.Iat, *tr.Spec.ExpirationSeconds, h.Get("Warning"))
		}
		if got := tr.Status.ExpirationTimestamp.Unix(); got != p.Exp {
			t.Errorf("expirationTimestamp %d, token exp %d", got, p.Exp)
		}
		tr, _ = issue(`{"spec":{"expirationSeconds":600}}`)
		if p := readToken(t, tr.Status.Token); p.Exp-p.Iat != 600 {
			t.Errorf("10 minutes asked, %d s given", p.Exp-p.Iat)
		}
	})

	t.Run("bound objects", func(t *testing.T) {
		for _, tc := range []struct {
			ref  string
			code int
			says string
		}{
			{`{"kind":"ConfigMap","apiVersion":"v1","name":"x"}`, http.StatusBadRequest, "cannot bind token to object of type /v1, Kind=ConfigMap"},
			{`{"kind":"Pod","apiVersion":"apps/v1","name":"p"}`, http.StatusBadRequest, "cannot bind token to object of type apps/v1, Kind=Pod"},
			{`{"kind":"Pod","apiVersion":"v1","name":"other"}`, http.StatusBadRequest, "to pod running with different serviceaccount name"},
			{`{"kind":"Pod","apiVersion":"v1","name":"p","uid":"not-its-uid"}`, http.StatusConflict, "does not match the UID in record"},
			{`{"kind":"Pod","apiVersion":"v1","name":"none"}`, http.StatusNotFound, "none"},
		} {
			if code, _, _, data := ask(`{"spec":{"boundObjectRef":` + tc.ref + `}}`); code != tc.code || !strings.Contains(data, tc.says) {
				t.Errorf("bound to %s: %d %s, want %d saying %q", tc.ref, code, data, tc.code, tc.says)
			}
		}
		if code, _, _, data := ask(`{"metadata":{"name":"someone-else"}}`); code != http.StatusUnprocessableEntity {
			t.Errorf("a request naming another account: %d %s", code, data)
		}
		pod, _ := issue(`{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p"}}}`)
		secret, _ := issue(`{"spec":{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s"}}}`)
		if p := readToken(t, pod.Status.Token); p.K.Pod == nil || p.K.Pod.Name != "p" {
			t.Errorf("the pod's token names %+v", p.K)
		}
		if p := readToken(t, secret.Status.Token); p.K.Secret == nil || p.K.Secret.Name != "s" {
			t.Errorf("the secret's token names %+v", p.K)
		}
		for name, tr := range map[string]api.TokenRequest{"pods/p": pod, "secrets/s": secret} {
			if !authenticates(tr.Status.Token) {
				t.Fatalf("the token bound to %s does not authenticate", name)
			}
			if code, data := httpDo(t, "DELETE", s.URL+"/api/v1/namespaces/default/"+name, "", nil); code != http.StatusOK {
				t.Fatalf("DELETE %s: %d %s", name, code, data)
			}
			if authenticates(tr.Status.Token) {
				t.Errorf("the token bound to %s outlives it", name)
			}
		}
	})

	t.Run("no exp, no entry", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(s.DataDir, "pki", "sa.key"))
		if err != nil {
			t.Fatal(err)
		}
		k, err := pki.ParseKey(data)
		if err != nil {
			t.Fatal(err)
		}
		tr, _ := issue(`{}`)
		sign := func(drop string) string {
			parts := strings.Split(tr.Status.Token, ".")
			payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var claims jwt.MapClaims
			_ = json.NewDecoder(bytes.NewReader(payload)).Decode(&claims)
			delete(claims, drop)
			token, err := jwt.NewWithClaims(jwt.SigningMethodES256, claims).SignedString(k.(*ecdsa.PrivateKey))
			if err != nil {
				t.Fatal(err)
			}
			return token
		}
		if !authenticates(sign("")) {
			t.Fatal("the token re-signed with the apiserver's key does not authenticate: the test proves nothing")
		}
		if authenticates(sign("exp")) {
			t.Error("a token without exp authenticates")
		}
	})
}
