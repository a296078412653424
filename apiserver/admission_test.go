package apiserver

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"minik8s/apiserver/authz"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// testAuthorizer is the built-in policy plus objs.
func testAuthorizer(t *testing.T, objs ...api.Object) *authz.Authorizer {
	t.Helper()
	a, err := authz.Fixed(objs...)
	if err != nil {
		t.Fatal(err)
	}
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
			err := s.admitPodSpecs(rbac.WithUser(context.Background(), tc.user), res, tc.old, tc.obj)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!errdefs.IsForbidden(err) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want forbidden saying %q", err, tc.want)
			}
		})
	}
}
