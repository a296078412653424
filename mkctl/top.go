package mkctl

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/quantity"
)

func newTopCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top pods|nodes",
		Short: "Show the CPU and memory pods and nodes use",
		Long: "Show what pods (or their containers) and nodes use of CPU and memory, as kubectl top does,\n" +
			"from the metrics API (metrics.k8s.io, fed by the kubelets' readings every 10 s).",
		Example: "  mkctl top pods\n  mkctl top pods -A -l app=burner --containers\n  mkctl top nodes",
	}
	var all, containers bool
	var selector string
	pods := &cobra.Command{
		Use: "pods [NAME]", Aliases: []string{"pod", "po"}, Short: "Show the usage of pods", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return o.topPods(cmd.Context(), name, all, selector, containers)
		},
	}
	pods.Flags().BoolVarP(&all, "all-namespaces", "A", false, "pods of every namespace")
	pods.Flags().StringVarP(&selector, "selector", "l", "", "label selector")
	pods.Flags().BoolVar(&containers, "containers", false, "a line per container")
	nodes := &cobra.Command{
		Use: "nodes [NAME]", Aliases: []string{"node", "no"}, Short: "Show the usage of nodes", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return o.topNodes(cmd.Context(), name)
		},
	}
	cmd.AddCommand(pods, nodes)
	return cmd
}

// cpuAndMemory are a reading as kubectl top prints it: millicores, MiB.
func cpuAndMemory(u api.ResourceList) (int64, int64) {
	cpu, _ := quantity.MilliCPU(u[api.ResourceCPU])
	mem, _ := quantity.Bytes(u[api.ResourceMemory])
	return cpu, mem
}

func (o *Options) topPods(ctx context.Context, name string, all bool, selector string, containers bool) error {
	path := "/apis/" + api.MetricsGroupVersion + "/namespaces/" + url.PathEscape(o.Namespace) + "/pods"
	if all {
		path = "/apis/" + api.MetricsGroupVersion + "/pods"
	}
	var list api.PodMetricsList
	if name != "" && !all {
		var one api.PodMetrics
		if err := o.Client().Do(ctx, "GET", path+"/"+url.PathEscape(name), nil, &one); err != nil {
			return err
		}
		list.Items = []api.PodMetrics{one}
	} else {
		if selector != "" {
			path += "?labelSelector=" + url.QueryEscape(selector)
		}
		if err := o.Client().Do(ctx, "GET", path, nil, &list); err != nil {
			return err
		}
	}
	if len(list.Items) == 0 {
		fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", o.Namespace)
		return nil
	}
	tw := tabwriter.NewWriter(o.Out, 0, 8, 3, ' ', 0)
	header := "NAME\tCPU(cores)\tMEMORY(bytes)"
	if containers {
		header = "POD\tNAME\tCPU(cores)\tMEMORY(bytes)"
	}
	if all {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	for _, pm := range list.Items {
		prefix := ""
		if all {
			prefix = pm.Namespace + "\t"
		}
		if containers {
			for _, c := range pm.Containers {
				cpu, mem := cpuAndMemory(c.Usage)
				fmt.Fprintf(tw, "%s%s\t%s\t%dm\t%dMi\n", prefix, pm.Name, c.Name, cpu, mem>>20)
			}
			continue
		}
		var cpu, mem int64
		for _, c := range pm.Containers {
			cc, cm := cpuAndMemory(c.Usage)
			cpu, mem = cpu+cc, mem+cm
		}
		fmt.Fprintf(tw, "%s%s\t%dm\t%dMi\n", prefix, pm.Name, cpu, mem>>20)
	}
	return tw.Flush()
}

func (o *Options) topNodes(ctx context.Context, name string) error {
	var list api.NodeMetricsList
	path := "/apis/" + api.MetricsGroupVersion + "/nodes"
	if name != "" {
		var one api.NodeMetrics
		if err := o.Client().Do(ctx, "GET", path+"/"+url.PathEscape(name), nil, &one); err != nil {
			return err
		}
		list.Items = []api.NodeMetrics{one}
	} else if err := o.Client().Do(ctx, "GET", path, nil, &list); err != nil {
		return err
	}
	capacity := map[string]api.ResourceList{}
	if nodes, _, err := o.Client().Nodes().List(ctx, client.ListOptions{}); err == nil {
		for _, n := range nodes {
			capacity[n.Name] = n.Status.Allocatable
			if len(n.Status.Allocatable) == 0 {
				capacity[n.Name] = n.Status.Capacity
			}
		}
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	tw := tabwriter.NewWriter(o.Out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCPU(cores)\tCPU(%)\tMEMORY(bytes)\tMEMORY(%)")
	for _, nm := range list.Items {
		cpu, mem := cpuAndMemory(nm.Usage)
		capCPU, capMem := cpuAndMemory(capacity[nm.Name])
		fmt.Fprintf(tw, "%s\t%dm\t%s\t%dMi\t%s\n", nm.Name, cpu, percent(cpu, capCPU), mem>>20, percent(mem, capMem))
	}
	return tw.Flush()
}

func percent(v, of int64) string {
	if of <= 0 {
		return "<unknown>"
	}
	return fmt.Sprintf("%d%%", v*100/of)
}
