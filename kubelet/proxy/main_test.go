package proxy_test

import (
	"testing"

	"minik8s/test/harness"
)

// TestMain lets the harness tear down what the tests start however the
// binary ends (signal, -timeout) and sweep what killed binaries left.
func TestMain(m *testing.M) { harness.Main(m) }
