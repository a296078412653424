package tracing

import (
	"testing"

	"minik8s/pkg/api"
)

func TestParse(t *testing.T) {
	for tp, ok := range map[string]bool{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7":    false,
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01": false,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": false,
		"00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01":   false,
		"": false,
	} {
		if _, _, got := Parse(tp); got != ok {
			t.Errorf("Parse(%q) ok = %v, want %v", tp, got, ok)
		}
	}
	tid, sid := NewTraceID(), NewSpanID()
	if gotT, gotS, ok := Parse(Format(tid, sid)); !ok || gotT != tid || gotS != sid {
		t.Errorf("Format then Parse: %s %s %v", gotT, gotS, ok)
	}
}

// TestRoot: any runner names a call's trace and root span alike; a caller's
// traceparent puts the call under the caller's span.
func TestRoot(t *testing.T) {
	inst := &api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "i-1", Namespace: "default"}}
	t1, r1, p1 := Root(inst)
	t2, r2, _ := Root(inst)
	if t1 != t2 || r1 != r2 || p1 != "" || len(t1) != 32 || len(r1) != 16 {
		t.Errorf("Root: %s %s %s, then %s %s", t1, r1, p1, t2, r2)
	}
	inst.Spec.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if tid, root, parent := Root(inst); tid != "4bf92f3577b34da6a3ce929d0e0e4736" || parent != "00f067aa0ba902b7" || root != r1 {
		t.Errorf("Root under a caller: %s %s %s", tid, root, parent)
	}
}
