package apiserver

import (
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// TestDecodeBodyContentTypes: JSON under any text type (curl -d sends a
// form's), YAML by its type, protobuf through Kubernetes' types, and other
// binary encodings refused with 415 so that clients fall back to JSON.
func TestDecodeBodyContentTypes(t *testing.T) {
	for _, tc := range []struct {
		ctype, body string
		unsupported bool
	}{
		{"application/json", `{"metadata":{"name":"a"}}`, false},
		{"application/x-www-form-urlencoded", `{"metadata":{"name":"a"}}`, false},
		{"", `{"metadata":{"name":"a"}}`, false},
		{"application/yaml", "metadata:\n  name: a\n", false},
		{"application/cbor", "\xa1", true},
		{protobufContentType, "not protobuf", true},
	} {
		var cm api.ConfigMap
		err := decodeStrict([]byte(tc.body), tc.ctype, &cm)
		switch {
		case tc.unsupported && !errdefs.IsUnsupportedMediaType(err):
			t.Errorf("%q: %v, want 415", tc.ctype, err)
		case !tc.unsupported && (err != nil || cm.Name != "a"):
			t.Errorf("%q: %v, name %q", tc.ctype, err, cm.Name)
		}
	}
}
