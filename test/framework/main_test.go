package framework

import (
	"testing"

	"minik8s/test/harness"
)

// TestMain runs the harness's own tests under the harness's Main.
func TestMain(m *testing.M) { harness.Main(m) }
