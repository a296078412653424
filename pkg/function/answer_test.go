package function

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWriteResult(t *testing.T) {
	for _, tc := range []struct {
		name, result, typ string
		foreign           bool
		code              int
		header            map[string]string
		body              string
	}{
		{"text (its type sniffed by the server)", "hello", "", false, 200, map[string]string{"Content-Type": ""}, "hello"},
		{"json", `{"a": 1}`, ResultJSON, false, 200, map[string]string{"Content-Type": "application/json"}, `{"a": 1}`},
		{"an HTTP answer", `{"statusCode": 201, "headers": {"X-A": "b", "Content-Length": "99"}, "body": "made"}`, ResultHTTP, false, 201,
			map[string]string{"X-A": "b", "Content-Length": ""}, "made"},
		{"a JSON body", `{"statusCode": 200, "body": {"ok": true}}`, ResultHTTP, false, 200, map[string]string{"Content-Type": "application/json"}, `{"ok": true}`},
		{"base64", `{"statusCode": 200, "body": "/w==", "isBase64Encoded": true}`, ResultHTTP, false, 200, nil, "\xff"},
		{"multi-value headers", `{"statusCode": 204, "multiValueHeaders": {"X-M": ["1", "2"]}}`, ResultHTTP, false, 204, map[string]string{"X-M": "1"}, ""},
		{"on a foreign origin", `{"statusCode": 200, "headers": {"Set-Cookie": "a=b", "Access-Control-Allow-Origin": "*"}, "body": "<p>"}`, ResultHTTP, true, 200,
			map[string]string{"Set-Cookie": "", "Access-Control-Allow-Origin": "", "Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"}, "<p>"},
		{"statusCode out of range", `{"statusCode": 42}`, ResultHTTP, false, 502, nil, "not between 100 and 599"},
		{"a header split", `{"statusCode": 200, "headers": {"X": "a\r\nSet-Cookie: x=y"}}`, ResultHTTP, false, 502, nil, `invalid header \"X\"`},
		{"bad base64", `{"statusCode": 200, "body": "!", "isBase64Encoded": true}`, ResultHTTP, false, 502, nil, "not base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			WriteResult(w, tc.result, tc.typ, tc.foreign)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.body) || (tc.code < 300 && w.Body.String() != tc.body) {
				t.Errorf("%d %q, want %d %q", w.Code, w.Body.String(), tc.code, tc.body)
			}
			for k, v := range tc.header {
				if got := w.Header().Get(k); got != v {
					t.Errorf("header %s: %q, want %q", k, got, v)
				}
			}
		})
	}
}
