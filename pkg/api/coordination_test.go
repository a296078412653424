package api

import (
	"encoding/json"
	"regexp"
	"testing"
)

// A Lease's times are written with six digits of a second, and read
// whatever digits they were stored with.
func TestMicroTime(t *testing.T) {
	var l LeaseSpec
	for _, in := range []string{`"2026-01-01T00:00:05.123456789Z"`, `"2026-01-01T00:00:05Z"`, `"2026-01-01T00:00:05.123456Z"`} {
		if err := json.Unmarshal([]byte(`{"renewTime":`+in+`}`), &l); err != nil || l.RenewTime == nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(l)
		if err != nil || !regexp.MustCompile(`"renewTime":"2026-01-01T00:00:05\.\d{6}Z"`).Match(out) {
			t.Errorf("%s written as %s (%v), want six digits", in, out, err)
		}
	}
}
