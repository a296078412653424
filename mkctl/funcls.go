package mkctl

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/printers"
)

func newFuncListCommand(o *Options) *cobra.Command {
	var output string
	var all bool
	cmd := &cobra.Command{
		Use:     "ls [-A] [-o wide|json|yaml]",
		Aliases: []string{"list"},
		Short:   "List every function with how it is reached (its triggers) and how it is doing",
		Example: "  mkctl func ls\n  mkctl func ls -A\n  mkctl func ls -o wide\n  mkctl func ls -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "", "wide", "json", "yaml":
			default:
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("unknown output format %q (want wide, json or yaml)", output)}
			}
			var list *api.FuncSummaryList
			var err error
			if all {
				list, err = o.Client().ListAllFuncs(cmd.Context())
			} else {
				list, err = o.funcTemplates().List(cmd.Context())
			}
			if err != nil {
				return err
			}
			if output == "json" || output == "yaml" {
				return PrintObject(o.Out, output, list)
			}
			return PrintFuncList(o.Out, list.Items, output == "wide", all, time.Now())
		},
	}
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the functions of every namespace")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, json or yaml")
	return cmd
}

// PrintFuncList prints functions as a table: each with its triggers (TYPE
// SOURCE, or "api" for a function reached only by the function API).
func PrintFuncList(w io.Writer, items []api.FuncSummary, wide, withNamespace bool, now time.Time) error {
	if len(items) == 0 {
		_, err := fmt.Fprintln(w, "No functions found.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	head := "NAME\tVERSION\tTRIGGERS\tCOUNTER\tREADY\tLAST CALL"
	if withNamespace {
		head = "NAMESPACE\t" + head
	}
	if wide {
		head += "\tRUNTIME"
	}
	fmt.Fprintln(tw, head)
	for _, f := range items {
		last := "<never>"
		if f.LastCall != nil {
			last = printers.HumanDuration(now.Sub(*f.LastCall)) + " ago"
		}
		row := strings.Join([]string{f.Name, f.Version, triggerList(f.Triggers), strconv.Itoa(f.Counter), strconv.Itoa(f.ReadyPods), last}, "\t")
		if withNamespace {
			row = f.Namespace + "\t" + row
		}
		if wide {
			row += "\t" + f.Runtime
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

func triggerList(ts []api.TriggerSummary) string {
	if len(ts) == 0 {
		return "api"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Type + ":" + t.Source
		if !t.Ready {
			parts[i] += " (not ready)"
		}
	}
	return strings.Join(parts, ", ")
}
