package printers

import (
	"fmt"
	"strings"
	"time"

	"minik8s/pkg/api"
)

// containerNamesImages are a template's containers and images, comma
// separated, as kubectl's wide columns show them.
func containerNamesImages(cs []api.Container) (string, string) {
	var names, images []string
	for _, c := range cs {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return OrNone(strings.Join(names, ",")), OrNone(strings.Join(images, ","))
}

// JobStatus is a Job's state as kubectl get jobs words it.
func JobStatus(j *api.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Status != api.ConditionTrue {
			continue
		}
		switch c.Type {
		case api.JobComplete:
			return "Complete"
		case api.JobFailed:
			return "Failed"
		}
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return "Suspended"
	}
	return "Running"
}

// JobCompletions is "succeeded/completions" ("succeeded/1 of N" for a
// work queue of parallelism N).
func JobCompletions(j *api.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	par := int32(1)
	if j.Spec.Parallelism != nil {
		par = *j.Spec.Parallelism
	}
	return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, par)
}

// JobDuration is how long a Job ran (runs so far).
func JobDuration(j *api.Job, now time.Time) string {
	if j.Status.StartTime == nil {
		return ""
	}
	end := now
	if j.Status.CompletionTime != nil {
		end = *j.Status.CompletionTime
	}
	return HumanDuration(end.Sub(*j.Status.StartTime))
}

// HPATargets is "cpu: 250%/50%" for each metric, current over target
// ("<unknown>" until measured), as kubectl get hpa shows it.
func HPATargets(h *api.HorizontalPodAutoscaler) string {
	var parts []string
	for _, m := range h.Spec.Metrics {
		if m.Resource == nil {
			continue
		}
		target := m.Resource.Target.AverageValue
		if u := m.Resource.Target.AverageUtilization; u != nil {
			target = fmt.Sprintf("%d%%", *u)
		}
		current := "<unknown>"
		for _, c := range h.Status.CurrentMetrics {
			if c.Resource == nil || c.Resource.Name != m.Resource.Name {
				continue
			}
			if u := c.Resource.Current.AverageUtilization; u != nil && m.Resource.Target.AverageUtilization != nil {
				current = fmt.Sprintf("%d%%", *u)
			} else if c.Resource.Current.AverageValue != "" {
				current = c.Resource.Current.AverageValue
			}
		}
		parts = append(parts, m.Resource.Name+": "+current+"/"+target)
	}
	return OrNone(strings.Join(parts, ", "))
}
