package podautoscaler

import (
	"testing"
	"time"

	"minik8s/pkg/api"
)

func TestReplicasForUtilization(t *testing.T) {
	pod := func(usage, request int64) podSample { return podSample{usage: usage, request: request, hasUsage: true} }
	noData := podSample{request: 100}
	for _, tc := range []struct {
		name       string
		current    int32
		pods       []podSample
		target     int32
		want, util int32
		wantErr    bool
	}{
		{"one pod at 200% of a 50% target: four", 1, []podSample{pod(200, 100)}, 50, 4, 200, false},
		{"within the tolerance", 2, []podSample{pod(54, 100), pod(54, 100)}, 50, 2, 54, false},
		{"just outside it", 2, []podSample{pod(60, 100), pod(60, 100)}, 50, 3, 60, false},
		{"idle: down", 4, []podSample{pod(5, 100), pod(5, 100), pod(5, 100), pod(5, 100)}, 50, 1, 5, false},
		{"a pod without data counts as idle going up", 2, []podSample{pod(200, 100), noData}, 50, 4, 200, false},
		{"and as busy going down", 2, []podSample{pod(10, 100), noData}, 50, 2, 10, false},
		{"no data at all", 1, []podSample{noData}, 50, 0, 0, true},
		{"no requests", 1, []podSample{{usage: 10, hasUsage: true}}, 50, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, util, err := replicasForUtilization(tc.current, tc.pods, tc.target)
			if (err != nil) != tc.wantErr || (!tc.wantErr && (got != tc.want || util != tc.util)) {
				t.Errorf("= %d, %d%%, %v; want %d, %d%% (error %v)", got, util, err, tc.want, tc.util, tc.wantErr)
			}
		})
	}
}

func TestStabilizeAndLimit(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	up, down := rules(nil, defaultScaleUp), rules(nil, defaultScaleDown)
	ago := func(s int) time.Time { return now.Add(-time.Duration(s) * time.Second) }
	// Down waits for the window: a recommendation of 5 a minute ago holds.
	if got := stabilize(5, 2, []recommendation{{ago(60), 5}, {ago(30), 3}}, now, up, down); got != 5 {
		t.Errorf("down within the window: %d, want 5", got)
	}
	if got := stabilize(5, 2, []recommendation{{ago(400), 5}, {ago(30), 3}}, now, up, down); got != 3 {
		t.Errorf("down past an old high: %d, want 3", got)
	}
	// Up at once (no up window).
	if got := stabilize(1, 4, []recommendation{{ago(5), 1}}, now, up, down); got != 4 {
		t.Errorf("up: %d, want 4", got)
	}
	// Up by at most max(4 pods, 100%) per 15 s.
	if got := limit(1, 10, nil, now, up, down); got != 5 {
		t.Errorf("from 1 towards 10: %d, want 5 (4 pods)", got)
	}
	if got := limit(8, 30, nil, now, up, down); got != 16 {
		t.Errorf("from 8 towards 30: %d, want 16 (100%%)", got)
	}
	if got := limit(5, 10, []scaleEvent{{ago(5), 4}}, now, up, down); got != 5 {
		t.Errorf("after +4 five seconds ago: %d, want 5 (no more within the period)", got)
	}
	custom := rules(&api.HPAScalingRules{Policies: []api.HPAScalingPolicy{{Type: api.HPAPolicyPods, Value: 1, PeriodSeconds: 60}}}, defaultScaleDown)
	if got := limit(4, 1, nil, now, up, custom); got != 3 {
		t.Errorf("down one pod a minute: %d, want 3", got)
	}
}
