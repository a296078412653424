package containerd_test

import (
	"testing"

	"minik8s/test/framework"
)

// TestMain lets the framework tear down what the tests start however the
// binary ends (signal, -timeout) and sweep what killed binaries left.
func TestMain(m *testing.M) { framework.Main(m) }
