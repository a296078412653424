package authz

import (
	"context"
	"net/http/httptest"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/localpath"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// A node lists and watches the volumes pinned to it (by the field the
// registry reads from their affinity) and deletes one only when it is
// pinned to it and released under Delete, made by local-path: never
// another node's, a bound one, a retained one, or a user's directory.
func TestNodeVolumes(t *testing.T) {
	ctx := context.Background()
	vols := &registry.Store{Resource: api.PersistentVolumesResource, Storage: etcdtest.Start(t)}
	volume := func(name, node, phase, reclaim string, provisioned bool) {
		pv := &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: name},
			Spec: api.PersistentVolumeSpec{Capacity: api.ResourceList{api.ResourceStorage: "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
				PersistentVolumeReclaimPolicy: reclaim, NodeAffinity: localpath.NodeAffinity(node),
				Local: &corev1.LocalVolumeSource{Path: "/s/" + name}}}
		if provisioned {
			pv.Annotations = map[string]string{api.AnnotationProvisionedBy: api.LocalPathProvisioner}
		}
		out, err := vols.Create(ctx, "", pv)
		if err != nil {
			t.Fatal(err)
		}
		pv = out.(*api.PersistentVolume)
		pv.Status.Phase = phase
		if _, err := vols.UpdateStatus(ctx, "", name, pv); err != nil {
			t.Fatal(err)
		}
	}
	volume("mine", "n1", api.VolumeReleased, api.ReclaimDelete, true)
	volume("theirs", "n2", api.VolumeReleased, api.ReclaimDelete, true)
	volume("bound", "n1", api.VolumeBound, api.ReclaimDelete, true)
	volume("retained", "n1", api.VolumeReleased, api.ReclaimRetain, true)
	volume("users", "n1", api.VolumeReleased, api.ReclaimDelete, false)
	n := NodeAuthorizer{Volumes: vols}
	node := rbac.User{Name: rbac.NodeUserPrefix + "n1", Groups: []string{rbac.NodesGroup}}
	for _, tc := range []struct {
		name        string
		user        rbac.User
		verb, vname string
		sub         string
		selector    string
		want        bool
	}{
		{"delete its own released", node, "delete", "mine", "", "", true},
		{"delete another node's", node, "delete", "theirs", "", "", false},
		{"delete a bound one", node, "delete", "bound", "", "", false},
		{"delete a retained one", node, "delete", "retained", "", "", false},
		{"delete a user's directory's", node, "delete", "users", "", "", false},
		{"delete a missing one", node, "delete", "missing", "", "", false},
		{"delete the status", node, "delete", "mine", "status", "", false},
		{"delete all", node, "deletecollection", "", "", "", false},
		{"update its own", node, "update", "mine", "", "", false},
		{"not a node", rbac.User{Name: "n1", Groups: []string{rbac.NodesGroup}}, "delete", "mine", "", "", false},
		{"list its own", node, "list", "", "", api.FieldVolumeNode + "=n1", true},
		{"watch its own", node, "watch", "", "", api.FieldVolumeNode + "=n1", true},
		{"list its own by name", node, "list", "mine", "", api.FieldVolumeNode + "=n1,metadata.name=mine", true},
		{"list another's", node, "list", "", "", api.FieldVolumeNode + "=n2", false},
		{"list all", node, "list", "", "", "", false},
		{"list all but another's", node, "list", "", "", api.FieldVolumeNode + "!=n2", false},
		{"list by name", node, "list", "mine", "", "metadata.name=mine", false},
		{"watch all", node, "watch", "", "", "", false},
	} {
		r := httptest.NewRequest("GET", "/api/v1/persistentvolumes?"+url.Values{"fieldSelector": {tc.selector}}.Encode(), nil)
		a := rbac.Attributes{User: tc.user, Verb: tc.verb, Resource: api.PersistentVolumesResource.Name, Subresource: tc.sub,
			Name: tc.vname, ResourceRequest: true}
		if got := n.Authorizes(r, a); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
