package mkctl

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
)

const none = "<none>"

// columns prints one kind as a table: the usual columns and, for -o wide,
// a few more after them.
type columns struct {
	headers []string
	wide    []string
	row     func(obj api.Object, now time.Time) (cells, wide []string)
}

// tables has the columns of every kind; a kind without an entry prints
// NAME and AGE.
var tables = map[string]columns{
	api.LeasesResource.Name: {
		headers: []string{"NAME", "HOLDER", "AGE"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			l := o.(*api.Lease)
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return []string{l.Name, holder, Age(l.CreationTimestamp, now)}, nil
		},
	},
	api.PodsResource.Name: {
		headers: []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
		wide:    []string{"IP", "NODE"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			p := o.(*api.Pod)
			ready, total, restarts := 0, len(p.Spec.Containers), int32(0)
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Ready {
					ready++
				}
				restarts += cs.RestartCount
			}
			return []string{p.Name, fmt.Sprintf("%d/%d", ready, total), PodStatus(p), strconv.Itoa(int(restarts)), Age(p.CreationTimestamp, now)},
				[]string{orNone(p.Status.PodIP), orNone(p.Spec.NodeName)}
		},
	},
	api.NodesResource.Name: {
		headers: []string{"NAME", "STATUS", "AGE", "VERSION"},
		wide:    []string{"INTERNAL-IP", "CPU", "MEMORY"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			n := o.(*api.Node)
			return []string{n.Name, NodeStatus(n), Age(n.CreationTimestamp, now), orNone(n.Status.NodeInfo.KubeletVersion)},
				[]string{orNone(nodeAddress(n, api.NodeInternalIP)), orNone(n.Status.Capacity[api.ResourceCPU]), orNone(n.Status.Capacity[api.ResourceMemory])}
		},
	},
	api.ReplicaSetsResource.Name: {
		headers: []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"},
		wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			rs := o.(*api.ReplicaSet)
			desired := int32(0)
			if rs.Spec.Replicas != nil {
				desired = *rs.Spec.Replicas
			}
			var names, images []string
			for _, c := range rs.Spec.Template.Spec.Containers {
				names = append(names, c.Name)
				images = append(images, c.Image)
			}
			return []string{rs.Name, itoa(desired), itoa(rs.Status.Replicas), itoa(rs.Status.ReadyReplicas), Age(rs.CreationTimestamp, now)},
				[]string{orNone(strings.Join(names, ",")), orNone(strings.Join(images, ",")), orNone(selectorString(rs.Spec.Selector))}
		},
	},
	api.ServicesResource.Name: {
		headers: []string{"NAME", "TYPE", "CLUSTER-IP", "PORT(S)", "AGE"},
		wide:    []string{"SELECTOR"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			s := o.(*api.Service)
			return []string{s.Name, s.Spec.Type, orNone(s.Spec.ClusterIP), servicePorts(s), Age(s.CreationTimestamp, now)},
				[]string{orNone(mapString(s.Spec.Selector))}
		},
	},
	api.EndpointsResource.Name: {
		headers: []string{"NAME", "ENDPOINTS", "AGE"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			e := o.(*api.Endpoints)
			return []string{e.Name, EndpointsString(e, 3), Age(e.CreationTimestamp, now)}, nil
		},
	},
	api.ConfigMapsResource.Name: {
		headers: []string{"NAME", "DATA", "AGE"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			c := o.(*api.ConfigMap)
			return []string{c.Name, strconv.Itoa(len(c.Data) + len(c.BinaryData)), Age(c.CreationTimestamp, now)}, nil
		},
	},
	api.FuncsResource.Name: {
		headers: []string{"NAME", "VERSION", "LEFT", "RIGHT", "MIN", "MAX", "COUNTER", "REPLICAS", "READY", "AGE"},
		wide:    []string{"INIT", "SERVICE-ADDRESS", "IMAGE"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			f, pool := funcAndPool(o)
			min, init, max := validation.FuncBounds(&f.Spec)
			replicas, ready := poolColumns(f, pool)
			return []string{f.Name, funcVersion(f), orNone(f.Spec.Left), orNone(f.Spec.Right), strconv.Itoa(min), strconv.Itoa(max),
					strconv.Itoa(f.Status.Counter), replicas, ready, Age(f.CreationTimestamp, now)},
				[]string{strconv.Itoa(init), orNone(f.Spec.ServiceAddress), funcImage(f)}
		},
	},
	api.FuncInstancesResource.Name: {
		headers: []string{"NAME", "FUNCTION", "STATUS", "AGE"},
		wide:    []string{"STEPS", "RESULT"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			fi := o.(*api.FuncInstance)
			return []string{fi.Name, fi.Spec.Function, orNone(fi.Status.Phase), Age(fi.CreationTimestamp, now)},
				[]string{strconv.Itoa(len(fi.Status.Steps)), orNone(truncate(oneLine(fi.Status.Result), 40))}
		},
	},
	api.TriggersResource.Name: {
		headers: []string{"NAME", "FUNCTION", "TYPE", "SOURCE", "READY", "AGE"},
		wide:    []string{"SERVED-BY", "MESSAGE"},
		row: func(o api.Object, now time.Time) ([]string, []string) {
			t := o.(*api.Trigger)
			kind, source := triggerSource(t)
			return []string{t.Name, t.Spec.Function, kind, source, strconv.FormatBool(t.Status.Ready), Age(t.CreationTimestamp, now)},
				[]string{orNone(t.Status.ServedBy), orNone(t.Status.Message)}
		},
	},
}

// triggerSource says what a trigger listens to.
func triggerSource(t *api.Trigger) (kind, source string) {
	kind, source = function.TriggerSource(t)
	return orNone(kind), orNone(source)
}

var defaultColumns = columns{
	headers: []string{"NAME", "AGE"},
	row: func(o api.Object, now time.Time) ([]string, []string) {
		m := o.GetObjectMeta()
		return []string{m.Name, Age(m.CreationTimestamp, now)}, nil
	},
}

// TablePrinter prints objects of one kind as aligned columns. It remembers
// the widths it used so rows printed later (watch events) line up.
type TablePrinter struct {
	res           api.Resource
	cols          columns
	wide          bool
	withNamespace bool
	showLabels    bool
	// eventColumn prefixes each row with the watch event type.
	eventColumn bool
	widths      []int
}

// NewTablePrinter returns the table printer of res.
func NewTablePrinter(res api.Resource, wide, withNamespace, showLabels bool) *TablePrinter {
	cols, ok := tables[res.Name]
	if !ok {
		cols = defaultColumns
	}
	return &TablePrinter{res: res, cols: cols, wide: wide, withNamespace: withNamespace && res.Namespaced, showLabels: showLabels}
}

func (p *TablePrinter) header() []string {
	var h []string
	if p.eventColumn {
		h = append(h, "EVENT")
	}
	if p.withNamespace {
		h = append(h, "NAMESPACE")
	}
	h = append(h, p.cols.headers...)
	if p.wide {
		h = append(h, p.cols.wide...)
	}
	if p.showLabels {
		h = append(h, "LABELS")
	}
	return h
}

func (p *TablePrinter) cells(event api.EventType, obj api.Object, now time.Time) []string {
	var r []string
	if p.eventColumn {
		r = append(r, string(event))
	}
	if p.withNamespace {
		r = append(r, obj.GetObjectMeta().Namespace)
	}
	cells, wide := p.cols.row(obj, now)
	r = append(r, cells...)
	if p.wide {
		r = append(r, wide...)
	}
	if p.showLabels {
		r = append(r, orNone(mapString(obj.GetObjectMeta().Labels)))
	}
	return r
}

// PrintTable prints the header and a row per object.
func (p *TablePrinter) PrintTable(w io.Writer, objs []api.Object, now time.Time) error {
	rows := [][]string{p.header()}
	for _, o := range objs {
		rows = append(rows, p.cells(api.Added, o, now))
	}
	p.widths = nil
	if p.eventColumn {
		// Room for the widest event type, so later rows line up.
		p.widths = []int{len(api.Modified)}
	}
	for _, r := range rows {
		p.grow(r)
	}
	for _, r := range rows {
		if _, err := io.WriteString(w, p.format(r)); err != nil {
			return err
		}
	}
	return nil
}

// PrintRow prints one more row, as wide as the table before it or wider.
func (p *TablePrinter) PrintRow(w io.Writer, event api.EventType, obj api.Object, now time.Time) error {
	r := p.cells(event, obj, now)
	p.grow(r)
	_, err := io.WriteString(w, p.format(r))
	return err
}

func (p *TablePrinter) grow(r []string) {
	for len(p.widths) < len(r) {
		p.widths = append(p.widths, 0)
	}
	for i, c := range r {
		p.widths[i] = max(p.widths[i], len(c))
	}
}

// format pads every cell but the last to its column's width plus three
// spaces, as kubectl's tab writer does.
func (p *TablePrinter) format(r []string) string {
	var b strings.Builder
	for i, c := range r {
		if i == len(r)-1 {
			b.WriteString(c)
			break
		}
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", p.widths[i]-len(c)+3))
	}
	b.WriteByte('\n')
	return b.String()
}

// PrintObject writes one object as JSON (indented) or YAML.
func PrintObject(w io.Writer, format string, obj any) error {
	data, err := json.MarshalIndent(obj, "", "    ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// listOf wraps objects as the KindList the apiserver serves.
func listOf(res api.Resource, objs []api.Object, rv string) any {
	items := objs
	if items == nil {
		items = []api.Object{}
	}
	return struct {
		api.TypeMeta `json:",inline"`
		Metadata     api.ListMeta `json:"metadata"`
		Items        []api.Object `json:"items"`
	}{api.TypeMeta{APIVersion: res.GroupVersion(), Kind: res.Kind + "List"}, api.ListMeta{ResourceVersion: rv}, items}
}

// PodStatus is the STATUS column of a pod: Terminating once deletion has
// begun, else the reason a container is waiting or terminated, else the phase.
func PodStatus(p *api.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason
		}
		if t := cs.State.Terminated; t != nil {
			if t.Reason != "" {
				return t.Reason
			}
			if t.Signal != 0 {
				return fmt.Sprintf("Signal:%d", t.Signal)
			}
			return fmt.Sprintf("ExitCode:%d", t.ExitCode)
		}
	}
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	if p.Status.Phase == "" {
		return api.PodPending
	}
	return p.Status.Phase
}

// NodeStatus is Ready, NotReady or Unknown from the Ready condition, with
// ",SchedulingDisabled" when the node is cordoned.
func NodeStatus(n *api.Node) string {
	s := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type != api.NodeReady {
			continue
		}
		switch c.Status {
		case api.ConditionTrue:
			s = "Ready"
		case api.ConditionFalse:
			s = "NotReady"
		}
	}
	if n.Spec.Unschedulable {
		s += ",SchedulingDisabled"
	}
	return s
}

func nodeAddress(n *api.Node, typ string) string {
	for _, a := range n.Status.Addresses {
		if a.Type == typ {
			return a.Address
		}
	}
	return ""
}

func servicePorts(s *api.Service) string {
	if len(s.Spec.Ports) == 0 {
		return none
	}
	parts := make([]string, len(s.Spec.Ports))
	for i, p := range s.Spec.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = "TCP"
		}
		if p.NodePort != 0 {
			parts[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, proto) // as kubectl prints them
		} else {
			parts[i] = fmt.Sprintf("%d/%s", p.Port, proto)
		}
	}
	return strings.Join(parts, ",")
}

// endpointList lists "ip:port" of an Endpoints' ready addresses; an address
// with its own port (host networking) uses it, others take the subset ports.
func endpointList(e *api.Endpoints) []string {
	var out []string
	for _, s := range e.Subsets {
		for _, a := range s.Addresses {
			switch {
			case a.Port != 0:
				out = append(out, fmt.Sprintf("%s:%d", a.IP, a.Port))
			case len(s.Ports) == 0:
				out = append(out, a.IP)
			default:
				for _, p := range s.Ports {
					out = append(out, fmt.Sprintf("%s:%d", a.IP, p.Port))
				}
			}
		}
	}
	return out
}

// EndpointsString shows up to limit endpoints and counts the rest, as
// kubectl does ("1.2.3.4:80,1.2.3.5:80 + 3 more...").
func EndpointsString(e *api.Endpoints, limit int) string {
	list := endpointList(e)
	if len(list) == 0 {
		return none
	}
	if limit > 0 && len(list) > limit {
		return strings.Join(list[:limit], ",") + fmt.Sprintf(" + %d more...", len(list)-limit)
	}
	return strings.Join(list, ",")
}

// funcImage is the image a function's pods run: its own, or the Python
// runtime its source runs in.
func funcImage(f *api.Func) string {
	if f.Spec.Image != "" {
		return f.Spec.Image
	}
	return orDefault(f.Spec.Runtime, validation.DefaultFuncRuntime)
}

func funcVersion(f *api.Func) string {
	if f.APIVersion == "" {
		return api.FuncAPIVersionV2
	}
	return f.APIVersion
}

// Age is how long ago t was, as kubectl writes it: 45s, 3m20s, 14m, 5h3m,
// 20h, 3d4h, 40d, 2y30d.
func Age(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<unknown>"
	}
	return HumanDuration(now.Sub(*t))
}

// HumanDuration is kubectl's rendering of a duration: precise when short,
// coarser as it grows.
func HumanDuration(d time.Duration) string {
	seconds := int(d.Seconds())
	switch {
	case seconds < -1:
		return "<invalid>"
	case seconds < 0:
		return "0s"
	case seconds < 60*2:
		return fmt.Sprintf("%ds", seconds)
	}
	minutes := int(d / time.Minute)
	if minutes < 10 {
		if s := seconds % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", minutes, s)
		}
		return fmt.Sprintf("%dm", minutes)
	}
	if minutes < 60*3 {
		return fmt.Sprintf("%dm", minutes)
	}
	hours := int(d / time.Hour)
	switch {
	case hours < 8:
		if m := minutes % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", hours, m)
		}
		return fmt.Sprintf("%dh", hours)
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 24*8:
		if h := hours % 24; h != 0 {
			return fmt.Sprintf("%dd%dh", hours/24, h)
		}
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*2:
		return fmt.Sprintf("%dd", hours/24)
	case hours < 24*365*8:
		if dy := (hours / 24) % 365; dy != 0 {
			return fmt.Sprintf("%dy%dd", hours/24/365, dy)
		}
		return fmt.Sprintf("%dy", hours/24/365)
	}
	return fmt.Sprintf("%dy", hours/24/365)
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// mapString writes labels or a selector as k=v,k=v in key order.
func mapString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func selectorString(ls *api.LabelSelector) string {
	sel, err := labels.FromLabelSelector(ls)
	if err != nil {
		return ""
	}
	return sel.String()
}
