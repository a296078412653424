package api

import (
	"encoding/json"
	"testing"
)

func TestIntOrString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`8080`, `8080`}, {`"8080"`, `8080`}, {`"http"`, `"http"`},
	} {
		var p IntOrString
		if err := json.Unmarshal([]byte(tc.in), &p); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		out, err := json.Marshal(p)
		if err != nil || string(out) != tc.want {
			t.Errorf("%s back to JSON: %s %v, want %s", tc.in, out, err, tc.want)
		}
	}
	var p IntOrString
	if err := json.Unmarshal([]byte(`{}`), &p); err == nil {
		t.Errorf("an object read as a port: %q", p)
	}
}
