package validation

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// cronParser takes what the issue promises: seconds optional, and
// descriptors such as @every 1s and @hourly.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a schedule trigger's cron expression in its time
// zone (UTC by default).
func ParseSchedule(s *api.ScheduleTrigger) (cron.Schedule, error) {
	if strings.HasPrefix(s.Cron, "TZ=") || strings.HasPrefix(s.Cron, "CRON_TZ=") {
		return nil, errdefs.Invalid("spec.schedule.cron", "give the time zone in spec.schedule.timeZone, not in the expression")
	}
	expr := s.Cron
	if s.TimeZone != "" {
		if _, err := time.LoadLocation(s.TimeZone); err != nil {
			return nil, errdefs.Invalid("spec.schedule.timeZone", "%q is not a time zone: %v", s.TimeZone, err)
		}
		expr = "CRON_TZ=" + s.TimeZone + " " + expr
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return nil, errdefs.Invalid("spec.schedule.cron", "%q does not parse: %v", s.Cron, err)
	}
	return sched, nil
}

var httpMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

func trigger(t *api.Trigger) error {
	s := &t.Spec
	if s.Function == "" {
		return errdefs.Invalid("spec.function", "the function to call is required")
	}
	if err := FuncName("spec.function", s.Function); err != nil {
		return err
	}
	if s.App != "" {
		if len(s.App) > 253 || !dnsSubdomain.MatchString(s.App) {
			return errdefs.Invalid("spec.app", "%q must be a DNS subdomain: lower case letters, digits, '-' and '.'", s.App)
		}
	}
	if err := configKeys("spec.config", s.Config); err != nil {
		return err
	}
	kinds := 0
	for _, set := range []bool{s.HTTP != nil, s.Schedule != nil, s.Queue != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return errdefs.Invalid("spec", "exactly one of http, schedule or queue is required, not %d", kinds)
	}
	switch {
	case s.HTTP != nil:
		return httpTrigger(s.HTTP)
	case s.Schedule != nil:
		_, err := ParseSchedule(s.Schedule)
		return err
	default:
		return queueTrigger(s.Queue)
	}
}

func httpTrigger(h *api.HTTPTrigger) error {
	p := h.Path
	switch {
	case !strings.HasPrefix(p, "/"):
		return errdefs.Invalid("spec.http.path", "%q must start with /", p)
	case strings.ContainsAny(p, "?#% \t"):
		return errdefs.Invalid("spec.http.path", "%q may hold no query, fragment, escape or space", p)
	case strings.Contains(p, "//") || strings.Contains("/"+p+"/", "/../") || strings.Contains("/"+p+"/", "/./"):
		return errdefs.Invalid("spec.http.path", "%q is not a clean path", p)
	case len(p) > 1024:
		return errdefs.Invalid("spec.http.path", "is longer than 1024 characters")
	}
	seen := map[string]bool{}
	for i, m := range h.Methods {
		if !httpMethods[m] {
			return errdefs.Invalid(fmt.Sprintf("spec.http.methods[%d]", i), "%q is not an HTTP method (upper case: GET, POST, …)", m)
		}
		if seen[m] {
			return errdefs.Invalid(fmt.Sprintf("spec.http.methods[%d]", i), "%q is given twice", m)
		}
		seen[m] = true
	}
	return nil
}

// queueTrigger checks a NATS subject: dot-separated tokens, no
// wildcards (a trigger consumes one subject), no spaces.
func queueTrigger(q *api.QueueTrigger) error {
	if err := natsSubject("spec.queue.subject", q.Subject); err != nil {
		return err
	}
	if q.MaxDeliver < 0 || q.MaxDeliver > 1000 {
		return errdefs.Invalid("spec.queue.maxDeliver", "%d is not between 1 and 1000", q.MaxDeliver)
	}
	if q.DeadLetterSubject != "" {
		if err := natsSubject("spec.queue.deadLetterSubject", q.DeadLetterSubject); err != nil {
			return err
		}
		if q.DeadLetterSubject == q.Subject {
			return errdefs.Invalid("spec.queue.deadLetterSubject", "must differ from the subject, or failed messages would come back")
		}
	}
	return nil
}

func natsSubject(field, s string) error {
	if s == "" {
		return errdefs.Invalid(field, "a subject is required")
	}
	if len(s) > 255 {
		return errdefs.Invalid(field, "is longer than 255 characters")
	}
	if SystemSubject(s) {
		return errdefs.Invalid(field, "%q is a NATS system subject ($JS, $SYS, $KV, _INBOX, …): the runners' own connection would carry callers' messages to the server's API", s)
	}
	for _, tok := range strings.Split(s, ".") {
		switch {
		case tok == "":
			return errdefs.Invalid(field, "%q has an empty token", s)
		case tok == "*" || tok == ">" || strings.ContainsAny(tok, "*>"):
			return errdefs.Invalid(field, "%q has a wildcard: a trigger takes the messages of one subject", s)
		case strings.ContainsAny(tok, " \t\r\n"):
			return errdefs.Invalid(field, "%q holds white space", s)
		}
	}
	return nil
}

// SystemSubject says whether s is one of the subjects NATS keeps for its
// own API and replies ($JS.API, $SYS, $KV, $O, _INBOX): a runner
// publishing there would act with its connection's authority.
func SystemSubject(s string) bool {
	return strings.HasPrefix(s, "$") || s == "_INBOX" || strings.HasPrefix(s, "_INBOX.")
}

// configKeys checks the keys of an app's or a trigger's config, which a
// function reads as context["config"].
func configKeys(field string, cfg map[string]string) error {
	for k := range cfg {
		if !configMapKey.MatchString(k) || k == "." || k == ".." {
			return errdefs.Invalid(field+"."+k, "key %q must consist of letters, digits, '-', '_' and '.'", k)
		}
	}
	return nil
}
