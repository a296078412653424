package mkctl

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/printers"
)

// parseTraffic reads --traffic: REV=PERCENT or latest=PERCENT targets.
func parseTraffic(items []string) ([]api.FuncTrafficTarget, error) {
	var out []api.FuncTrafficTarget
	for _, item := range items {
		rev, pct, ok := strings.Cut(item, "=")
		p, err := strconv.Atoi(strings.TrimSuffix(pct, "%"))
		if !ok || err != nil {
			return nil, fmt.Errorf("--traffic %q: want REVISION=PERCENT or latest=PERCENT, e.g. 1=90,latest=10", item)
		}
		t := api.FuncTrafficTarget{Percent: p}
		if rev == "latest" {
			t.Latest = true
		} else if t.Revision, err = strconv.ParseInt(rev, 10, 64); err != nil || t.Revision < 1 {
			return nil, fmt.Errorf("--traffic %q: %q is not a revision number (from 1) or latest", item, rev)
		}
		out = append(out, t)
	}
	if len(out) == 1 && out[0].Latest && out[0].Percent == 100 {
		return nil, nil // all on the latest: no split
	}
	return out, nil
}

func newFuncRevisionsCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "revisions NAME [-o json|yaml]",
		Short: "List a function's revisions and the share of calls each gets",
		Long: "Every change of a function's code or config makes a new revision, numbered from 1;\n" +
			"a revision never changes. 'mkctl func invoke NAME@N' calls revision N, --traffic on\n" +
			"'mkctl func update' splits the calls between revisions, and 'mkctl func rollback'\n" +
			"puts an earlier revision back. PODS is the pods an older revision keeps of its own.",
		Example: "  mkctl func revisions hello\n  mkctl func invoke hello@1 -d x --wait\n  mkctl func rollback hello --to 1",
		Args:    oneArg("name of the function"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, revs, err := o.funcRevisions(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if output != "" {
				list := &api.FuncRevisionList{TypeMeta: api.TypeMeta{APIVersion: api.FuncRevisionsResource.GroupVersion(), Kind: "FuncRevisionList"}}
				for _, r := range revs {
					list.Items = append(list.Items, *r)
				}
				return PrintObject(o.Out, output, list)
			}
			tw := tabwriter.NewWriter(o.Out, 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "REVISION\tTRAFFIC\tPODS\tCODE\tAGE")
			for _, r := range revs {
				rev := strconv.FormatInt(r.Spec.Revision, 10)
				if r.Spec.Revision == f.Status.Revision {
					rev += " (latest)"
				}
				fmt.Fprintf(tw, "%s\t%d%%\t%d\t%s\t%s\n", rev, function.TrafficPercent(f, r.Spec.Revision), r.Status.Counter,
					r.Labels[function.LabelRevisionHash], printers.Age(r.CreationTimestamp, time.Now()))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml")
	return cmd
}

// funcRevisions are the function and its revisions, by number.
func (o *Options) funcRevisions(ctx context.Context, name string) (*api.Func, []*api.FuncRevision, error) {
	f, err := o.funcTemplates().Get(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	list, _, err := o.Client().FuncRevisions(o.Namespace).List(ctx, client.ListOptions{LabelSelector: function.LabelFunc + "=" + name})
	if err != nil {
		return nil, nil, err
	}
	var revs []*api.FuncRevision
	for _, r := range list {
		if r.Spec.Function == name && ownedBy(r.OwnerReferences, f.UID) {
			revs = append(revs, r)
		}
	}
	slices.SortFunc(revs, func(a, b *api.FuncRevision) int { return int(a.Spec.Revision - b.Spec.Revision) })
	return f, revs, nil
}

func newFuncRollbackCommand(o *Options) *cobra.Command {
	var to int64
	cmd := &cobra.Command{
		Use:   "rollback NAME [--to N]",
		Short: "Put an earlier revision of a function back (the one before the latest, or --to N)",
		Long: "Write an earlier revision's code and config back into the function and send it all\n" +
			"the calls (any traffic split is dropped). No new revision is made: the function is\n" +
			"that revision again. Calls in flight end on the revision they started on.",
		Example: "  mkctl func rollback hello\n  mkctl func rollback hello --to 1",
		Args:    oneArg("name of the function"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.rollbackFunc(cmd.Context(), args[0], to)
		},
	}
	cmd.Flags().Int64Var(&to, "to", 0, "the revision to go back to (0: the one before the latest)")
	return cmd
}

func (o *Options) rollbackFunc(ctx context.Context, name string, to int64) error {
	for attempt := 1; ; attempt++ {
		f, revs, err := o.funcRevisions(ctx, name)
		if err != nil {
			return err
		}
		var target *api.FuncRevision
		for _, r := range revs {
			switch {
			case to != 0 && r.Spec.Revision == to:
				target = r
			case to == 0 && r.Spec.Revision < f.Status.Revision:
				target = r // the newest below the latest, as revs go up
			}
		}
		if target == nil {
			if to != 0 {
				return fmt.Errorf("func %q has no revision %d (mkctl func revisions %s lists them)", name, to, name)
			}
			return fmt.Errorf("func %q has no revision before %d to roll back to", name, f.Status.Revision)
		}
		f.Spec = function.WithRevision(&f.Spec, target)
		f.Spec.Traffic = nil
		if _, err := o.funcTemplates().Update(ctx, f); err != nil {
			if errdefs.IsConflict(err) && attempt < maxApplyAttempts {
				continue
			}
			return err
		}
		fmt.Fprintf(o.Out, "func/%s rolled back to revision %d\n", name, target.Spec.Revision)
		return nil
	}
}
