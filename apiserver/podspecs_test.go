package apiserver

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/rbac"
)

// testAuthorizer is the built-in policy plus objs.
func testAuthorizer(t *testing.T, objs ...api.Object) *authorizer {
	t.Helper()
	p, err := rbac.NewStatic(append(bootstrapObjects(), objs...)...)
	if err != nil {
		t.Fatal(err)
	}
	a := &authorizer{}
	a.policy.Store(p)
	return a
}

// editIn binds edit to user in namespace ns.
func editIn(ns, user string) *api.RoleBinding {
	return &api.RoleBinding{TypeMeta: api.TypeMeta{Kind: "RoleBinding"}, ObjectMeta: api.ObjectMeta{Name: user + "-edit", Namespace: ns},
		Subjects: []api.Subject{{Kind: api.UserKind, APIGroup: api.RBACGroup, Name: user}},
		RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.ClusterRoleKind, Name: rbac.Edit}}
}

var (
	editor   = rbac.User{Name: "editor", Groups: []string{rbac.AllAuthenticated}}
	admin    = rbac.User{Name: "admin", Groups: []string{rbac.Masters, rbac.AllAuthenticated}}
	ctrlMgr  = rbac.User{Name: rbac.ControllerManagerUser, Groups: []string{rbac.AllAuthenticated}}
	testNode = rbac.User{Name: rbac.NodeUserPrefix + "n1", Groups: []string{rbac.NodesGroup, rbac.AllAuthenticated}}
)

// plant fills every api.PodSpec a value of v's type can hold (allocating
// pointers, one element of each list and map on the way) with a spec on
// the host network, and returns the JSON paths it planted at. It is this
// test's own walk, independent of podSpecsOf, so that a kind whose pod
// template the admission does not see fails here.
func plant(v reflect.Value, path string, onPath map[reflect.Type]bool) []string {
	t := v.Type()
	if t == podSpecType {
		v.Set(reflect.ValueOf(api.PodSpec{HostNetwork: true, Containers: []api.Container{{Name: "c", Image: "i"}}}))
		return []string{path}
	}
	if onPath[t] {
		return nil
	}
	onPath[t] = true
	defer delete(onPath, t)
	switch t.Kind() {
	case reflect.Pointer:
		e := reflect.New(t.Elem())
		if got := plant(e.Elem(), path, onPath); len(got) > 0 {
			v.Set(e)
			return got
		}
	case reflect.Slice:
		e := reflect.New(t.Elem()).Elem()
		if got := plant(e, path+"[0]", onPath); len(got) > 0 {
			v.Set(reflect.Append(reflect.MakeSlice(t, 0, 1), e))
			return got
		}
	case reflect.Map:
		e := reflect.New(t.Elem()).Elem()
		k := reflect.New(t.Key()).Elem()
		if k.Kind() == reflect.String {
			k.SetString("k")
		}
		if got := plant(e, fmt.Sprintf("%s[%v]", path, k), onPath); len(got) > 0 {
			m := reflect.MakeMap(t)
			m.SetMapIndex(k, e)
			v.Set(m)
			return got
		}
	case reflect.Struct:
		var out []string
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() {
				out = append(out, plant(v.Field(i), fieldPath(path, f), onPath)...)
			}
		}
		return out
	}
	return nil
}

// TestEveryPodTemplateIsAdmitted walks every kind the apiserver serves:
// wherever its type can hold a pod spec, a privileged one is planted, and
// admission must see each and refuse the edit user. The kinds known to
// carry templates must be among them (so the walk itself works).
func TestEveryPodTemplateIsAdmitted(t *testing.T) {
	s := &Server{authz: testAuthorizer(t, editIn("default", editor.Name))}
	var carrying []string
	for _, res := range api.Resources {
		obj := res.New()
		obj.GetObjectMeta().Name, obj.GetObjectMeta().Namespace = "x", "default"
		planted := plant(reflect.ValueOf(obj).Elem(), "", map[reflect.Type]bool{})
		found := map[string]bool{}
		for _, at := range podSpecsOf(obj) {
			if at.spec.HostNetwork {
				found[at.path] = true
			}
		}
		for _, p := range planted {
			if !found[p] {
				t.Errorf("%s: the pod spec at %s is not seen by admission (podSpecsOf)", res.Kind, p)
			}
		}
		if len(planted) == 0 {
			continue
		}
		carrying = append(carrying, res.Name)
		err := s.admitPodSpecs(withUser(context.Background(), editor), res, nil, obj)
		if !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "hostNetwork") {
			t.Errorf("%s with privileged specs at %v, written by an edit user: %v, want forbidden", res.Kind, planted, err)
		}
		if err := s.admitPodSpecs(withUser(context.Background(), admin), res, nil, obj); err != nil {
			t.Errorf("%s written by the admin: %v", res.Kind, err)
		}
	}
	for _, want := range []string{"pods", "replicasets", "deployments", "jobs", "cronjobs"} {
		if !slices.Contains(carrying, want) {
			t.Errorf("the walk found no pod spec in %s (found in %v)", want, carrying)
		}
	}
}

// TestPodSpecsOfFunc: a Func's pods are derived from its spec; admission
// judges them as written out.
func TestPodSpecsOfFunc(t *testing.T) {
	f := &api.Func{ObjectMeta: api.ObjectMeta{Name: "f", Namespace: "default"}, Spec: api.FuncSpec{Image: "img"}}
	specs := podSpecsOf(f)
	want := function.PodSpec(f)
	if len(specs) != 1 || !samePodSpec(specs[0].spec, &want) {
		t.Fatalf("podSpecsOf(func) = %+v, want function.PodSpec", specs)
	}
}

// TestPrivilegesCoverThePodSpec fails when PodSpec, Container, Volume or
// ContainerPort gain a field nobody has judged: each field is either one
// privileges() reports or one known not to reach into the node.
func TestPrivilegesCoverThePodSpec(t *testing.T) {
	judged := map[reflect.Type][]string{
		reflect.TypeOf(api.PodSpec{}): {"Containers", "Volumes", "RestartPolicy", "NodeName", "NodeSelector",
			"TerminationGracePeriodSeconds", "SchedulerName", "HostNetwork", "ServiceAccountName", "AutomountServiceAccountToken"},
		reflect.TypeOf(api.Container{}): {"Name", "Image", "Command", "Args", "WorkingDir", "Env", "Ports", "Resources",
			"VolumeMounts", "ReadinessProbe", "LivenessProbe", "ImagePullPolicy"},
		reflect.TypeOf(api.Volume{}):        {"Name", "EmptyDir", "HostPath", "ConfigMap", "Secret"},
		reflect.TypeOf(api.ContainerPort{}): {"Name", "ContainerPort", "HostPort", "Protocol", "HostIP"},
	}
	for typ, fields := range judged {
		for i := 0; i < typ.NumField(); i++ {
			if name := typ.Field(i).Name; !slices.Contains(fields, name) {
				t.Errorf("%s.%s is new: judge whether it reaches into the node (privileges) and list it here", typ.Name(), name)
			}
		}
	}
	for _, tc := range []struct {
		name string
		spec api.PodSpec
		want string
	}{
		{"plain", api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i", Ports: []api.ContainerPort{{ContainerPort: 80}}}},
			Volumes: []api.Volume{{Name: "e", EmptyDir: &api.EmptyDirVolumeSource{}}}}, ""},
		{"host network", api.PodSpec{HostNetwork: true}, "hostNetwork"},
		{"host path", api.PodSpec{Volumes: []api.Volume{{Name: "v", HostPath: &api.HostPathVolumeSource{Path: "/"}}}}, `hostPath volume "v" (/)`},
		{"host port", api.PodSpec{Containers: []api.Container{{Name: "c", Ports: []api.ContainerPort{{ContainerPort: 80, HostPort: 8080}}}}},
			`host port 8080 of container "c"`},
	} {
		if got := strings.Join(privileges(&tc.spec), ", "); got != tc.want {
			t.Errorf("%s: privileges %q, want %q", tc.name, got, tc.want)
		}
	}
}

func deployment(spec api.PodSpec) *api.Deployment {
	return &api.Deployment{TypeMeta: api.TypeMeta{Kind: "Deployment"}, ObjectMeta: api.ObjectMeta{Name: "d", Namespace: "default"},
		Spec: api.DeploymentSpec{Template: api.PodTemplateSpec{Spec: spec}}}
}

// TestAdmitPodSpecs: who may write which template, on create and update.
func TestAdmitPodSpecs(t *testing.T) {
	s := &Server{authz: testAuthorizer(t, editIn("default", editor.Name))}
	plain := api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}}}
	hostPath := api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}},
		Volumes: []api.Volume{{Name: "root", HostPath: &api.HostPathVolumeSource{Path: "/"}}}}
	swapped := hostPath
	swapped.Containers = []api.Container{{Name: "c", Image: "attacker"}}
	hostNet := plain
	hostNet.HostNetwork = true
	scaled := deployment(hostPath)
	three := int32(3)
	scaled.Spec.Replicas = &three
	relabelled := deployment(hostPath)
	relabelled.Spec.Template.Labels = map[string]string{"restartedAt": "now"}
	emptyLists := deployment(hostPath)
	emptyLists.Spec.Template.Spec.Containers[0].Env = []api.EnvVar{}

	cases := []struct {
		name     string
		user     rbac.User
		old, obj api.Object
		want     string // "" admitted, else part of the 403
	}{
		{"edit creates a plain deployment", editor, nil, deployment(plain), ""},
		{"edit creates a hostPath deployment", editor, nil, deployment(hostPath),
			`deployments "d" is forbidden: User "editor" may not create privileged pods (hostPath volume "root" (/) reach into the node, at spec.template.spec)`},
		{"edit creates a host network job", editor, nil, &api.Job{ObjectMeta: api.ObjectMeta{Name: "j", Namespace: "default"},
			Spec: api.JobSpec{Template: api.PodTemplateSpec{Spec: hostNet}}}, "at spec.template.spec"},
		{"edit creates a hostPath cronjob", editor, nil, &api.CronJob{ObjectMeta: api.ObjectMeta{Name: "cj", Namespace: "default"},
			Spec: api.CronJobSpec{JobTemplate: api.JobTemplateSpec{Spec: api.JobSpec{Template: api.PodTemplateSpec{Spec: hostPath}}}}},
			"at spec.jobTemplate.spec.template.spec"},
		{"edit in another namespace", editor, nil, &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "other"}, Spec: hostNet}, "hostNetwork"},
		{"admin creates a hostPath deployment", admin, nil, deployment(hostPath), ""},
		{"the controller manager creates the pods", ctrlMgr, nil, &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default"}, Spec: hostPath}, ""},
		{"a node creates a hostPath pod", testNode, nil, &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default"}, Spec: hostPath}, "forbidden"},
		{"edit scales the admin's hostPath deployment", editor, deployment(hostPath), scaled, ""},
		{"edit restarts it (template labels)", editor, deployment(hostPath), relabelled, ""},
		{"edit writes it back with empty lists", editor, deployment(hostPath), emptyLists, ""},
		{"edit swaps the image of the admin's hostPath deployment", editor, deployment(hostPath), deployment(swapped), "hostPath"},
		{"edit adds the host network", editor, deployment(plain), deployment(hostNet), "hostNetwork"},
		{"edit makes the admin's deployment plain", editor, deployment(hostPath), deployment(plain), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := api.LookupResource(reflect.TypeOf(tc.obj).Elem().Name())
			err := s.admitPodSpecs(withUser(context.Background(), tc.user), res, tc.old, tc.obj)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!errdefs.IsForbidden(err) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want forbidden saying %q", err, tc.want)
			}
		})
	}
}
