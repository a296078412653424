package apiserver

import (
	"encoding/base64"
	"net/http"
	"slices"
	"testing"
)

func TestWebsocketBearerToken(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString([]byte("alice-token"))
	tests := []struct {
		name      string
		upgrade   bool
		protocols []string
		token     string
		found     bool
		chosen    string
	}{
		{"no websocket", false, []string{bearerProtocolPrefix + enc, "watch"}, "", false, "watch"},
		{"token then protocol", true, []string{bearerProtocolPrefix + enc + ", watch.minik8s.io"}, "alice-token", true, "watch.minik8s.io"},
		{"two headers", true, []string{"watch.minik8s.io", bearerProtocolPrefix + enc}, "alice-token", true, "watch.minik8s.io"},
		{"padded", true, []string{bearerProtocolPrefix + base64.URLEncoding.EncodeToString([]byte("ab"))}, "ab", true, ""},
		{"not base64url", true, []string{bearerProtocolPrefix + "a+b/"}, "", true, ""},
		{"no token", true, []string{"watch.minik8s.io"}, "", false, "watch.minik8s.io"},
		{"nothing offered", true, nil, "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/api/v1/pods?watch=true", nil)
			if tt.upgrade {
				r.Header.Set("Connection", "Upgrade")
				r.Header.Set("Upgrade", "websocket")
			}
			for _, p := range tt.protocols {
				r.Header.Add("Sec-WebSocket-Protocol", p)
			}
			token, found := websocketBearerToken(r)
			if token != tt.token || found != tt.found {
				t.Errorf("websocketBearerToken = %q, %v; want %q, %v", token, found, tt.token, tt.found)
			}
			if got := watchSubprotocol(r); got != tt.chosen {
				t.Errorf("watchSubprotocol = %q, want %q", got, tt.chosen)
			}
		})
	}
}

func TestDropWebsocketToken(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"token and protocol", []string{bearerProtocolPrefix + "YWJj, watch.minik8s.io"}, []string{"watch.minik8s.io"}},
		{"two headers", []string{"v5.channel.k8s.io", bearerProtocolPrefix + "YWJj"}, []string{"v5.channel.k8s.io"}},
		{"token only", []string{bearerProtocolPrefix + "YWJj"}, nil},
		{"no token: untouched", []string{"a", "b"}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.in {
				h.Add("Sec-WebSocket-Protocol", v)
			}
			dropWebsocketToken(h)
			if got := h.Values("Sec-WebSocket-Protocol"); !slices.Equal(got, tt.want) {
				t.Errorf("left %q, want %q", got, tt.want)
			}
		})
	}
}
