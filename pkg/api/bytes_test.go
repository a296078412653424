package api

import (
	"encoding/json"
	"testing"
)

func TestBytesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Bytes
		json string
	}{
		{"empty", "", `""`},
		{"text", "héllo <b>", `"héllo \u003cb\u003e"`},
		{"binary", "\xff\xfe\x00", `{"base64":"//4A"}`},
		{"nul is text", "a\x00b", `"a\u0000b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := json.Marshal(struct {
				V Bytes `json:"v"`
			}{tc.in})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"v":` + tc.json + `}`; string(out) != want {
				t.Fatalf("marshal: %s, want %s", out, want)
			}
			var back struct {
				V Bytes `json:"v"`
			}
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatal(err)
			}
			if back.V != tc.in {
				t.Fatalf("round trip: %q, want %q", back.V, tc.in)
			}
		})
	}
	var b Bytes
	if err := json.Unmarshal([]byte(`{"base64":"%%"}`), &b); err == nil {
		t.Fatal("bad base64 decoded")
	}
	if err := json.Unmarshal([]byte(`null`), &b); err != nil || b != "" {
		t.Fatalf("null: %q %v", b, err)
	}
}
