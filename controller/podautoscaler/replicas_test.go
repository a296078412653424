package podautoscaler

import (
	"context"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"

	"k8s.io/apimachinery/pkg/api/resource"
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
			got, util, err := replicasForUtilization(tc.current, tc.pods, tc.target, tolerances(nil))
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

// TestTolerances: the behavior's tolerance per direction, 10 % unset.
func TestTolerances(t *testing.T) {
	five := resource.MustParse("50m")
	for _, tc := range []struct {
		name  string
		b     *api.HorizontalPodAutoscalerBehavior
		ratio float64
		want  bool
	}{
		{"default: 1.08 is within", nil, 1.08, true},
		{"default: 0.85 is not", nil, 0.85, false},
		{"up 5 %: 1.08 is not", &api.HorizontalPodAutoscalerBehavior{ScaleUp: &api.HPAScalingRules{Tolerance: &five}}, 1.08, false},
		{"up 5 %: 0.92 is, down being 10 %", &api.HorizontalPodAutoscalerBehavior{ScaleUp: &api.HPAScalingRules{Tolerance: &five}}, 0.92, true},
		{"down 5 %: 0.92 is not", &api.HorizontalPodAutoscalerBehavior{ScaleDown: &api.HPAScalingRules{Tolerance: &five}}, 0.92, false},
	} {
		if got := tolerances(tc.b).within(tc.ratio); got != tc.want {
			t.Errorf("%s: within(%v) = %v", tc.name, tc.ratio, got)
		}
	}
}

// TestProposeWithoutAnAdapter: Pods, Object and External metrics cannot
// be read (no custom or external metrics API): the HPA proposes nothing
// and says why with Kubernetes' reason.
func TestProposeWithoutAnAdapter(t *testing.T) {
	q := resource.MustParse("10")
	for _, tc := range []struct {
		m      api.MetricSpec
		reason string
	}{
		{api.MetricSpec{Type: api.MetricSourcePods, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "rps"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}, "FailedGetPodsMetric"},
		{api.MetricSpec{Type: api.MetricSourceObject, Object: &autoscalingv2.ObjectMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "hits"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q}}}, "FailedGetObjectMetric"},
		{api.MetricSpec{Type: api.MetricSourceExternal, External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q}}}, "FailedGetExternalMetric"},
	} {
		hc := &Controller{}
		h := &api.HorizontalPodAutoscaler{Spec: api.HorizontalPodAutoscalerSpec{MaxReplicas: 3, Metrics: []api.MetricSpec{tc.m}}}
		_, _, _, err := hc.propose(context.Background(), h, api.Scale{}, 2)
		if err == nil || err.reason != tc.reason || !strings.Contains(err.Error(), "metrics.k8s.io") {
			t.Errorf("%s metric: %v, want %s naming the API", tc.m.Type, err, tc.reason)
		}
	}
}
