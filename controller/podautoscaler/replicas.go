package podautoscaler

import (
	"errors"
	"math"
	"time"

	"minik8s/pkg/api"
)

// Kubernetes' horizontal pod autoscaling algorithm, as pure functions:
// the replicas a metric asks for, then the stabilization window and the
// rate limits of the HPA's behavior.

// defaultTolerance: a ratio of usage to target within 10 % of 1 changes
// nothing, unless the behavior says otherwise (per direction).
const defaultTolerance = 0.1

type tolerance struct{ up, down float64 }

func tolerances(b *api.HorizontalPodAutoscalerBehavior) tolerance {
	t := tolerance{up: defaultTolerance, down: defaultTolerance}
	if b != nil && b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
		t.up = b.ScaleUp.Tolerance.AsApproximateFloat64()
	}
	if b != nil && b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
		t.down = b.ScaleDown.Tolerance.AsApproximateFloat64()
	}
	return t
}

// within: the ratio asks for no change.
func (t tolerance) within(ratio float64) bool { return ratio >= 1-t.down && ratio <= 1+t.up }

// podSample is what one pod of the target uses and requests of a resource
// (millicores or bytes); hasUsage is false for a pod without readings yet.
type podSample struct {
	usage, request int64
	hasUsage       bool
}

var errNoMetrics = errors.New("no pod of the target has metrics yet")
var errNoRequests = errors.New("the target's pods do not request the resource: utilization is a share of requests")

// replicasForUtilization is desired = ceil(current pods × utilization /
// target), unchanged within the tolerance. Pods without readings count as
// using nothing when the others ask for more, and all they request when
// the others ask for fewer, so that they never push the way the others
// do; when they would turn the answer around, nothing changes.
func replicasForUtilization(current int32, pods []podSample, target int32, tol tolerance) (desired int32, utilization int32, err error) {
	var usage, request int64
	var withMetrics, missing []podSample
	for _, p := range pods {
		if p.request <= 0 {
			continue
		}
		if p.hasUsage {
			withMetrics = append(withMetrics, p)
			usage += p.usage
			request += p.request
		} else {
			missing = append(missing, p)
		}
	}
	if len(withMetrics) == 0 {
		if len(missing) == 0 && len(pods) > 0 {
			return 0, 0, errNoRequests
		}
		return 0, 0, errNoMetrics
	}
	utilization = int32(usage * 100 / request)
	ratio := float64(utilization) / float64(target)
	if tol.within(ratio) && len(missing) == 0 {
		return current, utilization, nil
	}
	if len(missing) == 0 {
		return int32(math.Ceil(ratio * float64(len(withMetrics)))), utilization, nil
	}
	// The missing pods, assumed against the way the others go.
	for _, p := range missing {
		request += p.request
		if ratio > 1 {
			continue // using nothing
		}
		usage += p.request // using all they request
	}
	newRatio := float64(usage*100/request) / float64(target)
	if tol.within(newRatio) || (ratio > 1) != (newRatio > 1) {
		return current, utilization, nil
	}
	return int32(math.Ceil(newRatio * float64(len(withMetrics)+len(missing)))), utilization, nil
}

// recommendation is a desired count at a time.
type recommendation struct {
	at       time.Time
	replicas int32
}

// scaleEvent is a change of replicas the HPA made at a time.
type scaleEvent struct {
	at    time.Time
	delta int32
}

// Defaults of the behavior, as Kubernetes has them.
var (
	defaultScaleUp = api.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(0)), SelectPolicy: api.HPASelectMax,
		Policies: []api.HPAScalingPolicy{{Type: api.HPAPolicyPods, Value: 4, PeriodSeconds: 15}, {Type: api.HPAPolicyPercent, Value: 100, PeriodSeconds: 15}}}
	defaultScaleDown = api.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(300)), SelectPolicy: api.HPASelectMax,
		Policies: []api.HPAScalingPolicy{{Type: api.HPAPolicyPercent, Value: 100, PeriodSeconds: 15}}}
)

func ptr[T any](v T) *T { return &v }

// rules are the HPA's rules of one direction, its defaults filled in.
func rules(given *api.HPAScalingRules, def api.HPAScalingRules) api.HPAScalingRules {
	if given == nil {
		return def
	}
	r := *given
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = def.StabilizationWindowSeconds
	}
	if r.SelectPolicy == "" {
		r.SelectPolicy = api.HPASelectMax
	}
	if len(r.Policies) == 0 {
		r.Policies = def.Policies
	}
	return r
}

// stabilize is the recommendation after the windows: going down, the
// most recommended within the down window (so a dip does not shed pods);
// going up, the fewest within the up window.
func stabilize(current, desired int32, history []recommendation, now time.Time, up, down api.HPAScalingRules) int32 {
	upFloor, downCeil := desired, desired
	upSince := now.Add(-time.Duration(*up.StabilizationWindowSeconds) * time.Second)
	downSince := now.Add(-time.Duration(*down.StabilizationWindowSeconds) * time.Second)
	for _, r := range history {
		if r.at.After(upSince) {
			upFloor = min(upFloor, r.replicas)
		}
		if r.at.After(downSince) {
			downCeil = max(downCeil, r.replicas)
		}
	}
	switch {
	case desired > current:
		return max(min(upFloor, desired), current)
	case desired < current:
		return min(max(downCeil, desired), current)
	}
	return current
}

// limit applies the rate policies to a change from current to desired,
// given the changes made before.
func limit(current, desired int32, events []scaleEvent, now time.Time, up, down api.HPAScalingRules) int32 {
	if desired > current {
		if up.SelectPolicy == api.HPASelectDisabled {
			return current
		}
		bound := int32(-1)
		for _, p := range up.Policies {
			start := current - changed(events, now, p.PeriodSeconds, true)
			var l int32
			if p.Type == api.HPAPolicyPods {
				l = start + p.Value
			} else {
				l = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
			}
			switch {
			case bound < 0:
				bound = l
			case up.SelectPolicy == api.HPASelectMin:
				bound = min(bound, l)
			default:
				bound = max(bound, l)
			}
		}
		return max(min(desired, bound), current)
	}
	if desired < current {
		if down.SelectPolicy == api.HPASelectDisabled {
			return current
		}
		bound := int32(-1)
		for _, p := range down.Policies {
			start := current + changed(events, now, p.PeriodSeconds, false)
			var l int32
			if p.Type == api.HPAPolicyPods {
				l = start - p.Value
			} else {
				l = int32(math.Floor(float64(start) * (1 - float64(p.Value)/100)))
			}
			l = max(l, 0)
			switch {
			case bound < 0:
				bound = l
			case down.SelectPolicy == api.HPASelectMin:
				bound = max(bound, l) // the policy that allows the least change
			default:
				bound = min(bound, l)
			}
		}
		return min(max(desired, bound), current)
	}
	return current
}

// changed is how many replicas were added (up) or removed (!up) within
// the last period seconds.
func changed(events []scaleEvent, now time.Time, period int32, up bool) int32 {
	since := now.Add(-time.Duration(period) * time.Second)
	var n int32
	for _, e := range events {
		if !e.at.After(since) {
			continue
		}
		if up && e.delta > 0 {
			n += e.delta
		}
		if !up && e.delta < 0 {
			n -= e.delta
		}
	}
	return n
}
