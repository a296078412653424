package mkctl

import (
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
)

// stored is obj as the apiserver keeps it: defaulted, with system fields.
func stored(res api.Resource, obj api.Object) api.Object {
	validation.Default(res, obj)
	now := time.Now()
	m := obj.GetObjectMeta()
	m.UID, m.ResourceVersion, m.Generation, m.CreationTimestamp = "uid-1", "17", 3, &now
	return obj
}

func TestDesiredStateAndSameForApply(t *testing.T) {
	pod := func() *api.Pod {
		return &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"a": "1"}},
			Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i", Ports: []api.ContainerPort{{Name: "http"}}}}}}
	}
	svc := func() *api.Service {
		return &api.Service{ObjectMeta: api.ObjectMeta{Name: "s", Namespace: "default"},
			Spec: api.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []api.ServicePort{{Port: 80}}}}
	}
	for _, tc := range []struct {
		name     string
		res      api.Resource
		manifest api.Object
		cur      api.Object
		same     bool
	}{
		{"pod as written", api.PodsResource, pod(), stored(api.PodsResource, pod()), true},
		{"pod bound and running since", api.PodsResource, pod(), func() api.Object {
			p := stored(api.PodsResource, pod()).(*api.Pod)
			p.Spec.NodeName = "node-1"
			p.Status.Phase = api.PodRunning
			p.Status.PodIP = "127.0.0.11"
			return p
		}(), true},
		{"pod label changed", api.PodsResource, pod(), func() api.Object {
			p := stored(api.PodsResource, pod()).(*api.Pod)
			p.Labels["a"] = "2"
			return p
		}(), false},
		{"pod image changed", api.PodsResource, func() api.Object {
			p := pod()
			p.Spec.Containers[0].Image = "j"
			return p
		}(), stored(api.PodsResource, pod()), false},
		{"service with allocated cluster IP", api.ServicesResource, svc(), func() api.Object {
			s := stored(api.ServicesResource, svc()).(*api.Service)
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "127.1.0.9", []string{"127.1.0.9"}
			return s
		}(), true},
		{"service asking for another cluster IP", api.ServicesResource, func() api.Object {
			s := svc()
			s.Spec.ClusterIP = "127.1.0.10"
			return s
		}(), func() api.Object {
			s := stored(api.ServicesResource, svc()).(*api.Service)
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "127.1.0.9", []string{"127.1.0.9"}
			return s
		}(), false},
		{"node with the pod CIDR it was given", api.NodesResource,
			&api.Node{ObjectMeta: api.ObjectMeta{Name: "n"}},
			func() api.Object {
				n := stored(api.NodesResource, &api.Node{ObjectMeta: api.ObjectMeta{Name: "n"}}).(*api.Node)
				n.Spec.PodCIDR, n.Spec.PodCIDRs = "127.42.3.0/24", []string{"127.42.3.0/24"}
				return n
			}(), true},
		{"replicaset scaled by hand is reset", api.ReplicaSetsResource,
			&api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "r", Namespace: "default"}, Spec: api.ReplicaSetSpec{Replicas: int32p(3)}},
			stored(api.ReplicaSetsResource, &api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "r", Namespace: "default"}, Spec: api.ReplicaSetSpec{Replicas: int32p(5)}}),
			false},
		{"func counter moved", api.FuncsResource,
			&api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2", Kind: "Func"}, ObjectMeta: api.ObjectMeta{Name: "f", Namespace: "default"},
				Spec: api.FuncSpec{Name: "f", Function: "cA=="}},
			func() api.Object {
				f := stored(api.FuncsResource, &api.Func{ObjectMeta: api.ObjectMeta{Name: "f", Namespace: "default"}, Spec: api.FuncSpec{Name: "f", Function: "cA=="}}).(*api.Func)
				f.Status.Counter = 4
				f.Spec.ServiceAddress = "127.1.0.3"
				return f
			}(), true},
		{"func version changed", api.FuncsResource,
			&api.Func{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Func"}, ObjectMeta: api.ObjectMeta{Name: "f", Namespace: "default"},
				Spec: api.FuncSpec{Name: "f", Function: "cA=="}},
			stored(api.FuncsResource, &api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}, ObjectMeta: api.ObjectMeta{Name: "f", Namespace: "default"},
				Spec: api.FuncSpec{Name: "f", Function: "cA=="}}), false},
		{"configmap data changed", api.ConfigMapsResource,
			&api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"k": "v2"}},
			stored(api.ConfigMapsResource, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"k": "v"}}),
			false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desired, err := desiredState(tc.res, tc.manifest, tc.cur)
			if err != nil {
				t.Fatal(err)
			}
			if got := sameForApply(desired, tc.cur); got != tc.same {
				t.Errorf("sameForApply = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestDesiredStateKeepsSystemFields(t *testing.T) {
	manifest := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "j"}}}}
	yes := true
	cur := stored(api.PodsResource, &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default",
		OwnerReferences: []api.OwnerReference{{Kind: "ReplicaSet", Name: "r", UID: "u", Controller: &yes}}},
		Spec: api.PodSpec{NodeName: "node-1", Containers: []api.Container{{Name: "c", Image: "i"}}}}).(*api.Pod)
	d, err := desiredState(api.PodsResource, manifest, cur)
	if err != nil {
		t.Fatal(err)
	}
	p := d.(*api.Pod)
	if p.Spec.NodeName != "node-1" || len(p.OwnerReferences) != 1 || p.Spec.RestartPolicy != api.RestartPolicyAlways {
		t.Errorf("desired = %+v", p)
	}
	if manifest.Spec.NodeName != "" || manifest.Spec.RestartPolicy != "" {
		t.Errorf("desiredState changed the manifest's object: %+v", manifest.Spec)
	}
}
