package mkctl

import (
	"fmt"
	"io"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/printers"
)

// PrintFuncResult writes an instance for people: its status, the chain it
// took and its result or error. Multi-line values go below their label,
// indented.
func PrintFuncResult(w io.Writer, v api.FuncInstanceView) error {
	var b strings.Builder
	field(&b, "", "Instance", v.InstanceID)
	field(&b, "", "Function", v.Function)
	field(&b, "", "Status", v.Status)
	if len(v.Steps) > 0 {
		chain := make([]string, len(v.Steps))
		for i, s := range v.Steps {
			chain[i] = s.Function
		}
		field(&b, "", "Chain", strings.Join(chain, " -> "))
	}
	switch v.Status {
	case api.InstanceSucceeded:
		field(&b, "", "Result", shown(v.Result))
	case api.InstanceFailed:
		field(&b, "", "Error", v.Error)
	default:
		fmt.Fprintf(&b, "(not finished yet: run 'mkctl func result %s' again)\n", v.InstanceID)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// PrintFuncLogs writes each step of an instance: where it ran, how long it
// took, where the chain went, what the function printed and, for a failed
// step, its error and trace.
func PrintFuncLogs(w io.Writer, v api.FuncInstanceView) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Instance %s of %s: %s\n", v.InstanceID, v.Function, v.Status)
	if len(v.Steps) == 0 {
		b.WriteString("No step has finished yet.\n")
	}
	stepFailed := printSteps(&b, v.Steps, 0)
	// Errors of the chain itself (a missing function, the hop limit) belong
	// to no step.
	if v.Status == api.InstanceFailed && !stepFailed && v.Error != "" {
		b.WriteString("\n")
		field(&b, "", "Error", v.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// printSteps writes the steps from index first on; it says whether one of
// them failed.
func printSteps(b *strings.Builder, steps []api.FuncStepRecord, first int) (stepFailed bool) {
	for i := first; i < len(steps); i++ {
		s := steps[i]
		fmt.Fprintf(b, "\nStep %d: %s\n", i+1, s.Function)
		if s.Superseded {
			b.WriteString("  (a step call moved the call on while this step ran: its outcome was not followed)\n")
		}
		where := printers.OrNone(s.Pod)
		if s.Node != "" {
			where += " on " + s.Node
		}
		field(b, "  ", "Pod", where)
		if len(s.Retried) > 0 {
			// The step ran again: the pods before were lost under it.
			b.WriteString("  Ran again after losing:\n")
			b.WriteString(indent(strings.Join(s.Retried, "\n"), "    "))
		}
		if s.Start != nil {
			field(b, "  ", "Started", s.Start.UTC().Format(time.RFC3339Nano))
		}
		field(b, "  ", "Duration", fmt.Sprintf("%s (run %s)", millis(s.DurationMs), millis(s.RunMs)))
		if s.Error == "" {
			field(b, "  ", "Check", checkString(s.Check))
		}
		field(b, "  ", "Argument", printers.Truncate(oneLine(shown(s.Arg)), 120))
		if s.Error == "" {
			field(b, "  ", "Result", printers.Truncate(oneLine(shown(s.Result)), 120))
		}
		if s.Output == "" {
			field(b, "  ", "Output", printers.None)
		} else {
			b.WriteString("  Output:\n")
			b.WriteString(indent(s.Output, "    "))
		}
		if len(s.Sends) > 0 {
			b.WriteString("  Sent:\n")
			for _, sn := range s.Sends {
				what := "delivered"
				switch {
				case sn.Error != "":
					what = "NOT delivered: " + sn.Error
				case sn.Instance != "":
					what = "call " + sn.Instance
				}
				fmt.Fprintf(b, "    %s (%d bytes): %s\n", sn.Output, sn.Bytes, what)
			}
		}
		if len(s.PluginErrors) > 0 {
			// The call's outcome stands; a post plugin's failure is only here.
			b.WriteString("  Plugin errors (post):\n")
			b.WriteString(indent(strings.Join(s.PluginErrors, "\n"), "    "))
		}
		if s.Error != "" {
			stepFailed = true
			b.WriteString("  Error:\n")
			b.WriteString(indent(s.Error, "    "))
		}
	}
	return stepFailed
}

// field writes "Label:  value" aligned, or the label alone and the value
// indented below it when the value has several lines.
func field(b *strings.Builder, prefix, label, value string) {
	v := strings.TrimRight(value, "\n")
	if strings.Contains(v, "\n") {
		fmt.Fprintf(b, "%s%s:\n%s", prefix, label, indent(v, prefix+"  "))
		return
	}
	fmt.Fprintf(b, "%s%-10s %s\n", prefix, label+":", v)
}

// indent prefixes every line of s and ends it with a newline.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(prefix+l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

func millis(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

// checkString says what check returned and where the chain went.
func checkString(c *bool) string {
	switch {
	case c == nil:
		return "<none> (no check: left)"
	case *c:
		return "true (left)"
	default:
		return "false (right)"
	}
}
