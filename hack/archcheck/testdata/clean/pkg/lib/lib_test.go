package lib_test

import (
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/lib"
	"minik8s/test/harness"
)

// Tests may write any status.
func TestPhase(t *testing.T) {
	harness.Main()
	inst := &api.FuncInstance{Status: api.FuncInstanceStatus{Phase: "x"}}
	inst.Status.Phase = "y"
	if lib.Phase(inst) != "y" {
		t.Fatal()
	}
}
