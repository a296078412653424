package funcrunner

import (
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// A step's output is kept up to 1 MiB as the runtime cut it, within the
// record's budget over all steps, and one note at its end counts every
// byte cut, the runtime's included.
func TestRecordOutput(t *testing.T) {
	mib := strings.Repeat("x", maxOutputBytes)
	withSteps := func(outputs ...string) *api.FuncInstance {
		inst := &api.FuncInstance{}
		for _, o := range outputs {
			inst.Status.Steps = append(inst.Status.Steps, api.FuncStepRecord{Output: o})
		}
		return inst
	}
	for _, tc := range []struct {
		name    string
		inst    *api.FuncInstance
		res     function.Result
		want    string // "" when checked by wantLen and note
		wantLen int
		note    int64
	}{
		{name: "short output whole", inst: withSteps(), res: function.Result{Output: "hello\n"}, want: "hello\n"},
		{name: "20 KiB kept whole", inst: withSteps(), res: function.Result{Output: strings.Repeat("y", 20<<10)}, wantLen: 20 << 10},
		{name: "the runtime's cut kept, its note counted once", inst: withSteps(),
			res:     function.Result{Output: mib + function.OutputNote(5000), OutputDropped: 5000},
			wantLen: maxOutputBytes, note: 5000},
		{name: "the record's budget spent: cut, both cuts counted", inst: withSteps(mib, strings.Repeat("z", maxOutputBytes-100)),
			res:     function.Result{Output: strings.Repeat("w", 1000) + function.OutputNote(7), OutputDropped: 7},
			wantLen: 100, note: 907},
		{name: "nothing left", inst: withSteps(mib, mib), res: function.Result{Output: "late"}, wantLen: 0, note: 4},
		{name: "a cut never splits a character", inst: withSteps(mib, strings.Repeat("z", maxOutputBytes-1)),
			res: function.Result{Output: "é"}, wantLen: 0, note: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recordOutput(tc.inst, &tc.res)
			if tc.want != "" {
				if got != tc.want {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
				return
			}
			body := got
			if tc.note > 0 {
				var ok bool
				if body, ok = strings.CutSuffix(got, function.OutputNote(tc.note)); !ok {
					t.Fatalf("output does not end with the note of %d bytes: ...%q", tc.note, got[max(len(got)-60, 0):])
				}
			}
			if len(body) != tc.wantLen || strings.Contains(body, "[output truncated") {
				t.Fatalf("kept %d bytes (want %d), notes inside: %v", len(body), tc.wantLen, strings.Count(body, "[output truncated"))
			}
		})
	}
}
