package test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
)

// editorStatefulSets: the edit user of a makes a StatefulSet whose pod
// template and claim template name namespace b: its pod and claim are
// a's (or the set is refused); it reads, scales and writes none of b's
// StatefulSets; a template running as b's service account is invalid, as
// a Deployment's is.
func (c *attackCluster) editorStatefulSets(t *testing.T) {
	ctx := context.Background()
	ed := newAttacker(t, c.s, attackEditor, "editor-token")
	forbidden := []int{http.StatusForbidden}
	const who = `User \"editor\"`
	zero := int32(0)
	db := &api.StatefulSet{ObjectMeta: api.ObjectMeta{Name: "db", Namespace: "b"}, Spec: api.StatefulSetSpec{Replicas: &zero,
		Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "db"}},
			Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "db"}}}}}}
	if _, err := c.s.Client.StatefulSets("b").Create(ctx, db); err != nil && !errdefs.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// sts is a's StatefulSet named name, its template and claim template
	// saying namespace ns; its pod fits no node (it waits, its claim
	// unbound: nothing is provisioned on a node).
	sts := func(name, ns, serviceAccount string, replicas int) string {
		return mustJSON(map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"replicas": replicas, "serviceName": name, "selector": map[string]any{"matchLabels": map[string]string{"app": name}},
				"template": map[string]any{"metadata": map[string]any{"namespace": ns, "labels": map[string]string{"app": name}},
					"spec": map[string]any{"serviceAccountName": serviceAccount, "nodeSelector": map[string]string{"minik8s.io/no-such-node": "x"},
						"containers": []any{map[string]any{"name": "c", "image": "db", "volumeMounts": []any{map[string]string{"name": "www", "mountPath": "/data"}}}}}},
				"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "www", "namespace": ns},
					"spec": map[string]any{"accessModes": []string{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]string{"storage": "1Gi"}}}}}}})
	}
	code, data := ed.do(t, "POST", api.StatefulSetsResource.Path("a", ""), "application/json", sts("ctl-sts", "b", "default", 1), nil)
	t.Logf("a StatefulSet whose templates name b: %d %s", code, data) // shown with -v
	switch code {
	case http.StatusCreated:
		waitUntil(t, time.Minute, "the pod and claim of a's set naming b", func() bool {
			_, perr := c.s.Client.Pods("a").Get(ctx, "ctl-sts-0")
			_, cerr := c.s.Client.PersistentVolumeClaims("a").Get(ctx, "www-ctl-sts-0")
			return perr == nil && cerr == nil
		})
		if _, err := c.s.Client.Pods("b").Get(ctx, "ctl-sts-0"); !errdefs.IsNotFound(err) {
			t.Errorf("editor: a's StatefulSet whose template names b made a pod in b (%v)", err)
		}
		if _, err := c.s.Client.PersistentVolumeClaims("b").Get(ctx, "www-ctl-sts-0"); !errdefs.IsNotFound(err) {
			t.Errorf("editor: a's StatefulSet whose claim template names b made a claim in b (%v)", err)
		}
		if _, err := c.s.Client.StatefulSets("a").Delete(ctx, "ctl-sts", client.DeleteOptions{}); err != nil {
			t.Error(err)
		}
		if _, err := c.s.Client.PersistentVolumeClaims("a").Delete(ctx, "www-ctl-sts-0", client.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	case http.StatusUnprocessableEntity, http.StatusBadRequest:
	default:
		t.Errorf("editor: a StatefulSet whose templates name b: %d %s", code, data)
	}
	scale := func(ns string) string {
		return mustJSON(map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": "db", "namespace": ns},
			"spec": map[string]any{"replicas": 5}})
	}
	dbPath := api.StatefulSetsResource.Path("b", "db")
	ed.try(t,
		attempt{name: "a StatefulSet running as b's service account", method: "POST", path: api.StatefulSetsResource.Path("a", ""),
			body: sts("pwn-sts-sa", "a", "b/default", 0), want: []int{http.StatusUnprocessableEntity}},
		attempt{name: "a StatefulSet of b posted to a", method: "POST", path: api.StatefulSetsResource.Path("a", ""), want: []int{http.StatusBadRequest},
			body: `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"pwn-sts-ns","namespace":"b"}}`},
		attempt{name: "a StatefulSet in b", method: "POST", path: api.StatefulSetsResource.Path("b", ""), body: sts("pwn-sts-b", "b", "default", 0),
			want: forbidden, says: who},
		attempt{name: "b's StatefulSets", method: "GET", path: api.StatefulSetsResource.Path("b", ""), want: forbidden, says: who},
		attempt{name: "every namespace's StatefulSets", method: "GET", path: api.StatefulSetsResource.Path("", ""), want: forbidden, says: who},
		attempt{name: "b's StatefulSet", method: "GET", path: dbPath, want: forbidden, says: who},
		attempt{name: "a watch of b's StatefulSets", method: "GET", path: api.StatefulSetsResource.Path("b", "") + "?watch=true", want: forbidden, says: who},
		attempt{name: "b's StatefulSet's scale", method: "GET", path: dbPath + "/scale", want: forbidden, says: who},
		attempt{name: "scaling b's StatefulSet", method: "PUT", path: dbPath + "/scale", body: scale("b"), want: forbidden, says: who},
		attempt{name: "scaling b's StatefulSet by patch", method: "PATCH", path: dbPath + "/scale", ctype: "application/merge-patch+json",
			body: `{"spec":{"replicas":5}}`, want: forbidden, says: who},
		attempt{name: "patching b's StatefulSet", method: "PATCH", path: dbPath, ctype: "application/merge-patch+json",
			body: `{"spec":{"replicas":5}}`, want: forbidden, says: who},
		attempt{name: "the status of b's StatefulSet", method: "PUT", path: dbPath + "/status", body: mustJSON(db), want: forbidden, says: who},
		attempt{name: "deleting b's StatefulSet", method: "DELETE", path: dbPath, want: forbidden, says: who},
		attempt{name: "b's claims", method: "GET", path: api.PersistentVolumeClaimsResource.Path("b", ""), want: forbidden, says: who},
		attempt{name: "b's ControllerRevisions", method: "GET", path: api.ControllerRevisionsResource.Path("b", ""), want: forbidden, says: who},
	)
	got, err := c.s.Client.StatefulSets("b").Get(ctx, "db")
	if err != nil || got.Spec.Replicas == nil || *got.Spec.Replicas != 0 {
		t.Errorf("b's StatefulSet after the editor's attempts: %+v %v", got, err)
	}
}
