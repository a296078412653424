package framework

import "testing"

// TestMain runs the harness's own tests under the harness's Main.
func TestMain(m *testing.M) { Main(m) }
