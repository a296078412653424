package harness

import (
	"os"
	"testing"
)

// NeedE2E fails the test when MINIK8S_E2E=1 (the suite must run in full)
// and skips it otherwise.
func NeedE2E(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("MINIK8S_E2E") == "1" {
		t.Fatalf("MINIK8S_E2E=1 but "+format, args...)
	}
	t.Skipf(format, args...)
}
