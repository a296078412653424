package mkctl

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
)

func newFuncTraceCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "trace ID [-o json]",
		Short: "Draw a call's trace as a waterfall: the call, its steps, waits for pods, runs in pods, plugins",
		Long: "Draw the spans kept with a call (spans go to --otlp-endpoint too when the cluster has one).\n" +
			"The run in the pod and its plugins show when the function has the tracing plugin.",
		Example: "  mkctl func trace 3f2a7c1e-...",
		Args:    oneArg("instance id of the call"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns := o.Namespace
			if !o.NamespaceSet {
				// The apiserver finds the namespace of an id.
				v, err := o.instanceCalls().Result(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				ns = v.Namespace
			}
			inst, err := o.Client().FuncInstances(ns).Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if output == "json" {
				return PrintObject(o.Out, "json", inst.Status.Trace)
			}
			return PrintTrace(o.Out, inst.Status.Trace)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json: the spans as they are kept")
	return cmd
}

// waterfallWidth is the width of the bars.
const waterfallWidth = 40

// PrintTrace draws spans as a tree, children under their parent by start,
// each with a bar placed on the trace's time line.
func PrintTrace(w io.Writer, spans []api.FuncSpan) error {
	if len(spans) == 0 {
		_, err := fmt.Fprintln(w, "No spans (yet) for this call.")
		return err
	}
	ids := map[string]bool{}
	first, last := spans[0].StartNs, spans[0].EndNs
	for _, s := range spans {
		ids[s.SpanID] = true
		first, last = min(first, s.StartNs), max(last, s.EndNs)
	}
	children := map[string][]api.FuncSpan{}
	var roots []api.FuncSpan
	for _, s := range spans {
		if s.ParentSpanID != "" && ids[s.ParentSpanID] {
			children[s.ParentSpanID] = append(children[s.ParentSpanID], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(l []api.FuncSpan) {
		sort.SliceStable(l, func(i, j int) bool { return l[i].StartNs < l[j].StartNs })
	}
	total := max(last-first, 1)
	fmt.Fprintf(w, "Trace %s, %s\n", spans[0].TraceID, ms(total))
	var rows [][4]string
	seen := map[string]bool{} // spans a pod sent may loop on their parents
	var walk func(s api.FuncSpan, depth int)
	walk = func(s api.FuncSpan, depth int) {
		if seen[s.SpanID] {
			return
		}
		seen[s.SpanID] = true
		from := int((s.StartNs - first) * waterfallWidth / total)
		to := max(int((s.EndNs-first)*waterfallWidth/total), from+1)
		bar := strings.Repeat(" ", from) + strings.Repeat("█", min(to, waterfallWidth)-from) + strings.Repeat(" ", max(waterfallWidth-to, 0))
		name := strings.Repeat("  ", depth) + s.Name
		if s.Error != "" {
			name += " (error)"
		}
		rows = append(rows, [4]string{name, s.Service, "+" + ms(s.StartNs-first), ms(s.EndNs-s.StartNs) + " |" + bar + "|"})
		kids := children[s.SpanID]
		byStart(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	byStart(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	widths := [3]int{4, 7, 5}
	for _, r := range rows {
		for i := range widths {
			widths[i] = max(widths[i], len([]rune(r[i])))
		}
	}
	row := func(c [4]string) {
		fmt.Fprintf(w, "%-*s  %-*s  %*s  %s\n", widths[0], c[0], widths[1], c[1], widths[2], c[2], c[3])
	}
	row([4]string{"SPAN", "SERVICE", "START", "DURATION"})
	for _, r := range rows {
		row(r)
	}
	return nil
}

func ms(ns int64) string {
	return fmt.Sprintf("%.1fms", float64(ns)/float64(time.Millisecond))
}
