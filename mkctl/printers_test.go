package mkctl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"minik8s/pkg/api"
	"minik8s/pkg/printers"
)

func TestHumanDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-5 * time.Second, "<invalid>"},
		{-500 * time.Millisecond, "0s"},
		{0, "0s"},
		{5 * time.Second, "5s"},
		{119 * time.Second, "119s"},
		{2 * time.Minute, "2m"},
		{3*time.Minute + 20*time.Second, "3m20s"},
		{9*time.Minute + 59*time.Second, "9m59s"},
		{10*time.Minute + 30*time.Second, "10m"},
		{179 * time.Minute, "179m"},
		{3 * time.Hour, "3h"},
		{5*time.Hour + 3*time.Minute, "5h3m"},
		{8 * time.Hour, "8h"},
		{47 * time.Hour, "47h"},
		{48 * time.Hour, "2d"},
		{4*24*time.Hour + 5*time.Hour, "4d5h"},
		{8 * 24 * time.Hour, "8d"},
		{400 * 24 * time.Hour, "400d"},
		{2 * 365 * 24 * time.Hour, "2y"},
		{(2*365 + 30) * 24 * time.Hour, "2y30d"},
		{9 * 365 * 24 * time.Hour, "9y"},
	} {
		if got := printers.HumanDuration(tc.d); got != tc.want {
			t.Errorf("HumanDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestAgeOfMissingTimestamp(t *testing.T) {
	if got := printers.Age(nil, time.Now()); got != "<unknown>" {
		t.Errorf("Age(nil) = %q", got)
	}
}

func TestPodStatus(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		pod  api.Pod
		want string
	}{
		{"phase", api.Pod{Status: api.PodStatus{Phase: api.PodRunning}}, "Running"},
		{"no phase yet", api.Pod{}, "Pending"},
		{"terminating wins", api.Pod{ObjectMeta: api.ObjectMeta{DeletionTimestamp: &now},
			Status: api.PodStatus{Phase: api.PodRunning, ContainerStatuses: []api.ContainerStatus{
				{State: api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}}, "Terminating"},
		{"waiting reason", api.Pod{Status: api.PodStatus{Phase: api.PodPending, ContainerStatuses: []api.ContainerStatus{
			{State: api.ContainerState{Running: &api.ContainerStateRunning{}}},
			{State: api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: "ErrImagePull"}}}}}}, "ErrImagePull"},
		{"terminated reason", api.Pod{Status: api.PodStatus{Phase: api.PodFailed, ContainerStatuses: []api.ContainerStatus{
			{State: api.ContainerState{Terminated: &api.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}}}, "OOMKilled"},
		{"terminated without reason", api.Pod{Status: api.PodStatus{Phase: api.PodFailed, ContainerStatuses: []api.ContainerStatus{
			{State: api.ContainerState{Terminated: &api.ContainerStateTerminated{ExitCode: 3}}}}}}, "ExitCode:3"},
		{"waiting without reason falls to phase", api.Pod{Status: api.PodStatus{Phase: api.PodPending, ContainerStatuses: []api.ContainerStatus{
			{State: api.ContainerState{Waiting: &api.ContainerStateWaiting{}}}}}}, "Pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := printers.PodStatus(&tc.pod); got != tc.want {
				t.Errorf("PodStatus = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNodeStatus(t *testing.T) {
	ready := func(s string) []api.NodeCondition {
		return []api.NodeCondition{{Type: "MemoryPressure", Status: "False"}, {Type: api.NodeReady, Status: s}}
	}
	for _, tc := range []struct {
		node api.Node
		want string
	}{
		{api.Node{Status: api.NodeStatus{Conditions: ready(api.ConditionTrue)}}, "Ready"},
		{api.Node{Status: api.NodeStatus{Conditions: ready(api.ConditionFalse)}}, "NotReady"},
		{api.Node{Status: api.NodeStatus{Conditions: ready(api.ConditionUnknown)}}, "Unknown"},
		{api.Node{}, "Unknown"},
		{api.Node{Spec: api.NodeSpec{Unschedulable: true}, Status: api.NodeStatus{Conditions: ready(api.ConditionTrue)}}, "Ready,SchedulingDisabled"},
		{api.Node{Spec: api.NodeSpec{Unschedulable: true}}, "Unknown,SchedulingDisabled"},
	} {
		if got := printers.NodeStatus(&tc.node); got != tc.want {
			t.Errorf("NodeStatus(%+v) = %q, want %q", tc.node, got, tc.want)
		}
	}
}

func TestEndpointsString(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ep    api.Endpoints
		limit int
		want  string
	}{
		{"empty", api.Endpoints{}, 3, "<none>"},
		{"subset ports", api.Endpoints{Subsets: []api.EndpointSubset{{
			Addresses: []api.EndpointAddress{{IP: "127.0.0.11"}, {IP: "127.0.0.12"}},
			Ports:     []api.EndpointPort{{Port: 80}}}}}, 3, "127.0.0.11:80,127.0.0.12:80"},
		{"per-address port", api.Endpoints{Subsets: []api.EndpointSubset{{
			Addresses: []api.EndpointAddress{{IP: "127.0.0.11", Port: 34001}, {IP: "127.0.0.11", Port: 34002}},
			Ports:     []api.EndpointPort{{Port: 80}}}}}, 3, "127.0.0.11:34001,127.0.0.11:34002"},
		{"no ports", api.Endpoints{Subsets: []api.EndpointSubset{{Addresses: []api.EndpointAddress{{IP: "127.0.0.1"}}}}}, 3, "127.0.0.1"},
		{"not ready are not listed", api.Endpoints{Subsets: []api.EndpointSubset{{
			NotReadyAddresses: []api.EndpointAddress{{IP: "127.0.0.1", Port: 1}}}}}, 3, "<none>"},
		{"truncated", api.Endpoints{Subsets: []api.EndpointSubset{{
			Addresses: []api.EndpointAddress{{IP: "127.0.0.1", Port: 1}, {IP: "127.0.0.1", Port: 2}, {IP: "127.0.0.1", Port: 3},
				{IP: "127.0.0.1", Port: 4}, {IP: "127.0.0.1", Port: 5}}}}}, 3, "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3 + 2 more..."},
		{"unlimited", api.Endpoints{Subsets: []api.EndpointSubset{{
			Addresses: []api.EndpointAddress{{IP: "127.0.0.1", Port: 1}, {IP: "127.0.0.1", Port: 2}}}}}, 0, "127.0.0.1:1,127.0.0.1:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := printers.EndpointsString(&tc.ep, tc.limit); got != tc.want {
				t.Errorf("EndpointsString = %q, want %q", got, tc.want)
			}
		})
	}
}

func intp(n int) *int       { return &n }
func int32p(n int32) *int32 { return &n }

// TestTables prints one object of every kind and checks the whole table,
// so a column that moves or a value that renders wrongly shows up.
func TestTables(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	meta := func(name string, age time.Duration) api.ObjectMeta {
		return api.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(age)}
	}
	for _, tc := range []struct {
		name string
		res  api.Resource
		wide bool
		objs []api.Object
		want string
	}{
		{
			name: "pods", res: api.PodsResource, wide: true,
			objs: []api.Object{
				&api.Pod{ObjectMeta: meta("web", 5*time.Second),
					Spec: api.PodSpec{NodeName: "node-1", Containers: []api.Container{{Name: "a"}, {Name: "b"}}},
					Status: api.PodStatus{Phase: api.PodRunning, PodIP: "127.0.0.11", ContainerStatuses: []api.ContainerStatus{
						{Name: "a", Ready: true, RestartCount: 2, State: api.ContainerState{Running: &api.ContainerStateRunning{}}},
						{Name: "b", RestartCount: 1, State: api.ContainerState{Running: &api.ContainerStateRunning{}}}}}},
				&api.Pod{ObjectMeta: meta("pending-pod-with-a-long-name", 3*time.Hour),
					Spec: api.PodSpec{Containers: []api.Container{{Name: "a"}}}, Status: api.PodStatus{Phase: api.PodPending}},
			},
			want: "" +
				"NAME                           READY   STATUS    RESTARTS   AGE   IP           NODE\n" +
				"web                            1/2     Running   3          5s    127.0.0.11   node-1\n" +
				"pending-pod-with-a-long-name   0/1     Pending   0          3h    <none>       <none>\n",
		},
		{
			name: "nodes", res: api.NodesResource, wide: true,
			objs: []api.Object{&api.Node{ObjectMeta: api.ObjectMeta{Name: "node-1", CreationTimestamp: ago(4 * 24 * time.Hour)},
				Spec: api.NodeSpec{Unschedulable: true},
				Status: api.NodeStatus{Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}},
					Addresses: []api.NodeAddress{{Type: api.NodeHostName, Address: "n1"}, {Type: api.NodeInternalIP, Address: "127.0.0.11"}},
					Capacity:  api.ResourceList{"cpu": "2", "memory": "4Gi"}, NodeInfo: api.NodeSystemInfo{KubeletVersion: "v0.1.0"}}}},
			want: "" +
				"NAME     STATUS                     AGE   VERSION   INTERNAL-IP   CPU   MEMORY\n" +
				"node-1   Ready,SchedulingDisabled   4d    v0.1.0    127.0.0.11    2     4Gi\n",
		},
		{
			name: "replicasets", res: api.ReplicaSetsResource,
			objs: []api.Object{&api.ReplicaSet{ObjectMeta: meta("web", 3*time.Minute),
				Spec:   api.ReplicaSetSpec{Replicas: int32p(3)},
				Status: api.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2}}},
			want: "" +
				"NAME   DESIRED   CURRENT   READY   AGE\n" +
				"web    3         3         2       3m\n",
		},
		{
			name: "services", res: api.ServicesResource, wide: true,
			objs: []api.Object{
				&api.Service{ObjectMeta: meta("web", 4*time.Hour), Spec: api.ServiceSpec{Type: "ClusterIP", ClusterIP: "127.1.0.5",
					Selector: map[string]string{"tier": "front", "app": "web"},
					Ports:    []api.ServicePort{{Port: 80, Protocol: "TCP"}, {Port: 443}}}},
				&api.Service{ObjectMeta: meta("bare", 4*time.Hour), Spec: api.ServiceSpec{Type: "ClusterIP"}},
				&api.Service{ObjectMeta: meta("np", 4*time.Hour), Spec: api.ServiceSpec{Type: "NodePort", ClusterIP: "127.1.0.6",
					Ports: []api.ServicePort{{Port: 80, NodePort: 30080}}}},
			},
			want: "" +
				"NAME   TYPE        CLUSTER-IP   PORT(S)          AGE   SELECTOR\n" +
				"web    ClusterIP   127.1.0.5    80/TCP,443/TCP   4h    app=web,tier=front\n" +
				"bare   ClusterIP   <none>       <none>           4h    <none>\n" +
				"np     NodePort    127.1.0.6    80:30080/TCP     4h    <none>\n",
		},
		{
			name: "endpoints", res: api.EndpointsResource,
			objs: []api.Object{&api.Endpoints{ObjectMeta: meta("web", time.Minute), Subsets: []api.EndpointSubset{{
				Addresses: []api.EndpointAddress{{IP: "127.0.0.11", Port: 34001}}}}}},
			want: "" +
				"NAME   ENDPOINTS          AGE\n" +
				"web    127.0.0.11:34001   60s\n",
		},
		{
			name: "configmaps", res: api.ConfigMapsResource,
			objs: []api.Object{&api.ConfigMap{ObjectMeta: meta("cfg", 10*time.Second),
				Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}}}},
			want: "" +
				"NAME   DATA   AGE\n" +
				"cfg    3      10s\n",
		},
		{
			name: "funcs", res: api.FuncsResource,
			objs: []api.Object{
				&api.Func{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Func"}, ObjectMeta: meta("append_world", 90*time.Second),
					Spec:   api.FuncSpec{Name: "append_world", Left: "RETURN", MinInstanceNum: intp(1), MaxInstanceNum: intp(5)},
					Status: api.FuncStatus{Counter: 4}},
				// No bounds given: min 0, max from validation.FuncBounds.
				&api.Func{TypeMeta: api.TypeMeta{Kind: "Func"}, ObjectMeta: meta("hello", 90*time.Second), Spec: api.FuncSpec{Name: "hello"}},
				// init above the default max raises max.
				&api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: meta("big", 90*time.Second),
					Spec: api.FuncSpec{Name: "big", InitInstanceNum: intp(12), Right: "hello"}},
				// With its pool: desired/current and ready replicas.
				&printers.FuncRow{Func: &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: meta("pooled", 90*time.Second),
					Spec: api.FuncSpec{Name: "pooled"}, Status: api.FuncStatus{Counter: 3}},
					Pool: &api.ReplicaSet{Spec: api.ReplicaSetSpec{Replicas: int32p(3)}, Status: api.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1}}},
				// Looked up and not found.
				&printers.FuncRow{Func: &api.Func{ObjectMeta: meta("nopool", 90*time.Second), Spec: api.FuncSpec{Name: "nopool"}}},
				// A v1 function has no pool, whatever is there.
				&printers.FuncRow{Func: &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v1"}, ObjectMeta: meta("fresh", 90*time.Second),
					Spec: api.FuncSpec{Name: "fresh"}}, Pool: &api.ReplicaSet{Spec: api.ReplicaSetSpec{Replicas: int32p(1)}}},
			},
			want: "" +
				"NAME           VERSION   LEFT     RIGHT    MIN   MAX   COUNTER   REPLICAS   READY   AGE\n" +
				"append_world   v1        RETURN   <none>   1     5     4         -          -       90s\n" +
				"hello          v2        <none>   <none>   0     10    0         -          -       90s\n" +
				"big            v2        <none>   hello    0     12    0         -          -       90s\n" +
				"pooled         v2        <none>   <none>   0     10    3         3/2        1       90s\n" +
				"nopool         v2        <none>   <none>   0     10    0         -          -       90s\n" +
				"fresh          v1        <none>   <none>   0     10    0         -          -       90s\n",
		},
		{
			// Wide: the image the pods run, the function's own or the Python runtime.
			name: "funcs wide", res: api.FuncsResource, wide: true,
			objs: []api.Object{
				&api.Func{ObjectMeta: meta("shout", 90*time.Second), Spec: api.FuncSpec{Name: "shout", Image: "minik8s/perl-example:latest"}},
				&api.Func{ObjectMeta: meta("hello", 90*time.Second), Spec: api.FuncSpec{Name: "hello", ServiceAddress: "127.0.0.9"}},
			},
			want: "" +
				"NAME    VERSION   LEFT     RIGHT    MIN   MAX   COUNTER   REPLICAS   READY   AGE   INIT   SERVICE-ADDRESS   IMAGE\n" +
				"shout   v2        <none>   <none>   0     10    0         -          -       90s   1      <none>            minik8s/perl-example:latest\n" +
				"hello   v2        <none>   <none>   0     10    0         -          -       90s   1      127.0.0.9         minik8s/python-runtime:latest\n",
		},
		{
			name: "funcinstances", res: api.FuncInstancesResource,
			objs: []api.Object{&api.FuncInstance{ObjectMeta: meta("3f2a", 2*time.Second),
				Spec: api.FuncInstanceSpec{Function: "hello"}, Status: api.FuncInstanceStatus{Phase: api.InstanceSucceeded}}},
			want: "" +
				"NAME   FUNCTION   STATUS      AGE\n" +
				"3f2a   hello      Succeeded   2s\n",
		},
		{
			name: "triggers", res: api.TriggersResource,
			objs: []api.Object{
				&api.Trigger{ObjectMeta: meta("web", time.Minute), Spec: api.TriggerSpec{Function: "hello", HTTP: &api.HTTPTrigger{Path: "/hello"}},
					Status: api.TriggerStatus{Ready: true}},
				&api.Trigger{ObjectMeta: meta("tick", time.Minute), Spec: api.TriggerSpec{Function: "hello",
					Schedule: &api.ScheduleTrigger{Cron: "@every 1s", TimeZone: "UTC"}}},
				&api.Trigger{ObjectMeta: meta("orders", time.Minute), Spec: api.TriggerSpec{Function: "hello",
					Queue: &api.QueueTrigger{Subject: "orders.created"}}},
			},
			want: "" +
				"NAME     FUNCTION   TYPE       SOURCE            READY   AGE\n" +
				"web      hello      http       * /hello          true    60s\n" +
				"tick     hello      schedule   @every 1s (UTC)   false   60s\n" +
				"orders   hello      queue      orders.created    false   60s\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p := NewTablePrinter(tc.res, tc.wide, false, false)
			if err := p.PrintTable(&b, tc.objs, now); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("table:\n%s\nwant:\n%s", b.String(), tc.want)
			}
		})
	}
}

func TestTableNamespaceLabelsAndWatchRows(t *testing.T) {
	now := time.Now()
	cm := func(ns, name string, l map[string]string) *api.ConfigMap {
		return &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns, Labels: l, CreationTimestamp: &now}}
	}
	var b bytes.Buffer
	p := NewTablePrinter(api.ConfigMapsResource, false, true, true)
	p.eventColumn = true
	if err := p.PrintTable(&b, []api.Object{cm("default", "a", map[string]string{"x": "1"})}, now); err != nil {
		t.Fatal(err)
	}
	if err := p.PrintRow(&b, api.Modified, cm("kube", "b", nil), now); err != nil {
		t.Fatal(err)
	}
	if err := p.PrintRow(&b, api.Deleted, cm("default", "a-much-longer-name", nil), now); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"EVENT      NAMESPACE   NAME   DATA   AGE   LABELS\n" +
		"ADDED      default     a      0      0s    x=1\n" +
		"MODIFIED   kube        b      0      0s    <none>\n" +
		"DELETED    default     a-much-longer-name   0      0s    <none>\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	// A cluster-scoped kind has no NAMESPACE column even with -A.
	b.Reset()
	np := NewTablePrinter(api.NodesResource, false, true, false)
	if err := np.PrintTable(&b, nil, now); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "NAME   STATUS   AGE   VERSION\n" {
		t.Errorf("node header with -A = %q", got)
	}
}

func TestPrintObjectAndList(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	objs := []api.Object{&api.ConfigMap{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: api.ObjectMeta{Name: "a", Namespace: "default", CreationTimestamp: &now}, Data: map[string]string{"k": "v"}}}
	var b bytes.Buffer
	if err := PrintObject(&b, "json", listOf(api.ConfigMapsResource, objs, "42")); err != nil {
		t.Fatal(err)
	}
	var list struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []api.ConfigMap `json:"items"`
	}
	if err := json.Unmarshal(b.Bytes(), &list); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b.String())
	}
	if list.Kind != "ConfigMapList" || list.APIVersion != "v1" || list.Metadata.ResourceVersion != "42" ||
		len(list.Items) != 1 || list.Items[0].Data["k"] != "v" {
		t.Errorf("list = %+v", list)
	}

	b.Reset()
	if err := PrintObject(&b, "yaml", objs[0]); err != nil {
		t.Fatal(err)
	}
	var back api.ConfigMap
	if err := yaml.UnmarshalStrict(b.Bytes(), &back); err != nil {
		t.Fatalf("output is not YAML of a ConfigMap: %v\n%s", err, b.String())
	}
	if back.Name != "a" || back.Data["k"] != "v" || !strings.Contains(b.String(), "kind: ConfigMap\n") {
		t.Errorf("yaml round trip = %+v\n%s", back, b.String())
	}

	// An empty list is an empty items array, not null.
	b.Reset()
	if err := PrintObject(&b, "json", listOf(api.PodsResource, nil, "1")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"items": []`) || !strings.Contains(b.String(), `"kind": "PodList"`) {
		t.Errorf("empty list = %s", b.String())
	}
}
