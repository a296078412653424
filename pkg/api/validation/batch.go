package validation

import (
	"github.com/robfig/cron/v3"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// cronSchedule parses a CronJob's schedule: five fields, or a descriptor
// (@hourly, @daily…, and @every DURATION).
var cronSchedule = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// CronSchedule parses a CronJob's schedule.
func CronSchedule(c *api.CronJob) (cron.Schedule, error) {
	sched, err := cronSchedule.Parse(c.Spec.Schedule)
	if err != nil {
		return nil, errdefs.Invalid("spec.schedule", "%q does not parse: %v", c.Spec.Schedule, err)
	}
	return sched, nil
}
