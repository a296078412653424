package mkctl

import (
	"bytes"
	"testing"
	"time"

	"minik8s/pkg/api"
)

func boolp(b bool) *bool { return &b }

func TestPrintFuncResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		view api.FuncInstanceView
		want string
	}{
		{"succeeded", api.FuncInstanceView{InstanceID: "id-1", Function: "classify", Status: api.InstanceSucceeded, Result: "42",
			Steps: []api.FuncStepRecord{{Function: "classify"}, {Function: "double"}}}, "" +
			"Instance:  id-1\n" +
			"Function:  classify\n" +
			"Status:    Succeeded\n" +
			"Chain:     classify -> double\n" +
			"Result:    42\n"},
		{"multi-line result", api.FuncInstanceView{InstanceID: "id-2", Function: "f", Status: api.InstanceSucceeded, Result: "a\nb\n"}, "" +
			"Instance:  id-2\n" +
			"Function:  f\n" +
			"Status:    Succeeded\n" +
			"Result:\n" +
			"  a\n" +
			"  b\n"},
		{"failed", api.FuncInstanceView{InstanceID: "id-3", Function: "raises", Status: api.InstanceFailed,
			Error: `function "raises" failed: ZeroDivisionError: division by zero`, Steps: []api.FuncStepRecord{{Function: "raises"}}}, "" +
			"Instance:  id-3\n" +
			"Function:  raises\n" +
			"Status:    Failed\n" +
			"Chain:     raises\n" +
			"Error:     function \"raises\" failed: ZeroDivisionError: division by zero\n"},
		{"running", api.FuncInstanceView{InstanceID: "id-4", Function: "slow", Status: api.InstanceRunning}, "" +
			"Instance:  id-4\n" +
			"Function:  slow\n" +
			"Status:    Running\n" +
			"(not finished yet: run 'mkctl func result id-4' again)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := PrintFuncResult(&b, tc.view); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tc.want)
			}
		})
	}
}

func TestPrintFuncLogs(t *testing.T) {
	start := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		view api.FuncInstanceView
		want string
	}{
		{"two steps", api.FuncInstanceView{InstanceID: "id-1", Function: "classify", Status: api.InstanceSucceeded, Result: "42",
			Steps: []api.FuncStepRecord{
				{Function: "classify", Pod: "func-classify-x1", Node: "node-a", Arg: " 21 ", Result: "21", Check: boolp(true),
					Output: "classifying ' 21 '\nit is a number\n", Start: &start, DurationMs: 1520, RunMs: 3},
				{Function: "double", Pod: "func-double-y2", Node: "node-b", Arg: "21", Result: "42", DurationMs: 12, RunMs: 1},
			}}, "" +
			"Instance id-1 of classify: Succeeded\n" +
			"\n" +
			"Step 1: classify\n" +
			"  Pod:       func-classify-x1 on node-a\n" +
			"  Started:   2024-05-01T10:00:00Z\n" +
			"  Duration:  1.52s (run 3ms)\n" +
			"  Check:     true (left)\n" +
			"  Argument:  21\n" +
			"  Result:    21\n" +
			"  Output:\n" +
			"    classifying ' 21 '\n" +
			"    it is a number\n" +
			"\n" +
			"Step 2: double\n" +
			"  Pod:       func-double-y2 on node-b\n" +
			"  Duration:  12ms (run 1ms)\n" +
			"  Check:     <none> (no check: left)\n" +
			"  Argument:  21\n" +
			"  Result:    42\n" +
			"  Output:    <none>\n"},
		{"failed step with trace", api.FuncInstanceView{InstanceID: "id-2", Function: "raises", Status: api.InstanceFailed,
			Error: `function "raises" failed: ZeroDivisionError: division by zero`,
			Steps: []api.FuncStepRecord{{Function: "raises", Pod: "p", Arg: "x", Check: boolp(false), Output: "about to divide\n",
				Error: "ZeroDivisionError: division by zero\nTraceback (most recent call last):\n  File \"function.py\", line 2, in run\n", DurationMs: 5, RunMs: 2}}}, "" +
			"Instance id-2 of raises: Failed\n" +
			"\n" +
			"Step 1: raises\n" +
			"  Pod:       p\n" +
			"  Duration:  5ms (run 2ms)\n" +
			"  Argument:  x\n" +
			"  Output:\n" +
			"    about to divide\n" +
			"  Error:\n" +
			"    ZeroDivisionError: division by zero\n" +
			"    Traceback (most recent call last):\n" +
			"      File \"function.py\", line 2, in run\n"},
		{"chain error after the steps", api.FuncInstanceView{InstanceID: "id-3", Function: "dangling", Status: api.InstanceFailed,
			Error: `function "missing_fn" not found (called by "dangling")`,
			Steps: []api.FuncStepRecord{{Function: "dangling", Arg: "x", Result: "x", DurationMs: 1}}}, "" +
			"Instance id-3 of dangling: Failed\n" +
			"\n" +
			"Step 1: dangling\n" +
			"  Pod:       <none>\n" +
			"  Duration:  1ms (run 0s)\n" +
			"  Check:     <none> (no check: left)\n" +
			"  Argument:  x\n" +
			"  Result:    x\n" +
			"  Output:    <none>\n" +
			"\n" +
			"Error:     function \"missing_fn\" not found (called by \"dangling\")\n"},
		{"no step yet", api.FuncInstanceView{InstanceID: "id-4", Function: "cold", Status: api.InstanceRunning}, "" +
			"Instance id-4 of cold: Running\n" +
			"No step has finished yet.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := PrintFuncLogs(&b, tc.view); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tc.want)
			}
		})
	}
}
