package mkctl

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
)

type deleteOptions struct {
	files          []string
	selector       string
	all            bool
	ignoreNotFound bool
	gracePeriod    int64
}

func newDeleteCommand(o *Options) *cobra.Command {
	d := &deleteOptions{}
	cmd := &cobra.Command{
		Use:   "delete (-f FILE|DIR|- | KIND NAME... | KIND -l SELECTOR | KIND --all)",
		Short: "Delete objects by name, by selector or as named in manifests",
		Long: "Delete objects. A pod running on a node is marked for deletion and removed by its\n" +
			"node once its containers have stopped; --grace-period=0 removes it at once.",
		Example: "  mkctl delete pod web\n  mkctl delete -f yaml/pod.yaml\n  mkctl delete pods -l app=web",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var opts client.DeleteOptions
			if d.gracePeriod >= 0 {
				g := d.gracePeriod
				opts.GracePeriodSeconds = &g
			}
			if len(d.files) > 0 {
				if len(args) > 0 {
					return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("give either -f or KIND NAME, not both")}
				}
				docs, err := ReadManifests(d.files, o.In)
				if err != nil {
					return err
				}
				var targets []target
				for _, doc := range docs {
					if err := o.setNamespace(doc); err != nil {
						return err
					}
					m := doc.Object.GetObjectMeta()
					targets = append(targets, target{res: doc.Resource, ns: m.Namespace, name: m.Name})
				}
				return o.deleteAll(ctx, targets, opts, d.ignoreNotFound)
			}
			if len(args) == 0 {
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("give KIND NAME or -f FILE")}
			}
			res, err := lookupKind(args[0])
			if err != nil {
				return err
			}
			ns := o.namespaceFor(res)
			names := args[1:]
			if d.selector != "" || d.all {
				if len(names) > 0 {
					return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("names cannot be combined with -l or --all")}
				}
				objs, _, err := o.Client().Resource(res, ns).List(ctx, client.ListOptions{LabelSelector: d.selector})
				if err != nil {
					return err
				}
				if len(objs) == 0 {
					fmt.Fprintln(o.ErrOut, noResources(res, ns))
					return nil
				}
				for _, obj := range objs {
					names = append(names, obj.GetObjectMeta().Name)
				}
			}
			if len(names) == 0 {
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("give the name of the %s to delete, -l SELECTOR or --all", strings.ToLower(res.Kind))}
			}
			targets := make([]target, len(names))
			for i, n := range names {
				targets[i] = target{res: res, ns: ns, name: n}
			}
			return o.deleteAll(ctx, targets, opts, d.ignoreNotFound)
		},
	}
	f := cmd.Flags()
	f.StringSliceVarP(&d.files, "filename", "f", nil, "delete the objects of these manifests (file, directory or -)")
	f.StringVarP(&d.selector, "selector", "l", "", "delete the objects of KIND matching this label selector")
	f.BoolVar(&d.all, "all", false, "delete every object of KIND in the namespace")
	f.BoolVar(&d.ignoreNotFound, "ignore-not-found", false, "treat an object that does not exist as deleted")
	f.Int64Var(&d.gracePeriod, "grace-period", -1, "seconds a pod gets to stop (-1: the pod's own; 0: remove at once)")
	return cmd
}

type target struct {
	res  api.Resource
	ns   string
	name string
}

// deleteAll deletes every target, reporting each failure and going on.
func (o *Options) deleteAll(ctx context.Context, targets []target, opts client.DeleteOptions, ignoreNotFound bool) error {
	failed := false
	for _, t := range targets {
		_, err := o.Client().Resource(t.res, t.ns).Delete(ctx, t.name, opts)
		switch {
		case err == nil:
			fmt.Fprintf(o.Out, "%s %q deleted\n", strings.ToLower(t.res.Kind), t.name)
		case ignoreNotFound && errdefs.IsNotFound(err):
		default:
			fmt.Fprintln(o.ErrOut, FormatError(err))
			failed = true
		}
	}
	if failed {
		return errReported
	}
	return nil
}
