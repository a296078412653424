package mkctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/printers"
)

func newDescribeCommand(o *Options) *cobra.Command {
	var selector string
	cmd := &cobra.Command{
		Use:   "describe KIND [NAME...]",
		Short: "Show the details of objects",
		Long: "Show the details of the named objects, or of every object of the kind\n" +
			"(narrowed by -l). Kinds: " + kindList() + ".",
		Example: "  mkctl describe pod web\n  mkctl describe func hello\n  mkctl describe svc -l app=web",
		Args:    kindArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := lookupKind(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			dyn := o.Client().Resource(res, o.namespaceFor(res))
			var objs []api.Object
			if len(args) > 1 {
				for _, n := range args[1:] {
					obj, err := dyn.Get(ctx, n)
					if err != nil {
						return err
					}
					objs = append(objs, obj)
				}
			} else {
				objs, _, err = dyn.List(ctx, client.ListOptions{LabelSelector: selector})
				if err != nil {
					return err
				}
				if len(objs) == 0 {
					fmt.Fprintln(o.ErrOut, noResources(res, o.namespaceFor(res)))
					return nil
				}
			}
			for i, obj := range objs {
				if i > 0 {
					fmt.Fprintln(o.Out)
				}
				text, err := o.describe(ctx, res, obj, time.Now())
				if err != nil {
					return err
				}
				if _, err := io.WriteString(o.Out, text); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector, when no name is given")
	return cmd
}

// describeWriter writes "Key:  value" lines aligned per block, indented two
// spaces per level; free text (function source) bypasses the alignment.
type describeWriter struct {
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func newDescribeWriter() *describeWriter {
	w := &describeWriter{}
	w.tw = tabwriter.NewWriter(&w.buf, 0, 8, 2, ' ', 0)
	return w
}

func (w *describeWriter) line(level int, format string, args ...any) {
	fmt.Fprintf(w.tw, strings.Repeat("  ", level)+format+"\n", args...)
}

// kv writes "key:\tvalue"; an empty value shows as <none>.
func (w *describeWriter) kv(level int, key string, value any) {
	s := fmt.Sprint(value)
	if s == "" {
		s = printers.None
	}
	w.line(level, "%s:\t%s", key, s)
}

// text writes s verbatim, indented, outside the column alignment.
func (w *describeWriter) text(level int, s string) {
	w.tw.Flush()
	indent := strings.Repeat("  ", level)
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			w.buf.WriteString("\n")
			continue
		}
		w.buf.WriteString(indent + l + "\n")
	}
}

// labels writes a map one "k=v" per line under key, as kubectl does.
func (w *describeWriter) mapLines(level int, key string, m map[string]string, sep string) {
	if len(m) == 0 {
		w.kv(level, key, printers.None)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		label := key + ":"
		if i > 0 {
			label = ""
		}
		w.line(level, "%s\t%s%s%s", label, k, sep, m[k])
	}
}

func (w *describeWriter) String() string {
	w.tw.Flush()
	return w.buf.String()
}

// describe renders one object; it reads related objects (a service's
// endpoints, a replicaset's pods) where they help.
func (o *Options) describe(ctx context.Context, res api.Resource, obj api.Object, now time.Time) (string, error) {
	w := newDescribeWriter()
	meta := obj.GetObjectMeta()
	w.kv(0, "Name", meta.Name)
	if res.Namespaced {
		w.kv(0, "Namespace", meta.Namespace)
	}
	w.mapLines(0, "Labels", meta.Labels, "=")
	w.mapLines(0, "Annotations", meta.Annotations, ": ")
	w.kv(0, "CreationTimestamp", timestamp(meta.CreationTimestamp))
	if meta.DeletionTimestamp != nil {
		w.kv(0, "DeletionTimestamp", timestamp(meta.DeletionTimestamp))
	}
	for _, ref := range meta.OwnerReferences {
		w.kv(0, "Controlled By", ref.Kind+"/"+ref.Name)
	}
	var err error
	switch v := obj.(type) {
	case *api.Pod:
		describePod(w, v, now)
	case *api.ReplicaSet:
		err = o.describeReplicaSet(ctx, w, v)
	case *api.Service:
		err = o.describeService(ctx, w, v)
	case *api.Endpoints:
		describeEndpoints(w, v)
	case *api.Node:
		err = o.describeNode(ctx, w, v, now)
	case *api.ConfigMap:
		describeConfigMap(w, v)
	case *api.Func:
		describeFunc(w, v)
	case *api.FuncInstance:
		describeFuncInstance(w, v)
	}
	if err != nil {
		return "", err
	}
	if res.Name != api.EventsResource.Name {
		o.describeEvents(ctx, w, obj, now)
	}
	return w.String(), nil
}

// describeEvents lists the events about obj, as kubectl describe does:
// oldest first, with how often and when last each happened.
func (o *Options) describeEvents(ctx context.Context, w *describeWriter, obj api.Object, now time.Time) {
	meta := obj.GetObjectMeta()
	ns := meta.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	sel := "involvedObject.name=" + meta.Name
	if meta.UID != "" {
		sel += ",involvedObject.uid=" + meta.UID
	}
	evs, _, err := o.Client().Events(ns).List(ctx, client.ListOptions{FieldSelector: sel})
	if err != nil {
		w.kv(0, "Events", "<unknown: "+err.Error()+">")
		return
	}
	if len(evs) == 0 {
		w.kv(0, "Events", printers.None)
		return
	}
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i].FirstTimestamp, evs[j].FirstTimestamp
		return a != nil && b != nil && a.Before(*b)
	})
	w.line(0, "Events:")
	w.line(1, "Type\tReason\tAge\tFrom\tMessage")
	w.line(1, "----\t------\t----\t----\t-------")
	for _, e := range evs {
		age := printers.Age(e.LastTimestamp, now)
		if e.Count > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", age, e.Count, printers.Age(e.FirstTimestamp, now))
		}
		from := e.Source.Component
		if e.Source.Host != "" {
			from += ", " + e.Source.Host
		}
		w.line(1, "%s\t%s\t%s\t%s\t%s", e.Type, e.Reason, age, from, e.Message)
	}
}

func timestamp(t *time.Time) string {
	if t == nil {
		return printers.None
	}
	return t.Local().Format(time.RFC1123Z)
}

func describePod(w *describeWriter, p *api.Pod, now time.Time) {
	node := printers.OrNone(p.Spec.NodeName)
	if p.Spec.NodeName != "" && p.Status.HostIP != "" {
		node += "/" + p.Status.HostIP
	}
	w.kv(0, "Node", node)
	w.kv(0, "Start Time", timestamp(p.Status.StartTime))
	status := p.Status.Phase
	if p.DeletionTimestamp != nil {
		status = "Terminating (lasts " + printers.Age(p.DeletionTimestamp, now) + ")"
		if p.DeletionGracePeriodSeconds != nil {
			w.kv(0, "Termination Grace Period", fmt.Sprintf("%ds", *p.DeletionGracePeriodSeconds))
		}
	}
	w.kv(0, "Status", status)
	if p.Status.Reason != "" {
		w.kv(0, "Reason", p.Status.Reason)
	}
	if p.Status.Message != "" {
		w.kv(0, "Message", oneLine(p.Status.Message))
	}
	w.kv(0, "IP", p.Status.PodIP)
	w.kv(0, "Restart Policy", p.Spec.RestartPolicy)
	statuses := map[string]api.ContainerStatus{}
	for _, cs := range p.Status.ContainerStatuses {
		statuses[cs.Name] = cs
	}
	w.line(0, "Containers:")
	for _, c := range p.Spec.Containers {
		cs, known := statuses[c.Name]
		w.line(1, "%s:", c.Name)
		if cs.ContainerID != "" {
			w.kv(2, "Container ID", cs.ContainerID)
		}
		w.kv(2, "Image", c.Image)
		w.kv(2, "Port(s)", containerPorts(c.Ports, cs.Ports))
		if len(c.Command) > 0 {
			w.kv(2, "Command", strings.Join(c.Command, " "))
		}
		if len(c.Args) > 0 {
			w.kv(2, "Args", strings.Join(c.Args, " "))
		}
		if known {
			describeState(w, "State", cs.State)
			if cs.LastState != (api.ContainerState{}) {
				describeState(w, "Last State", cs.LastState)
			}
			w.kv(2, "Ready", strconv.FormatBool(cs.Ready))
			w.kv(2, "Restart Count", cs.RestartCount)
		} else {
			w.kv(2, "State", "Waiting")
			w.kv(2, "Restart Count", 0)
		}
		if len(c.Resources.Limits) > 0 {
			w.line(2, "Limits:")
			w.resources(3, c.Resources.Limits)
		}
		if len(c.Resources.Requests) > 0 {
			w.line(2, "Requests:")
			w.resources(3, c.Resources.Requests)
		}
		if len(c.Env) > 0 {
			w.line(2, "Environment:")
			for _, e := range c.Env {
				w.kv(3, e.Name, e.Value)
			}
		}
		if len(c.VolumeMounts) > 0 {
			w.line(2, "Mounts:")
			for _, m := range c.VolumeMounts {
				mode := "rw"
				if m.ReadOnly {
					mode = "ro"
				}
				w.line(3, "%s from %s (%s)", m.MountPath, m.Name, mode)
			}
		}
	}
	w.line(0, "Conditions:")
	if len(p.Status.Conditions) == 0 {
		w.line(1, printers.None)
	} else {
		w.line(1, "Type\tStatus")
		for _, c := range p.Status.Conditions {
			w.line(1, "%s\t%s", c.Type, c.Status)
		}
	}
	if len(p.Spec.Volumes) > 0 {
		w.line(0, "Volumes:")
		for _, v := range p.Spec.Volumes {
			w.line(1, "%s:", v.Name)
			switch {
			case v.ConfigMap != nil:
				w.kv(2, "Type", "ConfigMap")
				w.kv(2, "Name", v.ConfigMap.Name)
			case v.HostPath != nil:
				w.kv(2, "Type", "HostPath")
				w.kv(2, "Path", v.HostPath.Path)
			case v.EmptyDir != nil:
				w.kv(2, "Type", "EmptyDir")
			}
		}
	}
	w.kv(0, "Node-Selectors", printers.MapString(p.Spec.NodeSelector))
}

func (w *describeWriter) resources(level int, rl api.ResourceList) {
	keys := make([]string, 0, len(rl))
	for k := range rl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.kv(level, k, rl[k])
	}
}

// containerPorts shows the declared ports and, for those the kubelet
// allocated (containerPort 0), the port it picked.
func containerPorts(spec, allocated []api.ContainerPort) string {
	if len(spec) == 0 && len(allocated) == 0 {
		return printers.None
	}
	got := map[string]int32{}
	for _, p := range allocated {
		got[p.Name] = p.ContainerPort
	}
	var parts []string
	for _, p := range spec {
		proto := p.Protocol
		if proto == "" {
			proto = "TCP"
		}
		s := fmt.Sprintf("%d/%s", p.ContainerPort, proto)
		if p.ContainerPort == 0 {
			if n, ok := got[p.Name]; ok && n != 0 {
				s = fmt.Sprintf("%d/%s (allocated)", n, proto)
			} else {
				s = "auto/" + proto
			}
		}
		if p.Name != "" {
			s = p.Name + " " + s
		}
		parts = append(parts, s)
	}
	if len(spec) == 0 {
		for _, p := range allocated {
			parts = append(parts, fmt.Sprintf("%d/TCP (allocated)", p.ContainerPort))
		}
	}
	return strings.Join(parts, ", ")
}

func describeState(w *describeWriter, key string, s api.ContainerState) {
	switch {
	case s.Running != nil:
		w.kv(2, key, "Running")
		w.kv(3, "Started", timestamp(s.Running.StartedAt))
	case s.Waiting != nil:
		w.kv(2, key, "Waiting")
		if s.Waiting.Reason != "" {
			w.kv(3, "Reason", s.Waiting.Reason)
		}
		if s.Waiting.Message != "" {
			w.kv(3, "Message", oneLine(s.Waiting.Message))
		}
	case s.Terminated != nil:
		t := s.Terminated
		w.kv(2, key, "Terminated")
		if t.Reason != "" {
			w.kv(3, "Reason", t.Reason)
		}
		if t.Message != "" {
			w.kv(3, "Message", oneLine(t.Message))
		}
		w.kv(3, "Exit Code", t.ExitCode)
		if t.Signal != 0 {
			w.kv(3, "Signal", t.Signal)
		}
		w.kv(3, "Started", timestamp(t.StartedAt))
		w.kv(3, "Finished", timestamp(t.FinishedAt))
	default:
		w.kv(2, key, "Waiting")
	}
}

func (o *Options) describeReplicaSet(ctx context.Context, w *describeWriter, rs *api.ReplicaSet) error {
	desired := int32(0)
	if rs.Spec.Replicas != nil {
		desired = *rs.Spec.Replicas
	}
	sel, selErr := labels.FromLabelSelector(rs.Spec.Selector)
	w.kv(0, "Selector", printers.SelectorString(rs.Spec.Selector))
	w.kv(0, "Replicas", fmt.Sprintf("%d current / %d desired", rs.Status.Replicas, desired))
	if selErr == nil && !sel.Empty() {
		pods, _, err := o.Client().Resource(api.PodsResource, rs.Namespace).List(ctx, client.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return err
		}
		counts := map[string]int{}
		for _, obj := range pods {
			p := obj.(*api.Pod)
			if !ownedBy(p.OwnerReferences, rs.UID) {
				continue
			}
			counts[p.Status.Phase]++
		}
		w.kv(0, "Pods Status", fmt.Sprintf("%d Running / %d Waiting / %d Succeeded / %d Failed",
			counts[api.PodRunning], counts[api.PodPending]+counts[""], counts[api.PodSucceeded], counts[api.PodFailed]))
	}
	w.line(0, "Pod Template:")
	w.mapLines(1, "Labels", rs.Spec.Template.Labels, "=")
	w.line(1, "Containers:")
	for _, c := range rs.Spec.Template.Spec.Containers {
		w.line(2, "%s:", c.Name)
		w.kv(3, "Image", c.Image)
		w.kv(3, "Port(s)", containerPorts(c.Ports, nil))
		if len(c.Command) > 0 {
			w.kv(3, "Command", strings.Join(c.Command, " "))
		}
		if len(c.Resources.Limits) > 0 {
			w.line(3, "Limits:")
			w.resources(4, c.Resources.Limits)
		}
		if len(c.Resources.Requests) > 0 {
			w.line(3, "Requests:")
			w.resources(4, c.Resources.Requests)
		}
	}
	return nil
}

// ownedBy: a pod with no controller is counted by selector alone, as the
// ReplicaSet would adopt it.
func ownedBy(refs []api.OwnerReference, uid string) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return r.UID == uid
		}
	}
	return true
}

func (o *Options) describeService(ctx context.Context, w *describeWriter, s *api.Service) error {
	w.kv(0, "Selector", printers.MapString(s.Spec.Selector))
	w.kv(0, "Type", s.Spec.Type)
	w.kv(0, "IP", s.Spec.ClusterIP)
	for _, p := range s.Spec.Ports {
		name := p.Name
		if name == "" {
			name = "<unset>"
		}
		w.kv(0, "Port", fmt.Sprintf("%s  %d/%s", name, p.Port, orDefault(p.Protocol, "TCP")))
		w.kv(0, "TargetPort", p.TargetPort)
		if p.NodePort != 0 {
			w.kv(0, "NodePort", fmt.Sprintf("%s  %d/%s", name, p.NodePort, orDefault(p.Protocol, "TCP")))
		}
	}
	ep, err := o.Client().Resource(api.EndpointsResource, s.Namespace).Get(ctx, s.Name)
	switch {
	case errdefs.IsNotFound(err):
		w.kv(0, "Endpoints", printers.None)
	case err != nil:
		return err
	default:
		w.kv(0, "Endpoints", printers.EndpointsString(ep.(*api.Endpoints), 0))
	}
	return nil
}

func describeEndpoints(w *describeWriter, e *api.Endpoints) {
	w.line(0, "Subsets:")
	if len(e.Subsets) == 0 {
		w.line(1, printers.None)
		return
	}
	addrs := func(as []api.EndpointAddress) string {
		parts := make([]string, len(as))
		for i, a := range as {
			parts[i] = a.IP
			if a.Port != 0 {
				parts[i] = fmt.Sprintf("%s:%d", a.IP, a.Port)
			}
		}
		return strings.Join(parts, ",")
	}
	for _, s := range e.Subsets {
		w.kv(1, "Addresses", addrs(s.Addresses))
		w.kv(1, "NotReadyAddresses", addrs(s.NotReadyAddresses))
		w.line(1, "Ports:")
		if len(s.Ports) == 0 {
			w.line(2, printers.None)
			continue
		}
		w.line(2, "Name\tPort\tProtocol")
		w.line(2, "----\t----\t--------")
		for _, p := range s.Ports {
			w.line(2, "%s\t%d\t%s", orDefault(p.Name, "<unset>"), p.Port, orDefault(p.Protocol, "TCP"))
		}
	}
}

func (o *Options) describeNode(ctx context.Context, w *describeWriter, n *api.Node, now time.Time) error {
	w.kv(0, "PodCIDR", printers.OrNone(n.Spec.PodCIDR))
	w.kv(0, "PodCIDRs", printers.OrNone(strings.Join(n.Spec.PodCIDRs, ",")))
	w.kv(0, "Unschedulable", strconv.FormatBool(n.Spec.Unschedulable))
	w.line(0, "Conditions:")
	if len(n.Status.Conditions) == 0 {
		w.line(1, printers.None)
	} else {
		w.line(1, "Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage")
		w.line(1, "----\t------\t-----------------\t------------------\t------\t-------")
		for _, c := range n.Status.Conditions {
			w.line(1, "%s\t%s\t%s\t%s\t%s\t%s", c.Type, c.Status, timestamp(c.LastHeartbeatTime), timestamp(c.LastTransitionTime),
				c.Reason, oneLine(c.Message))
		}
	}
	w.line(0, "Addresses:")
	if len(n.Status.Addresses) == 0 {
		w.line(1, printers.None)
	}
	for _, a := range n.Status.Addresses {
		w.kv(1, a.Type, a.Address)
	}
	if len(n.Status.Capacity) > 0 {
		w.line(0, "Capacity:")
		w.resources(1, n.Status.Capacity)
	}
	if len(n.Status.Allocatable) > 0 {
		w.line(0, "Allocatable:")
		w.resources(1, n.Status.Allocatable)
	}
	info := n.Status.NodeInfo
	if info != (api.NodeSystemInfo{}) {
		w.line(0, "System Info:")
		w.kv(1, "Kernel Version", info.KernelVersion)
		w.kv(1, "Operating System", info.OperatingSystem)
		w.kv(1, "Architecture", info.Architecture)
		w.kv(1, "Container Runtime Version", info.ContainerRuntimeVersion)
		w.kv(1, "Kubelet Version", info.KubeletVersion)
	}
	if port := n.Status.DaemonEndpoints.KubeletEndpoint.Port; port != 0 {
		w.kv(0, "Kubelet Port", port)
	}
	pods, _, err := o.Client().Resource(api.PodsResource, "").List(ctx, client.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
	if err != nil {
		return err
	}
	w.line(0, "Pods:\t(%d in total)", len(pods))
	if len(pods) > 0 {
		w.line(1, "Namespace\tName\tStatus\tAge")
		w.line(1, "---------\t----\t------\t---")
		for _, obj := range pods {
			p := obj.(*api.Pod)
			w.line(1, "%s\t%s\t%s\t%s", p.Namespace, p.Name, printers.PodStatus(p), printers.Age(p.CreationTimestamp, now))
		}
	}
	return nil
}

func describeConfigMap(w *describeWriter, c *api.ConfigMap) {
	w.text(0, "\nData\n====")
	for _, k := range sortedKeys(c.Data) {
		w.text(0, k+":\n----\n"+c.Data[k])
		w.text(0, "")
	}
	if len(c.BinaryData) > 0 {
		w.text(0, "BinaryData\n====")
		keys := make([]string, 0, len(c.BinaryData))
		for k := range c.BinaryData {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w.text(0, fmt.Sprintf("%s: %d bytes", k, len(c.BinaryData[k])))
		}
	}
}

// pluginList names plugins with their versions, as traces do
// ("tracing@1, audit@2.1"); a version only known when the module runs is
// left out.
func pluginList(spec *api.FuncSpec, names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if v := function.PluginVersion(spec, n); v != "" {
			out[i] += "@" + v
		}
	}
	return strings.Join(out, ", ")
}

// resourceLine is a resource list on one line: "cpu=250m, memory=64Mi".
func resourceLine(rl api.ResourceList) string {
	var parts []string
	for _, k := range sortedKeys(rl) {
		parts = append(parts, k+"="+rl[k])
	}
	return strings.Join(parts, ", ")
}

func describeFunc(w *describeWriter, f *api.Func) {
	mode := "v2 (calls go to a warm pool of pods)"
	if printers.FuncVersion(f) == api.FuncAPIVersionV1 {
		mode = "v1 (each call step runs in a fresh pod)"
	}
	w.kv(0, "Version", mode)
	w.kv(0, "Left", f.Spec.Left)
	w.kv(0, "Right", f.Spec.Right)
	min, init, max := validation.FuncBounds(&f.Spec)
	w.kv(0, "Instances", fmt.Sprintf("min %d / init %d / max %d", min, init, max))
	timeout := api.DefaultFuncTimeoutSeconds
	if f.Spec.TimeoutSeconds != nil {
		timeout = *f.Spec.TimeoutSeconds
	}
	w.kv(0, "Timeout", fmt.Sprintf("%ds", timeout))
	idle := "the cluster's (60s by default)"
	if t := f.Spec.IdleTimeoutSeconds; t != nil {
		idle = (time.Duration(*t) * time.Second).String()
	}
	w.kv(0, "Idle Timeout", idle)
	if r := f.Spec.Resources; r != nil && len(r.Requests)+len(r.Limits) > 0 {
		w.line(0, "Resources:")
		w.kv(1, "Requests", printers.OrNone(resourceLine(r.Requests)))
		w.kv(1, "Limits", printers.OrNone(resourceLine(r.Limits)))
	}
	if len(f.Spec.Outputs) > 0 {
		w.line(0, "Outputs:")
		for _, o := range f.Spec.Outputs {
			to := "function " + o.Function
			switch {
			case o.Subject != "":
				to = "subject " + o.Subject
			case o.URL != "":
				to = "url " + o.URL
			}
			w.kv(1, o.Name, to)
		}
	}
	if len(f.Spec.Config) > 0 {
		w.line(0, "Config:")
		for _, k := range sortedKeys(f.Spec.Config) {
			w.kv(1, k, f.Spec.Config[k])
		}
	}
	if f.Spec.Image != "" {
		w.kv(0, "Image", f.Spec.Image)
	} else {
		w.kv(0, "Runtime", orDefault(f.Spec.Runtime, api.DefaultFuncRuntime))
	}
	w.kv(0, "Service Address", f.Spec.ServiceAddress)
	if p := f.Spec.Plugins; p != nil && (len(p.Pre) > 0 || len(p.Post) > 0) {
		w.line(0, "Plugins:")
		w.kv(1, "Pre", printers.OrNone(pluginList(&f.Spec, p.Pre)))
		w.kv(1, "Post", printers.OrNone(pluginList(&f.Spec, p.Post)))
	}
	if len(f.Spec.Files) > 0 {
		w.line(0, "Files:")
		for _, name := range sortedKeys(f.Spec.Files) {
			size := "<not valid base64>"
			if data, err := base64.StdEncoding.DecodeString(f.Spec.Files[name]); err == nil {
				size = fmt.Sprintf("%d bytes", len(data))
			}
			w.text(1, name+": "+size)
		}
	}
	if len(f.Spec.Traffic) > 0 {
		w.line(0, "Traffic:")
		for _, t := range f.Spec.Traffic {
			rev := "revision " + strconv.FormatInt(t.Revision, 10)
			if t.Latest {
				rev = "latest"
			}
			w.kv(1, rev, strconv.Itoa(t.Percent)+"%")
		}
	}
	w.line(0, "Status:")
	w.kv(1, "Revision", fmt.Sprintf("%d (of %d made; mkctl func revisions %s)", f.Status.Revision, f.Status.RevisionsMade, f.Name))
	w.kv(1, "Counter", f.Status.Counter)
	w.kv(1, "Last Call", timestamp(f.Status.TimeStamp))
	w.kv(1, "Service ID", f.Status.ServiceUID)
	w.kv(1, "ReplicaSet ID", f.Status.ReplicaSetUID)
	if len(f.Status.Conditions) > 0 {
		w.line(0, "Conditions:")
		w.line(1, "Type\tStatus\tReason\tMessage")
		for _, c := range f.Status.Conditions {
			w.line(1, "%s\t%s\t%s\t%s", c.Type, c.Status, c.Reason, oneLine(c.Message))
		}
	}
	if f.Spec.Image != "" {
		// The image is the code: its entrypoint serves the calls.
		return
	}
	w.line(0, "PreRun:")
	w.text(1, decodedSource(f.Spec.PreRun))
	w.line(0, "Function:")
	w.text(1, decodedSource(f.Spec.Function))
}

// decodedSource shows base64 source as text, or says why it cannot.
func decodedSource(b64 string) string {
	if b64 == "" {
		return printers.None
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "<not valid base64: " + err.Error() + ">"
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "<empty>"
	}
	return string(data)
}

func describeFuncInstance(w *describeWriter, fi *api.FuncInstance) {
	w.kv(0, "Function", fi.Spec.Function)
	w.kv(0, "Status", fi.Status.Phase)
	w.kv(0, "Arg", oneLine(shown(fi.Spec.Arg)))
	w.kv(0, "Result", oneLine(shown(fi.Status.Result)))
	if fi.Status.Error != "" {
		w.kv(0, "Error", oneLine(fi.Status.Error))
	}
	w.kv(0, "Hops", fi.Status.Hops)
	w.kv(0, "Completed", timestamp(fi.Status.CompletionTime))
	if n := fi.Status.Next; n != nil {
		w.kv(0, "Next", fmt.Sprintf("%s(%s)", n.Function, printers.Truncate(oneLine(shown(n.Arg)), 60)))
	}
	w.line(0, "Steps:")
	if len(fi.Status.Steps) == 0 {
		w.line(1, printers.None)
		return
	}
	w.line(1, "Function\tPod\tNode\tCheck\tDuration\tResult\tError")
	w.line(1, "--------\t---\t----\t-----\t--------\t------\t-----")
	for _, s := range fi.Status.Steps {
		check := "-"
		if s.Check != nil {
			check = strconv.FormatBool(*s.Check)
		}
		w.line(1, "%s\t%s\t%s\t%s\t%dms\t%s\t%s", s.Function, printers.OrNone(s.Pod), printers.OrNone(s.Node), check, s.DurationMs,
			printers.Truncate(oneLine(shown(s.Result)), 40), printers.Truncate(oneLine(s.Error), 60))
	}
	for i, s := range fi.Status.Steps {
		if s.Superseded {
			w.kv(0, fmt.Sprintf("Superseded (step %d)", i+1), "a step call moved the call on while it ran: its outcome was not followed")
		}
		for _, e := range s.PluginErrors {
			w.kv(0, fmt.Sprintf("Post Plugin Failed (step %d)", i+1), oneLine(e))
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
