package statefulset

import (
	"reflect"
	"testing"
	"time"

	"minik8s/pkg/api"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func set(replicas int32, opts ...func(*api.StatefulSet)) *api.StatefulSet {
	zero := int32(0)
	s := &api.StatefulSet{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid", Generation: 2},
		Spec: api.StatefulSetSpec{Replicas: &replicas, Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PodManagementPolicy: api.OrderedReadyPodManagement,
			UpdateStrategy:      api.StatefulSetUpdateStrategy{Type: api.StatefulSetRollingUpdate, RollingUpdate: &api.RollingUpdateStatefulSetStrategy{Partition: &zero}}}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func parallel(s *api.StatefulSet) { s.Spec.PodManagementPolicy = api.ParallelPodManagement }
func onDelete(s *api.StatefulSet) {
	s.Spec.UpdateStrategy = api.StatefulSetUpdateStrategy{Type: api.StatefulSetOnDelete}
}
func partition(n int32) func(*api.StatefulSet) {
	return func(s *api.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = &n }
}

// The pods' states.
const (
	ready = iota
	pending
	going
	failed
)

// pod is web-NAME's pod of revision rev in state.
func pod(name, rev string, state int) *api.Pod {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, UID: "uid-" + name,
		Labels: map[string]string{"app": "web", api.LabelControllerRevisionHash: rev}}, Status: api.PodStatus{Phase: api.PodRunning}}
	switch state {
	case ready, going:
		since := now.Add(-time.Minute)
		p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: &since}}
		if state == going {
			p.DeletionTimestamp = &now
		}
	case pending:
		p.Status.Phase = api.PodPending
	case failed:
		p.Status.Phase = api.PodFailed
	}
	return p
}

func TestManage(t *testing.T) {
	for _, tc := range []struct {
		name         string
		set          *api.StatefulSet
		pods         []*api.Pod
		create       []creation
		delete       []string
		currentAfter string
	}{
		{name: "ordered: web-0 first", set: set(3), create: []creation{{0, true}}},
		{name: "ordered: web-1 waits for web-0 to be ready", set: set(3), pods: []*api.Pod{pod("web-0", "new", pending)}},
		{name: "ordered: web-1 once web-0 is ready", set: set(3), pods: []*api.Pod{pod("web-0", "new", ready)}, create: []creation{{1, true}}},
		{name: "ordered: a missing web-0 comes back before web-2", set: set(3),
			pods: []*api.Pod{pod("web-1", "new", ready)}, create: []creation{{0, true}}},
		{name: "parallel: all at once", set: set(3, parallel), create: []creation{{0, true}, {1, true}, {2, true}}},
		{name: "parallel: past a pod not ready", set: set(3, parallel), pods: []*api.Pod{pod("web-0", "new", pending)},
			create: []creation{{1, true}, {2, true}}},
		{name: "failed pod deleted to be made again", set: set(2), pods: []*api.Pod{pod("web-0", "new", failed), pod("web-1", "new", ready)},
			delete: []string{"web-0"}},
		{name: "ordered: scale down from the highest", set: set(1),
			pods: []*api.Pod{pod("web-0", "new", ready), pod("web-1", "new", ready), pod("web-2", "new", ready)}, delete: []string{"web-2"}},
		{name: "ordered: scale down waits for the going pod", set: set(1),
			pods: []*api.Pod{pod("web-0", "new", ready), pod("web-1", "new", ready), pod("web-2", "new", going)}},
		{name: "parallel: scale down at once", set: set(1, parallel),
			pods: []*api.Pod{pod("web-0", "new", ready), pod("web-1", "new", ready), pod("web-2", "new", ready)}, delete: []string{"web-2", "web-1"}},
		{name: "rolling update from the highest ordinal", set: set(3),
			pods: []*api.Pod{pod("web-0", "old", ready), pod("web-1", "old", ready), pod("web-2", "old", ready)}, delete: []string{"web-2"}},
		{name: "rolling update: the replaced pod is back", set: set(3),
			pods: []*api.Pod{pod("web-0", "old", ready), pod("web-1", "old", ready)}, create: []creation{{2, true}}},
		{name: "rolling update waits for the new pod to be ready", set: set(3),
			pods: []*api.Pod{pod("web-0", "old", ready), pod("web-1", "old", ready), pod("web-2", "new", pending)}},
		{name: "rolling update continues down", set: set(3),
			pods: []*api.Pod{pod("web-0", "old", ready), pod("web-1", "old", ready), pod("web-2", "new", ready)}, delete: []string{"web-1"}},
		{name: "partition keeps the lower ordinals", set: set(3, partition(2)),
			pods: []*api.Pod{pod("web-0", "old", ready), pod("web-1", "old", ready), pod("web-2", "new", ready)}},
		{name: "below the partition a pod is made of the current revision", set: set(3, partition(2)),
			pods: []*api.Pod{pod("web-1", "old", ready), pod("web-2", "new", ready)}, create: []creation{{0, false}}},
		{name: "on delete: nothing replaced", set: set(2, onDelete),
			pods: []*api.Pod{pod("web-0", "old", ready), pod("web-1", "old", ready)}},
		{name: "on delete: a deleted pod comes back updated", set: set(2, onDelete),
			pods: []*api.Pod{pod("web-0", "old", ready)}, create: []creation{{1, true}}},
		{name: "ordinals start at 5", set: set(2, func(s *api.StatefulSet) { s.Spec.Ordinals = &api.StatefulSetOrdinals{Start: 5} }),
			pods: []*api.Pod{pod("web-5", "new", ready), pod("web-0", "new", ready)}, create: []creation{{6, true}}},
		{name: "foreign names ignored", set: set(1), pods: []*api.Pod{pod("web-0", "new", ready), pod("web-x", "new", ready), pod("web-01", "new", ready)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newView(tc.set, "old", "new", tc.pods, now)
			pl := v.manage()
			var deleted []string
			for _, p := range pl.delete {
				deleted = append(deleted, p.Name)
			}
			if !reflect.DeepEqual(pl.create, tc.create) || !reflect.DeepEqual(deleted, tc.delete) {
				t.Errorf("create %v delete %v, want create %v delete %v", pl.create, deleted, tc.create, tc.delete)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  *api.StatefulSet
		pods []*api.Pod
		want api.StatefulSetStatus
	}{
		{name: "rolling update under way", set: set(3),
			pods: []*api.Pod{pod("web-0", "old", ready), pod("web-1", "old", pending), pod("web-2", "new", ready)},
			want: api.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 1,
				CurrentRevision: "old", UpdateRevision: "new"}},
		{name: "rolling update done: current is the update", set: set(2),
			pods: []*api.Pod{pod("web-0", "new", ready), pod("web-1", "new", ready)},
			want: api.StatefulSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 2,
				CurrentRevision: "new", UpdateRevision: "new"}},
		{name: "a going pod counts but is not current", set: set(1),
			pods: []*api.Pod{pod("web-0", "old", ready), pod("web-1", "old", going)},
			want: api.StatefulSetStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, CurrentReplicas: 1,
				CurrentRevision: "old", UpdateRevision: "new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newView(tc.set, "old", "new", tc.pods, now)
			var pl plan
			if got := v.status(&pl); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("status %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNewPodIdentity(t *testing.T) {
	s := set(2)
	s.Spec.ServiceName = "nginx"
	tmpl := api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Namespace: "elsewhere", Labels: map[string]string{"app": "web"}}}
	p := newPod(s, tmpl, "web-abc", 1)
	if p.Name != "web-1" || p.Namespace != "default" || p.Spec.Hostname != "web-1" || p.Spec.Subdomain != "nginx" {
		t.Errorf("pod %s/%s host %s.%s", p.Namespace, p.Name, p.Spec.Hostname, p.Spec.Subdomain)
	}
	want := map[string]string{"app": "web", api.LabelStatefulSetPodName: "web-1", api.LabelPodIndex: "1", api.LabelControllerRevisionHash: "web-abc"}
	if !reflect.DeepEqual(p.Labels, want) {
		t.Errorf("labels %v, want %v", p.Labels, want)
	}
	s.Spec.VolumeClaimTemplates = []api.PersistentVolumeClaim{{ObjectMeta: api.ObjectMeta{Name: "www", Namespace: "elsewhere"}}}
	tmpl.Spec.Volumes = []api.Volume{{Name: "www", EmptyDir: &api.EmptyDirVolumeSource{}}, {Name: "cache", EmptyDir: &api.EmptyDirVolumeSource{}}}
	p = newPod(s, tmpl, "web-abc", 1)
	if len(p.Spec.Volumes) != 2 || p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "www-web-1" ||
		p.Spec.Volumes[0].EmptyDir != nil || p.Spec.Volumes[1].Name != "cache" {
		t.Errorf("volumes %+v: want www the claim www-web-1, cache kept", p.Spec.Volumes)
	}
	if claimName("www", "web", 1) != "www-web-1" {
		t.Errorf("claim name %s", claimName("www", "web", 1))
	}
}
