// Package printers says how each kind shows as a table row, as kubectl
// shows it: the columns mkctl prints and the apiserver serves as Tables.
package printers

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/nodecondition"
)

// None is what a table shows for a missing value.
const None = "<none>"

// Columns are how one kind prints as a table: the usual columns and, for
// -o wide, a few more after them.
type Columns struct {
	Headers []string
	Wide    []string
	Row     func(obj api.Object, now time.Time) (cells, wide []string)
}

// tables has the columns of every kind; a kind without an entry prints
// NAME and AGE.
var tables = map[string]Columns{
	api.LeasesResource.Name: {
		Headers: []string{"NAME", "HOLDER", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			l := o.(*api.Lease)
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return []string{l.Name, holder, Age(l.CreationTimestamp, now)}, nil
		},
	},
	api.PodsResource.Name: {
		Headers: []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
		Wide:    []string{"IP", "NODE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			p := o.(*api.Pod)
			ready, total, restarts := 0, len(p.Spec.Containers), int32(0)
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Ready {
					ready++
				}
				restarts += cs.RestartCount
			}
			for _, cs := range p.Status.InitContainerStatuses {
				restarts += cs.RestartCount
			}
			return []string{p.Name, fmt.Sprintf("%d/%d", ready, total), PodStatus(p), strconv.Itoa(int(restarts)), Age(p.CreationTimestamp, now)},
				[]string{OrNone(p.Status.PodIP), OrNone(p.Spec.NodeName)}
		},
	},
	api.NodesResource.Name: {
		Headers: []string{"NAME", "STATUS", "AGE", "VERSION"},
		Wide:    []string{"INTERNAL-IP", "CPU", "MEMORY"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			n := o.(*api.Node)
			return []string{n.Name, NodeStatus(n), Age(n.CreationTimestamp, now), OrNone(n.Status.NodeInfo.KubeletVersion)},
				[]string{OrNone(NodeAddress(n, api.NodeInternalIP)), OrNone(n.Status.Capacity[api.ResourceCPU]), OrNone(n.Status.Capacity[api.ResourceMemory])}
		},
	},
	api.DeploymentsResource.Name: {
		Headers: []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"},
		Wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			d := o.(*api.Deployment)
			desired := int32(1)
			if d.Spec.Replicas != nil {
				desired = *d.Spec.Replicas
			}
			names, images := containerNamesImages(d.Spec.Template.Spec.Containers)
			return []string{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desired), Itoa(d.Status.UpdatedReplicas), Itoa(d.Status.AvailableReplicas), Age(d.CreationTimestamp, now)},
				[]string{names, images, OrNone(SelectorString(d.Spec.Selector))}
		},
	},
	// kubectl's columns for a StatefulSet: ready of desired, and in wide
	// its containers and images.
	api.StatefulSetsResource.Name: {
		Headers: []string{"NAME", "READY", "AGE"},
		Wide:    []string{"CONTAINERS", "IMAGES"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			s := o.(*api.StatefulSet)
			desired := int32(1)
			if s.Spec.Replicas != nil {
				desired = *s.Spec.Replicas
			}
			names, images := containerNamesImages(s.Spec.Template.Spec.Containers)
			return []string{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, desired), Age(s.CreationTimestamp, now)},
				[]string{names, images}
		},
	},
	api.DaemonSetsResource.Name: {
		Headers: []string{"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"},
		Wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			d := o.(*api.DaemonSet)
			names, images := containerNamesImages(d.Spec.Template.Spec.Containers)
			st := d.Status
			return []string{d.Name, Itoa(st.DesiredNumberScheduled), Itoa(st.CurrentNumberScheduled), Itoa(st.NumberReady),
					Itoa(st.UpdatedNumberScheduled), Itoa(st.NumberAvailable), OrNone(MapString(d.Spec.Template.Spec.NodeSelector)), Age(d.CreationTimestamp, now)},
				[]string{names, images, OrNone(SelectorString(d.Spec.Selector))}
		},
	},
	api.ResourceQuotasResource.Name: {
		Headers: []string{"NAME", "AGE", "REQUEST", "LIMIT"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			q := o.(*api.ResourceQuota)
			return []string{q.Name, Age(q.CreationTimestamp, now), QuotaUsage(q, false), QuotaUsage(q, true)}, nil
		},
	},
	api.LimitRangesResource.Name: {
		Headers: []string{"NAME", "CREATED AT"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			lr := o.(*api.LimitRange)
			at := None
			if lr.CreationTimestamp != nil {
				at = lr.CreationTimestamp.UTC().Format(time.RFC3339)
			}
			return []string{lr.Name, at}, nil
		},
	},
	api.IngressesResource.Name: {
		Headers: []string{"NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			ing := o.(*api.Ingress)
			class := None
			if ing.Spec.IngressClassName != nil {
				class = *ing.Spec.IngressClassName
			}
			var addrs []string
			for _, a := range ing.Status.LoadBalancer.Ingress {
				if a.IP != "" {
					addrs = append(addrs, a.IP)
				} else if a.Hostname != "" {
					addrs = append(addrs, a.Hostname)
				}
			}
			ports := "80"
			if len(ing.Spec.TLS) > 0 {
				ports = "80, 443"
			}
			return []string{ing.Name, class, ingressHosts(ing.Spec.Rules), strings.Join(addrs, ","), ports, Age(ing.CreationTimestamp, now)}, nil
		},
	},
	api.NetworkPoliciesResource.Name: {
		Headers: []string{"NAME", "POD-SELECTOR", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			np := o.(*api.NetworkPolicy)
			return []string{np.Name, OrNone(SelectorString(&np.Spec.PodSelector)), Age(np.CreationTimestamp, now)}, nil
		},
	},
	api.PodDisruptionBudgetsResource.Name: {
		Headers: []string{"NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			pdb := o.(*api.PodDisruptionBudget)
			minAvailable, maxUnavailable := "N/A", "N/A"
			if v := pdb.Spec.MinAvailable; v != nil {
				minAvailable = string(*v)
			}
			if v := pdb.Spec.MaxUnavailable; v != nil {
				maxUnavailable = string(*v)
			}
			return []string{pdb.Name, minAvailable, maxUnavailable, strconv.Itoa(int(pdb.Status.DisruptionsAllowed)), Age(pdb.CreationTimestamp, now)}, nil
		},
	},
	// Kubernetes' table names PREEMPTIONPOLICY among its columns but fills
	// it only for -o wide.
	api.PriorityClassesResource.Name: {
		Headers: []string{"NAME", "VALUE", "GLOBAL-DEFAULT", "AGE"},
		Wide:    []string{"PREEMPTIONPOLICY"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			pc := o.(*api.PriorityClass)
			policy := ""
			if pc.PreemptionPolicy != nil {
				policy = string(*pc.PreemptionPolicy)
			}
			return []string{pc.Name, strconv.Itoa(int(pc.Value)), strconv.FormatBool(pc.GlobalDefault), Age(pc.CreationTimestamp, now)}, []string{policy}
		},
	},
	api.IngressClassesResource.Name: {
		Headers: []string{"NAME", "CONTROLLER", "PARAMETERS", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			c := o.(*api.IngressClass)
			params := None
			if p := c.Spec.Parameters; p != nil {
				params = p.Kind + "/" + p.Name
				if p.APIGroup != nil && *p.APIGroup != "" {
					params = p.Kind + "." + *p.APIGroup + "/" + p.Name
				}
			}
			return []string{c.Name, c.Spec.Controller, params, Age(c.CreationTimestamp, now)}, nil
		},
	},
	api.ControllerRevisionsResource.Name: {
		Headers: []string{"NAME", "CONTROLLER", "REVISION", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			r := o.(*api.ControllerRevision)
			controller := "<none>"
			for _, ref := range r.OwnerReferences {
				if ref.Controller != nil && *ref.Controller {
					controller = strings.ToLower(ref.Kind) + "." + strings.Split(ref.APIVersion, "/")[0] + "/" + ref.Name
				}
			}
			return []string{r.Name, controller, strconv.FormatInt(r.Revision, 10), Age(r.CreationTimestamp, now)}, nil
		},
	},
	api.HorizontalPodAutoscalersResource.Name: {
		Headers: []string{"NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			h := o.(*api.HorizontalPodAutoscaler)
			minPods := int32(1)
			if h.Spec.MinReplicas != nil {
				minPods = *h.Spec.MinReplicas
			}
			return []string{h.Name, h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name, HPATargets(h), Itoa(minPods),
				Itoa(h.Spec.MaxReplicas), Itoa(h.Status.CurrentReplicas), Age(h.CreationTimestamp, now)}, nil
		},
	},
	api.JobsResource.Name: {
		Headers: []string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"},
		Wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			j := o.(*api.Job)
			names, images := containerNamesImages(j.Spec.Template.Spec.Containers)
			return []string{j.Name, JobStatus(j), JobCompletions(j), JobDuration(j, now), Age(j.CreationTimestamp, now)},
				[]string{names, images, OrNone(SelectorString(j.Spec.Selector))}
		},
	},
	api.CronJobsResource.Name: {
		Headers: []string{"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"},
		Wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			c := o.(*api.CronJob)
			suspend := c.Spec.Suspend != nil && *c.Spec.Suspend
			names, images := containerNamesImages(c.Spec.JobTemplate.Spec.Template.Spec.Containers)
			return []string{c.Name, c.Spec.Schedule, "<none>", strconv.FormatBool(suspend), strconv.Itoa(len(c.Status.Active)),
					Age(c.Status.LastScheduleTime, now), Age(c.CreationTimestamp, now)},
				[]string{names, images, OrNone(SelectorString(c.Spec.JobTemplate.Spec.Selector))}
		},
	},
	api.ReplicaSetsResource.Name: {
		Headers: []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"},
		Wide:    []string{"CONTAINERS", "IMAGES", "SELECTOR"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			rs := o.(*api.ReplicaSet)
			desired := int32(0)
			if rs.Spec.Replicas != nil {
				desired = *rs.Spec.Replicas
			}
			names, images := containerNamesImages(rs.Spec.Template.Spec.Containers)
			return []string{rs.Name, Itoa(desired), Itoa(rs.Status.Replicas), Itoa(rs.Status.ReadyReplicas), Age(rs.CreationTimestamp, now)},
				[]string{names, images, OrNone(SelectorString(rs.Spec.Selector))}
		},
	},
	api.ServicesResource.Name: {
		Headers: []string{"NAME", "TYPE", "CLUSTER-IP", "PORT(S)", "AGE"},
		Wide:    []string{"SELECTOR"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			s := o.(*api.Service)
			return []string{s.Name, s.Spec.Type, OrNone(s.Spec.ClusterIP), ServicePorts(s), Age(s.CreationTimestamp, now)},
				[]string{OrNone(MapString(s.Spec.Selector))}
		},
	},
	api.EndpointsResource.Name: {
		Headers: []string{"NAME", "ENDPOINTS", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			e := o.(*api.Endpoints)
			return []string{e.Name, EndpointsString(e, 3), Age(e.CreationTimestamp, now)}, nil
		},
	},
	api.EventsResource.Name: {
		Headers: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"},
		Wide:    []string{"SOURCE", "COUNT", "FIRST SEEN"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			e := o.(*api.Event)
			obj := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
			return []string{Age(e.LastTimestamp, now), e.Type, e.Reason, obj, e.Message},
				[]string{OrNone(e.Source.Component), strconv.Itoa(int(e.Count)), Age(e.FirstTimestamp, now)}
		},
	},
	api.ConfigMapsResource.Name: {
		Headers: []string{"NAME", "DATA", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			c := o.(*api.ConfigMap)
			return []string{c.Name, strconv.Itoa(len(c.Data) + len(c.BinaryData)), Age(c.CreationTimestamp, now)}, nil
		},
	},
	api.FuncsResource.Name: {
		Headers: []string{"NAME", "VERSION", "LEFT", "RIGHT", "MIN", "MAX", "COUNTER", "REPLICAS", "READY", "AGE"},
		Wide:    []string{"INIT", "SERVICE-ADDRESS", "IMAGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			f, pool := FuncAndPool(o)
			min, init, max := validation.FuncBounds(&f.Spec)
			replicas, ready := PoolColumns(f, pool)
			return []string{f.Name, FuncVersion(f), OrNone(f.Spec.Left), OrNone(f.Spec.Right), strconv.Itoa(min), strconv.Itoa(max),
					strconv.Itoa(f.Status.Counter), replicas, ready, Age(f.CreationTimestamp, now)},
				[]string{strconv.Itoa(init), OrNone(f.Spec.ServiceAddress), FuncImage(f)}
		},
	},
	api.FuncInstancesResource.Name: {
		Headers: []string{"NAME", "FUNCTION", "STATUS", "AGE"},
		Wide:    []string{"STEPS", "RESULT"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			fi := o.(*api.FuncInstance)
			return []string{fi.Name, fi.Spec.Function, OrNone(fi.Status.Phase), Age(fi.CreationTimestamp, now)},
				[]string{strconv.Itoa(len(fi.Status.Steps)), OrNone(Truncate(OneLine(string(fi.Status.Result)), 40))}
		},
	},
	api.FuncRevisionsResource.Name: {
		Headers: []string{"NAME", "FUNCTION", "REVISION", "COUNTER", "AGE"},
		Wide:    []string{"CODE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			r := o.(*api.FuncRevision)
			return []string{r.Name, r.Spec.Function, strconv.FormatInt(r.Spec.Revision, 10), strconv.Itoa(r.Status.Counter), Age(r.CreationTimestamp, now)},
				[]string{OrNone(r.Labels["minik8s.io/func-revision-hash"])}
		},
	},
	api.TriggersResource.Name: {
		Headers: []string{"NAME", "FUNCTION", "TYPE", "SOURCE", "READY", "AGE"},
		Wide:    []string{"SERVED-BY", "MESSAGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			t := o.(*api.Trigger)
			kind, source := TriggerSource(t)
			return []string{t.Name, t.Spec.Function, kind, source, strconv.FormatBool(t.Status.Ready), Age(t.CreationTimestamp, now)},
				[]string{OrNone(t.Status.ServedBy), OrNone(t.Status.Message)}
		},
	},
}

// TriggerSource says what a trigger listens to.
func TriggerSource(t *api.Trigger) (kind, source string) {
	kind, source = function.TriggerSource(t)
	return OrNone(kind), OrNone(source)
}

var defaultColumns = Columns{
	Headers: []string{"NAME", "AGE"},
	Row: func(o api.Object, now time.Time) ([]string, []string) {
		m := o.GetObjectMeta()
		return []string{m.Name, Age(m.CreationTimestamp, now)}, nil
	},
}

// PodStatus is the STATUS column of a pod: Terminating once deletion has
// begun, else the reason a container is waiting or terminated, else the phase.
func PodStatus(p *api.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	if s, initializing := initStatus(p); initializing {
		return s
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

// initStatus is the STATUS of a pod whose init containers have not all
// succeeded, as kubectl words it: Init:N/M while the N+1st runs, else
// Init: and why the one at fault waits or ended.
func initStatus(p *api.Pod) (string, bool) {
	for i, cs := range p.Status.InitContainerStatuses {
		switch t, w := cs.State.Terminated, cs.State.Waiting; {
		case t != nil && t.ExitCode == 0:
			continue
		case t != nil && t.Reason != "":
			return "Init:" + t.Reason, true
		case t != nil && t.Signal != 0:
			return fmt.Sprintf("Init:Signal:%d", t.Signal), true
		case t != nil:
			return fmt.Sprintf("Init:ExitCode:%d", t.ExitCode), true
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			return "Init:" + w.Reason, true
		default:
			return fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers)), true
		}
	}
	return "", false
}

// NodeStatus is Ready, NotReady or Unknown from the Ready condition, with
// ",SchedulingDisabled" when the node is cordoned.
func NodeStatus(n *api.Node) string {
	s := "Unknown"
	switch nodecondition.ReadyStatus(n) {
	case api.ConditionTrue:
		s = "Ready"
	case api.ConditionFalse:
		s = "NotReady"
	}
	if n.Spec.Unschedulable {
		s += ",SchedulingDisabled"
	}
	return s
}

func NodeAddress(n *api.Node, typ string) string {
	for _, a := range n.Status.Addresses {
		if a.Type == typ {
			return a.Address
		}
	}
	return ""
}

func ServicePorts(s *api.Service) string {
	if len(s.Spec.Ports) == 0 {
		return None
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
		return None
	}
	if limit > 0 && len(list) > limit {
		return strings.Join(list[:limit], ",") + fmt.Sprintf(" + %d more...", len(list)-limit)
	}
	return strings.Join(list, ",")
}

// FuncImage is the image a function's pods run: its own, or the Python
// runtime its source runs in.
func FuncImage(f *api.Func) string {
	if f.Spec.Image != "" {
		return f.Spec.Image
	}
	return orDefault(f.Spec.Runtime, api.DefaultFuncRuntime)
}

func FuncVersion(f *api.Func) string {
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

func OrNone(s string) string {
	if s == "" {
		return None
	}
	return s
}

func Itoa(n int32) string { return strconv.Itoa(int(n)) }

func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// MapString writes labels or a selector as k=v,k=v in key order.
func MapString(m map[string]string) string {
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

func SelectorString(ls *api.LabelSelector) string {
	sel, err := labels.FromLabelSelector(ls)
	if err != nil {
		return ""
	}
	return sel.String()
}

// FuncRow is a function as the funcs table shows it: with its pool, the
// ReplicaSet function.ObjectName(name) that serves it (nil when there is
// none).
type FuncRow struct {
	*api.Func
	Pool *api.ReplicaSet
}

var _ api.Object = (*FuncRow)(nil)

// PoolRow is the row of function f with its pool, the ReplicaSet named
// after it in its namespace, which pool finds (a v1 function has none).
func PoolRow(f *api.Func, pool func(ns, name string) *api.ReplicaSet) *FuncRow {
	row := &FuncRow{Func: f}
	if FuncVersion(f) != api.FuncAPIVersionV1 {
		row.Pool = pool(f.Namespace, function.ObjectName(f.Name))
	}
	return row
}

// FuncAndPool takes a row of the funcs table apart; a bare Func has no pool.
func FuncAndPool(o api.Object) (*api.Func, *api.ReplicaSet) {
	if r, ok := o.(*FuncRow); ok {
		return r.Func, r.Pool
	}
	return o.(*api.Func), nil
}

// PoolColumns are REPLICAS (desired/current) and READY of a function's
// pool; "-" for a v1 function, which has no pool, or when there is none.
func PoolColumns(f *api.Func, pool *api.ReplicaSet) (replicas, ready string) {
	if pool == nil || FuncVersion(f) == api.FuncAPIVersionV1 {
		return "-", "-"
	}
	desired := int32(0)
	if pool.Spec.Replicas != nil {
		desired = *pool.Spec.Replicas
	}
	return Itoa(desired) + "/" + Itoa(pool.Status.Replicas), Itoa(pool.Status.ReadyReplicas)
}

// For is the columns of a resource (by plural); a kind without its own
// prints NAME and AGE.
func For(resource string) Columns {
	if c, ok := tables[resource]; ok {
		return c
	}
	return defaultColumns
}

// OneLine folds s into one line of single spaces.
func OneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// QuotaUsage is a quota's "used/hard" per resource as kubectl get quota
// shows them: the limits.* ones (limits true) or the others.
func QuotaUsage(q *api.ResourceQuota, limits bool) string {
	var parts []string
	for _, k := range sortedKeys(q.Spec.Hard) {
		if strings.HasPrefix(k, "limits.") != limits {
			continue
		}
		used := q.Status.Used[k]
		if used == "" {
			used = "0"
		}
		parts = append(parts, k+": "+used+"/"+q.Spec.Hard[k])
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ingressHosts lists an Ingress's hosts as kubectl does: "*" for a rule
// of any host, the first three and a count of the rest.
func ingressHosts(rules []api.IngressRule) string {
	var hosts []string
	for _, r := range rules {
		h := r.Host
		if h == "" {
			h = "*"
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return "*"
	}
	if len(hosts) > 3 {
		return strings.Join(hosts[:3], ",") + fmt.Sprintf(" + %d more...", len(hosts)-3)
	}
	return strings.Join(hosts, ",")
}
