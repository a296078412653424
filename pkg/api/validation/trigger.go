package validation

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

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

func trigger(t *api.Trigger) field.ErrorList {
	s := &t.Spec
	spec := field.NewPath("spec")
	errs := funcNameErrs(spec.Child("function"), s.Function)
	if s.App != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(s.App) {
			errs = append(errs, field.Invalid(spec.Child("app"), s.App, msg))
		}
	}
	errs = append(errs, configKeys(spec.Child("config"), s.Config)...)
	errs = append(errs, triggerFilters(spec.Child("filters"), s.Filters)...)
	kinds := 0
	for _, set := range []bool{s.HTTP != nil, s.Schedule != nil, s.Queue != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return append(errs, field.Invalid(spec, fmt.Sprintf("%d kinds", kinds), "exactly one of http, schedule or queue is required"))
	}
	switch {
	case s.HTTP != nil:
		return append(errs, httpTrigger(spec.Child("http"), s.HTTP)...)
	case s.Schedule != nil:
		if _, err := ParseSchedule(s.Schedule); err != nil {
			f := errdefs.Field(err)
			errs = append(errs, field.Invalid(field.NewPath(f), "", strings.TrimPrefix(err.Error(), f+": ")))
		}
		return errs
	default:
		return append(errs, queueTrigger(spec.Child("queue"), s.Queue)...)
	}
}

// ceAttributeName is a CloudEvents attribute's name: lower-case ASCII
// letters and digits (the spec's rule; 20 characters recommended).
var ceAttributeName = regexp.MustCompile(`^[a-z0-9]{1,20}$`)

// triggerFilters: each filter one dialect (exact or prefix), naming
// attributes as CloudEvents spells them.
func triggerFilters(path *field.Path, filters []api.TriggerFilter) field.ErrorList {
	var errs field.ErrorList
	for i, f := range filters {
		p := path.Index(i)
		if (len(f.Exact) > 0) == (len(f.Prefix) > 0) {
			errs = append(errs, field.Invalid(p, "", "must have exactly one of exact and prefix, with at least one attribute"))
		}
		for _, d := range []struct {
			name  string
			attrs map[string]string
		}{{"exact", f.Exact}, {"prefix", f.Prefix}} {
			for _, k := range sortedKeys(d.attrs) {
				if !ceAttributeName.MatchString(k) {
					errs = append(errs, field.Invalid(p.Child(d.name).Key(k), k, "must be a CloudEvents attribute name: 1 to 20 lower-case letters and digits"))
				}
			}
		}
	}
	return errs
}

func httpTrigger(path *field.Path, h *api.HTTPTrigger) field.ErrorList {
	var errs field.ErrorList
	p, pp := h.Path, path.Child("path")
	switch {
	case !strings.HasPrefix(p, "/"):
		errs = append(errs, field.Invalid(pp, p, "must start with /"))
	case strings.ContainsAny(p, "?#% \t"):
		errs = append(errs, field.Invalid(pp, p, "may hold no query, fragment, escape or space"))
	case strings.Contains(p, "//") || strings.Contains("/"+p+"/", "/../") || strings.Contains("/"+p+"/", "/./"):
		errs = append(errs, field.Invalid(pp, p, "must be a clean path"))
	case len(p) > 1024:
		errs = append(errs, field.TooLong(pp, "", 1024))
	}
	seen := map[string]bool{}
	for i, m := range h.Methods {
		mp := path.Child("methods").Index(i)
		switch {
		case !httpMethods[m]:
			errs = append(errs, field.NotSupported(mp, m, []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}))
		case seen[m]:
			errs = append(errs, field.Duplicate(mp, m))
		}
		seen[m] = true
	}
	return errs
}

// queueTrigger checks a NATS subject: dot-separated tokens, maybe
// wildcards (* a token, > the rest), no spaces; and where its failed
// messages go, which must not come back to it.
func queueTrigger(path *field.Path, q *api.QueueTrigger) field.ErrorList {
	errs := natsSubject(path.Child("subject"), q.Subject, wildcards)
	if q.MaxDeliver < 0 || q.MaxDeliver > 1000 {
		errs = append(errs, field.Invalid(path.Child("maxDeliver"), q.MaxDeliver, utilvalidation.InclusiveRangeError(1, 1000)))
	}
	if q.DeadLetterSubject != "" {
		dl := natsSubject(path.Child("deadLetterSubject"), q.DeadLetterSubject, lastGreater)
		errs = append(errs, dl...)
		if len(dl) == 0 && len(errs) == 0 && SubjectsCollide(q.Subject, q.DeadLetterSubject) && !strings.HasSuffix(q.DeadLetterSubject, ">") {
			errs = append(errs, field.Invalid(path.Child("deadLetterSubject"), q.DeadLetterSubject, "must not be a subject the trigger takes, or failed messages would come back"))
		}
		if len(dl) == 0 && len(errs) == 0 && strings.HasSuffix(q.DeadLetterSubject, ">") && SubjectsCollide(q.Subject, DeadLetterFor(q.DeadLetterSubject, q.Subject)) {
			errs = append(errs, field.Invalid(path.Child("deadLetterSubject"), q.DeadLetterSubject,
				"puts failed messages on subjects the trigger takes ("+DeadLetterFor(q.DeadLetterSubject, q.Subject)+"): they would come back"))
		}
	}
	return errs
}

// The wildcards a subject may hold.
const (
	literal     = iota
	wildcards   // * for a token, > for the rest: what a trigger takes
	lastGreater // > as its last token: a dead letter's, the message's subject in its place
)

func natsSubject(path *field.Path, s string, allow int) field.ErrorList {
	switch {
	case s == "":
		return field.ErrorList{field.Required(path, "a subject")}
	case len(s) > 255:
		return field.ErrorList{field.TooLong(path, "", 255)}
	}
	if SystemSubject(s) {
		return field.ErrorList{field.Invalid(path, s, "is a NATS system subject ($JS, $SYS, $KV, _INBOX, …): the runners' own connection would carry callers' messages to the server's API")}
	}
	toks := strings.Split(s, ".")
	if allow == wildcards && (toks[0] == "*" || toks[0] == ">") {
		return field.ErrorList{field.Invalid(path, s, "must start with a literal token: a wildcard first would take NATS's own subjects ($JS, _INBOX) too")}
	}
	for i, tok := range toks {
		last := i == len(toks)-1
		switch {
		case tok == "":
			return field.ErrorList{field.Invalid(path, s, "has an empty token")}
		case allow == wildcards && (tok == "*" || tok == ">" && last), allow == lastGreater && tok == ">" && last && i > 0:
		case strings.ContainsAny(tok, "*>") && allow == wildcards:
			return field.ErrorList{field.Invalid(path, s, "has a wildcard inside a token, or > before the last token: * stands for a whole token, > for the last ones")}
		case strings.ContainsAny(tok, "*>") && allow == lastGreater:
			return field.ErrorList{field.Invalid(path, s, "has a wildcard: only a last > is taken (the message's subject in its place)")}
		case strings.ContainsAny(tok, "*>"):
			return field.ErrorList{field.Invalid(path, s, "has a wildcard: messages are published on one subject")}
		case strings.ContainsAny(tok, " \t\r\n"):
			return field.ErrorList{field.Invalid(path, s, "holds white space")}
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
