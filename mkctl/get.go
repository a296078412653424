package mkctl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

type getOptions struct {
	output        string
	watch         bool
	allNamespaces bool
	selector      string
	showLabels    bool
	watchEvents   bool
}

func newGetCommand(o *Options) *cobra.Command {
	g := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get KIND[,KIND...] [NAME...]",
		Short: "List objects of a kind as a table, YAML or JSON",
		Long: "List objects of a kind (or of several, comma-separated), or the named ones. Kinds: " + kindList() + ".\n" +
			"-w prints the table and then one row per change until interrupted.",
		Example: "  mkctl get pods\n  mkctl get po web -o yaml\n  mkctl get funcs -A\n  mkctl get pods -l app=web -w\n  mkctl get jobs,cronjobs",
		Args:    kindArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			var kinds []api.Resource
			for _, k := range strings.Split(args[0], ",") {
				res, err := lookupKind(k)
				if err != nil {
					return err
				}
				kinds = append(kinds, res)
			}
			switch g.output {
			case "", "wide", "yaml", "json", "name":
			default:
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("unknown output format %q (want wide, yaml, json or name)", g.output)}
			}
			if len(kinds) > 1 {
				if g.watch {
					return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("-w watches one kind, not %d (%s)", len(kinds), args[0])}
				}
				return o.runGetKinds(cmd.Context(), kinds, args[1:], g)
			}
			return o.runGet(cmd.Context(), kinds[0], args[1:], g)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&g.output, "output", "o", "", "output format: wide, yaml, json or name")
	f.BoolVarP(&g.watch, "watch", "w", false, "after listing, watch for changes")
	f.BoolVarP(&g.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	f.StringVarP(&g.selector, "selector", "l", "", "label selector, e.g. app=web,tier!=db")
	f.BoolVar(&g.showLabels, "show-labels", false, "add a LABELS column")
	f.BoolVar(&g.watchEvents, "output-watch-events", false, "with -w, prefix each row with the event type")
	return cmd
}

func (o *Options) runGet(ctx context.Context, res api.Resource, names []string, g *getOptions) error {
	ns := o.namespaceFor(res)
	if g.allNamespaces {
		ns = ""
	}
	dyn := o.Client().Resource(res, ns)
	opts := client.ListOptions{LabelSelector: g.selector}
	objs, rv, err := fetch(ctx, dyn, res, ns, names, opts)
	if err != nil {
		return err
	}

	printer := NewTablePrinter(res, g.output == "wide", g.allNamespaces, g.showLabels)
	printer.eventColumn = g.watchEvents && g.watch
	switch {
	case g.output == "yaml" || g.output == "json":
		var v any = listOf(res, objs, rv)
		if len(names) == 1 {
			v = objs[0]
		}
		if err := PrintObject(o.Out, g.output, v); err != nil {
			return err
		}
	case g.output == "name":
		for _, obj := range objs {
			fmt.Fprintln(o.Out, kindName(res, obj.GetObjectMeta().Name))
		}
	case len(objs) == 0:
		if !g.watch {
			fmt.Fprintln(o.ErrOut, noResources(res, ns))
		}
	default:
		rows := objs
		if res.Name == api.FuncsResource.Name {
			var err error
			if rows, err = o.withFuncPools(ctx, ns, objs); err != nil {
				return err
			}
		}
		if err := printer.PrintTable(o.Out, rows, time.Now()); err != nil {
			return err
		}
	}
	if !g.watch {
		return nil
	}
	return o.watch(ctx, dyn, opts, names, rv, objs, printer, g.output)
}

// fetch lists the objects of res, or gets the named ones.
func fetch(ctx context.Context, dyn *client.Dynamic, res api.Resource, ns string, names []string, opts client.ListOptions) ([]api.Object, string, error) {
	if len(names) == 0 {
		return dyn.List(ctx, opts)
	}
	if ns == "" && res.Namespaced {
		return nil, "", fmt.Errorf("a name cannot be combined with --all-namespaces")
	}
	var objs []api.Object
	for _, n := range names {
		obj, err := dyn.Get(ctx, n)
		if err != nil {
			return nil, "", err
		}
		objs = append(objs, obj)
	}
	return objs, "", nil
}

// runGetKinds prints the objects of several kinds (get jobs,cronjobs), as
// kubectl does: a table per kind that has objects, its names prefixed
// with the kind, or one List of them all.
func (o *Options) runGetKinds(ctx context.Context, kinds []api.Resource, names []string, g *getOptions) error {
	var all []api.Object
	ns, tables := "", 0
	for _, res := range kinds {
		ns = o.namespaceFor(res)
		if g.allNamespaces {
			ns = ""
		}
		objs, _, err := fetch(ctx, o.Client().Resource(res, ns), res, ns, names, client.ListOptions{LabelSelector: g.selector})
		if err != nil {
			return err
		}
		all = append(all, objs...)
		switch {
		case g.output == "yaml" || g.output == "json":
		case g.output == "name":
			for _, obj := range objs {
				fmt.Fprintln(o.Out, kindName(res, obj.GetObjectMeta().Name))
			}
		case len(objs) > 0:
			if res.Name == api.FuncsResource.Name {
				if objs, err = o.withFuncPools(ctx, ns, objs); err != nil {
					return err
				}
			}
			if tables++; tables > 1 {
				fmt.Fprintln(o.Out)
			}
			printer := NewTablePrinter(res, g.output == "wide", g.allNamespaces, g.showLabels)
			printer.kindPrefix = true
			if err := printer.PrintTable(o.Out, objs, time.Now()); err != nil {
				return err
			}
		}
	}
	switch {
	case g.output == "yaml" || g.output == "json":
		if all == nil {
			all = []api.Object{}
		}
		return PrintObject(o.Out, g.output, struct {
			api.TypeMeta `json:",inline"`
			Metadata     api.ListMeta `json:"metadata"`
			Items        []api.Object `json:"items"`
		}{api.TypeMeta{APIVersion: "v1", Kind: "List"}, api.ListMeta{}, all})
	case len(all) == 0 && g.output != "name":
		fmt.Fprintln(o.ErrOut, noResources(kinds[0], ns))
	}
	return nil
}

func noResources(res api.Resource, ns string) string {
	if res.Namespaced && ns != "" {
		return fmt.Sprintf("No resources found in %s namespace.", ns)
	}
	return "No resources found"
}

// watch prints a row (or object) per change after what was listed, until
// ctx ends, which is how -w is meant to stop.
func (o *Options) watch(ctx context.Context, dyn *client.Dynamic, opts client.ListOptions, names []string, rv string,
	listed []api.Object, printer *TablePrinter, output string) error {
	wanted := map[string]bool{}
	for _, n := range names {
		wanted[n] = true
	}
	if len(names) == 1 {
		opts.FieldSelector = "metadata.name=" + names[0]
	}
	if len(names) > 0 {
		// Follow from the newest version read, so the first events are
		// changes and not the objects just printed.
		for _, obj := range listed {
			if v := obj.GetObjectMeta().ResourceVersion; newerVersion(v, rv) {
				rv = v
			}
		}
	}
	opts.ResourceVersion = rv
	events, err := dyn.Watch(ctx, opts)
	if err != nil {
		return err
	}
	headerPrinted := len(listed) > 0
	for ev := range events {
		if ev.Type == api.Bookmark || (len(wanted) > 0 && !wanted[ev.Object.GetObjectMeta().Name]) {
			continue
		}
		if (output == "" || output == "wide") && printer.res.Name == api.FuncsResource.Name {
			ev.Object = o.withFuncPool(ctx, ev.Object)
		}
		if err := o.printEvent(o.Out, printer, output, ev, &headerPrinted); err != nil {
			return err
		}
	}
	return nil
}

func (o *Options) printEvent(w io.Writer, printer *TablePrinter, output string, ev client.Event[api.Object], headerPrinted *bool) error {
	switch output {
	case "yaml":
		if _, err := io.WriteString(w, "---\n"); err != nil {
			return err
		}
		return PrintObject(w, output, ev.Object)
	case "json":
		return PrintObject(w, output, ev.Object)
	case "name":
		_, err := fmt.Fprintln(w, kindName(printer.res, ev.Object.GetObjectMeta().Name))
		return err
	}
	if !*headerPrinted {
		*headerPrinted = true
		return printer.PrintTable(w, []api.Object{ev.Object}, time.Now())
	}
	return printer.PrintRow(w, ev.Type, ev.Object, time.Now())
}

// newerVersion compares resource versions (etcd revisions) as numbers.
func newerVersion(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}
