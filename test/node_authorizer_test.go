package test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/localpath"
	"minik8s/pkg/rbac"
	"minik8s/test/framework"
)

// TestNodeAuthorizer: a node's credentials read only the Secrets and
// ConfigMaps its pods use (get, or a list or watch of that one name), and
// write nothing Kubernetes' NodeRestriction keeps from a node: pods (which
// would make it a user of any Secret), Leases (the controllers' and
// runners' leader locks), labels of its Node that steer workloads; of
// volumes, it lists and watches those pinned to it and deletes one only
// when pinned to it and released under Delete.
func TestNodeAuthorizer(t *testing.T) {
	s := framework.StartSecureAPIServer(t, "")
	ctx := context.Background()
	c := s.Client
	if _, err := c.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"default", "team"} {
		for _, name := range []string{"vol", "env", "other"} {
			if _, err := c.Secrets(ns).Create(ctx, &api.Secret{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{"k": "v"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ConfigMaps(ns).Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, n := range []string{"n1", "n2"} {
		if _, err := c.Nodes().Create(ctx, &api.Node{ObjectMeta: api.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	// p1 on n1 uses "vol" and "env" of default; p2 on n2 uses "other".
	ref := func(name string) *api.KeySelector { return &api.KeySelector{Name: name, Key: "k"} }
	// p1 mounts claim "vol", bound to volume pv-vol; p2 claim "other"
	// (pv-other).
	for _, name := range []string{"vol", "other"} {
		class := ""
		if _, err := c.PersistentVolumeClaims("default").Create(ctx, &api.PersistentVolumeClaim{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
			Spec: api.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, StorageClassName: &class,
				Resources: api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: "1Gi"}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PersistentVolumes().Create(ctx, &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: "pv-" + name},
			Spec: api.PersistentVolumeSpec{Capacity: api.ResourceList{api.ResourceStorage: "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
				ClaimRef: &api.ObjectReference{Namespace: "default", Name: name}, HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + name}}}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(name string) api.Volume {
		return api.Volume{Name: "pvc", PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: name}}
	}
	p1 := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p1", Namespace: "default"}, Spec: api.PodSpec{NodeName: "n1",
		Volumes: []api.Volume{{Name: "s", Secret: &api.SecretVolumeSource{SecretName: "vol"}}, {Name: "c", ConfigMap: &api.ConfigMapVolumeSource{Name: "vol"}}, claim("vol")},
		Containers: []api.Container{{Name: "main", Image: "busybox", Env: []api.EnvVar{
			{Name: "S", ValueFrom: &api.EnvVarSource{SecretKeyRef: ref("env")}}, {Name: "C", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: ref("env")}}}}}}}
	p2 := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p2", Namespace: "default"}, Spec: api.PodSpec{NodeName: "n2",
		Volumes:    []api.Volume{{Name: "s", Secret: &api.SecretVolumeSource{SecretName: "other"}}, {Name: "c", ConfigMap: &api.ConfigMapVolumeSource{Name: "other"}}, claim("other")},
		Containers: []api.Container{{Name: "main", Image: "busybox"}}}}
	for _, p := range []*api.Pod{p1, p2} {
		if _, err := c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	cc, err := apiserver.ClientConfigFor(s.DataDir, s.SecureURL, rbac.NodeUserPrefix+"n1", rbac.NodesGroup)
	if err != nil {
		t.Fatal(err)
	}
	n1, err := client.NewForConfig(cc)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawClient(t, s, cc)

	t.Run("reads", func(t *testing.T) {
		for _, res := range []string{"secrets", "configmaps"} {
			for _, tc := range []struct {
				path string
				want int
			}{
				{"/api/v1/namespaces/default/" + res + "/vol", http.StatusOK},
				{"/api/v1/namespaces/default/" + res + "/env", http.StatusOK},
				{"/api/v1/namespaces/default/" + res + "?fieldSelector=metadata.name%3Dvol", http.StatusOK},
				{"/api/v1/namespaces/default/" + res + "?watch=true&fieldSelector=metadata.name%3Denv", http.StatusOK},
				{"/api/v1/namespaces/default/" + res + "/other", http.StatusForbidden}, // p2's, on n2
				{"/api/v1/namespaces/team/" + res + "/vol", http.StatusForbidden},      // no pod of n1 there
				{"/api/v1/namespaces/default/" + res, http.StatusForbidden},
				{"/api/v1/namespaces/default/" + res + "?watch=true", http.StatusForbidden},
				{"/api/v1/namespaces/default/" + res + "?fieldSelector=metadata.name%3Dother", http.StatusForbidden},
				{"/api/v1/namespaces/default/" + res + "?fieldSelector=metadata.name%21%3Dvol", http.StatusForbidden},
				{"/api/v1/" + res, http.StatusForbidden},
				{"/api/v1/" + res + "?fieldSelector=metadata.name%3Dvol", http.StatusForbidden},
			} {
				if got := statusOf(t, raw, s.SecureURL+tc.path); got != tc.want {
					t.Errorf("node n1: GET %s: %d, want %d", tc.path, got, tc.want)
				}
			}
		}
		// Claims and volumes: those of its pods, by get only; not another
		// node's, and no deleting even its own.
		for _, tc := range []struct {
			method, path string
			want         int
		}{
			{"GET", "/api/v1/namespaces/default/persistentvolumeclaims/vol", http.StatusOK},
			{"GET", "/api/v1/persistentvolumes/pv-vol", http.StatusOK},
			{"GET", "/api/v1/namespaces/default/persistentvolumeclaims/other", http.StatusForbidden}, // p2's, on n2
			{"GET", "/api/v1/persistentvolumes/pv-other", http.StatusForbidden},
			{"GET", "/api/v1/namespaces/default/persistentvolumeclaims", http.StatusForbidden},
			{"GET", "/api/v1/persistentvolumes", http.StatusForbidden},
			{"GET", "/api/v1/persistentvolumes?fieldSelector=metadata.name%3Dpv-vol", http.StatusForbidden},
			{"DELETE", "/api/v1/persistentvolumes/pv-other", http.StatusForbidden},
			{"DELETE", "/api/v1/persistentvolumes/pv-vol", http.StatusForbidden},
			{"DELETE", "/api/v1/namespaces/default/persistentvolumeclaims/vol", http.StatusForbidden},
		} {
			req, err := http.NewRequest(tc.method, s.SecureURL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := raw.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("node n1: %s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
			}
		}
		if list, _, err := n1.Secrets("default").List(ctx, client.ListOptions{FieldSelector: "metadata.name=vol"}); err != nil || len(list) != 1 || list[0].Name != "vol" {
			t.Errorf("n1 listing secret vol by name: %v %v", list, err)
		}
		// Once p1 is gone, what it used is n1's no longer.
		if _, err := c.Pods("default").Delete(ctx, "p1", client.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}); err != nil {
			t.Fatal(err)
		}
		if _, err := n1.Secrets("default").Get(ctx, "vol"); !errdefs.IsForbidden(err) {
			t.Errorf("n1 reading secret vol after its pod went: %v, want 403", err)
		}

		// Every node serves the Ingresses: it gets the TLS Secret an
		// Ingress of the Secret's namespace names, by name only, and no
		// other Secret nor that one's ConfigMap twin.
		if _, err := c.Ingresses("team").Create(ctx, &api.Ingress{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "team"},
			Spec: api.IngressSpec{TLS: []api.IngressTLS{{Hosts: []string{"a.example.com"}, SecretName: "vol"}},
				DefaultBackend: &api.IngressBackend{Service: &api.IngressServiceBackend{Name: "web", Port: api.ServiceBackendPort{Number: 80}}}}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			path string
			want int
		}{
			{"/api/v1/namespaces/team/secrets/vol", http.StatusOK},
			{"/api/v1/namespaces/team/secrets/env", http.StatusForbidden},
			{"/api/v1/namespaces/default/secrets/vol", http.StatusForbidden}, // the Ingress is in team
			{"/api/v1/namespaces/team/configmaps/vol", http.StatusForbidden},
			{"/api/v1/namespaces/team/secrets?fieldSelector=metadata.name%3Dvol", http.StatusForbidden},
			{"/api/v1/namespaces/team/secrets?watch=true&fieldSelector=metadata.name%3Dvol", http.StatusForbidden},
			{"/apis/networking.k8s.io/v1/ingresses", http.StatusOK},
			{"/apis/networking.k8s.io/v1/ingressclasses", http.StatusOK},
		} {
			if got := statusOf(t, raw, s.SecureURL+tc.path); got != tc.want {
				t.Errorf("node n1 with an Ingress in team naming secret vol: GET %s: %d, want %d", tc.path, got, tc.want)
			}
		}
		if _, err := n1.Ingresses("team").Create(ctx, &api.Ingress{ObjectMeta: api.ObjectMeta{Name: "mine", Namespace: "team"},
			Spec: api.IngressSpec{TLS: []api.IngressTLS{{SecretName: "env"}},
				DefaultBackend: &api.IngressBackend{Service: &api.IngressServiceBackend{Name: "web", Port: api.ServiceBackendPort{Number: 80}}}}}); !errdefs.IsForbidden(err) {
			t.Errorf("n1 creating an Ingress (to reach another Secret through it): %v, want 403", err)
		}
		if _, err := c.Ingresses("team").Delete(ctx, "web", client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := n1.Secrets("team").Get(ctx, "vol"); !errdefs.IsForbidden(err) {
			t.Errorf("n1 reading secret vol of team after its Ingress went: %v, want 403", err)
		}
	})

	// The kubelet deletes its node's local-path volumes released under
	// Delete: n1 lists and watches the volumes pinned to it, and deletes
	// such a volume of its own, never another node's, a bound one, a
	// retained one, or a user's directory.
	t.Run("released volumes", func(t *testing.T) {
		volume := func(name, node, phase, reclaim string, provisioned bool) {
			pv := &api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: name},
				Spec: api.PersistentVolumeSpec{Capacity: api.ResourceList{api.ResourceStorage: "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
					PersistentVolumeReclaimPolicy: reclaim, NodeAffinity: localpath.NodeAffinity(node), StorageClassName: "local-path",
					ClaimRef: &api.ObjectReference{Namespace: "default", Name: "gone-" + name, UID: "uid-" + name},
					Local:    &corev1.LocalVolumeSource{Path: "/var/lib/minik8s/storage/pvc-" + name}}}
			if provisioned {
				pv.Annotations = map[string]string{api.AnnotationProvisionedBy: api.LocalPathProvisioner}
			}
			pv, err := c.PersistentVolumes().Create(ctx, pv)
			if err != nil {
				t.Fatal(err)
			}
			pv.Status.Phase = phase
			if _, err := c.PersistentVolumes().UpdateStatus(ctx, pv); err != nil {
				t.Fatal(err)
			}
		}
		volume("rel-n1", "n1", api.VolumeReleased, api.ReclaimDelete, true)
		volume("rel-n2", "n2", api.VolumeReleased, api.ReclaimDelete, true)
		volume("bound-n1", "n1", api.VolumeBound, api.ReclaimDelete, true)
		volume("retain-n1", "n1", api.VolumeReleased, api.ReclaimRetain, true)
		volume("user-n1", "n1", api.VolumeReleased, api.ReclaimDelete, false)
		mine := url.Values{"fieldSelector": {api.FieldVolumeNode + "=n1"}}.Encode()
		theirs := url.Values{"fieldSelector": {api.FieldVolumeNode + "=n2"}}.Encode()
		for _, tc := range []struct {
			method, path string
			want         int
		}{
			{"GET", "/api/v1/persistentvolumes?" + mine, http.StatusOK},
			{"GET", "/api/v1/persistentvolumes?watch=true&" + mine, http.StatusOK},
			{"GET", "/api/v1/persistentvolumes?" + theirs, http.StatusForbidden},
			{"GET", "/api/v1/persistentvolumes?watch=true&" + theirs, http.StatusForbidden},
			{"GET", "/api/v1/persistentvolumes?watch=true", http.StatusForbidden},
			{"GET", "/api/v1/persistentvolumes/rel-n1", http.StatusForbidden}, // no pod of n1 mounts its claim
			{"DELETE", "/api/v1/persistentvolumes/rel-n2", http.StatusForbidden},
			{"DELETE", "/api/v1/persistentvolumes/bound-n1", http.StatusForbidden},
			{"DELETE", "/api/v1/persistentvolumes/retain-n1", http.StatusForbidden},
			{"DELETE", "/api/v1/persistentvolumes/user-n1", http.StatusForbidden},
			{"PUT", "/api/v1/persistentvolumes/rel-n1/status", http.StatusForbidden},
			{"DELETE", "/api/v1/persistentvolumes/rel-n1", http.StatusOK},
		} {
			req, err := http.NewRequest(tc.method, s.SecureURL+tc.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := raw.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("node n1: %s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
			}
		}
		list, _, err := n1.PersistentVolumes().List(ctx, client.ListOptions{FieldSelector: api.FieldVolumeNode + "=n1"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, pv := range list {
			names = append(names, pv.Name)
		}
		if want := []string{"bound-n1", "retain-n1", "user-n1"}; !slices.Equal(names, want) {
			t.Errorf("n1 lists the volumes pinned to it: %v, want %v", names, want)
		}
		for _, name := range []string{"rel-n2", "bound-n1", "retain-n1", "user-n1"} {
			if _, err := c.PersistentVolumes().Get(ctx, name); err != nil {
				t.Errorf("volume %s after n1's attempts: %v", name, err)
			}
		}
	})

	t.Run("writes", func(t *testing.T) {
		pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "mine", Namespace: "default"}, Spec: api.PodSpec{NodeName: "n1",
			Volumes:    []api.Volume{{Name: "s", Secret: &api.SecretVolumeSource{SecretName: "other"}}},
			Containers: []api.Container{{Name: "main", Image: "busybox"}}}}
		if _, err := n1.Pods("default").Create(ctx, pod); !errdefs.IsForbidden(err) {
			t.Errorf("n1 creating a pod bound to itself that uses secret other: %v, want 403", err)
		}
		// Granted creating pods, it still may not make one that uses a
		// Secret, a ConfigMap or a service account (NodeRestriction).
		grant := &api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: "node-makes-pods"},
			Rules: []api.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
		if _, err := c.ClusterRoles().Create(ctx, grant); err != nil {
			t.Fatal(err)
		}
		binding := &api.ClusterRoleBinding{ObjectMeta: api.ObjectMeta{Name: "node-makes-pods"},
			Subjects: []api.Subject{{Kind: api.UserKind, Name: rbac.NodeUserPrefix + "n1"}},
			RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.ClusterRoleKind, Name: "node-makes-pods"}}
		if _, err := c.ClusterRoleBindings().Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, time.Minute, "the grant to reach the authorizer and admission to refuse the pod", func() bool {
			_, err := n1.Pods("default").Create(ctx, pod)
			return errdefs.IsForbidden(err) && strings.Contains(err.Error(), "can not create pods that reference secrets")
		})
		pod.Spec.Volumes = []api.Volume{{Name: "pvc", PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "other"}}}
		if _, err := n1.Pods("default").Create(ctx, pod); !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "persistentvolumeclaims") {
			t.Errorf("n1 creating a pod that mounts claim other (to read it and its volume): %v, want 403", err)
		}
		pod.Spec.Volumes, pod.Spec.ServiceAccountName = nil, "default"
		if _, err := n1.Pods("default").Create(ctx, pod); !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "service account") {
			t.Errorf("n1 creating a pod that names a service account: %v, want 403", err)
		}
		// Nor by the field's old name, which the server copies into the new.
		pod.Spec.ServiceAccountName, pod.Spec.ServiceAccount = "", "admin"
		if _, err := n1.Pods("default").Create(ctx, pod); !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "service account") {
			t.Errorf("n1 creating a pod that names a service account by serviceAccount: %v, want 403", err)
		}
		lease := &api.Lease{ObjectMeta: api.ObjectMeta{Name: "n1", Namespace: "kube-system"}}
		if _, err := n1.Leases("kube-system").Create(ctx, lease); !errdefs.IsForbidden(err) {
			t.Errorf("n1 creating a lease: %v, want 403", err)
		}
		node, err := n1.Nodes().Get(ctx, "n1")
		if err != nil {
			t.Fatal(err)
		}
		node.Labels = map[string]string{"node-restriction.kubernetes.io/pool": "secure"}
		if _, err := n1.Nodes().Update(ctx, node); !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "node-restriction.kubernetes.io/pool") {
			t.Errorf("n1 labelling its Node node-restriction.kubernetes.io/pool: %v, want 403", err)
		}
		node.Labels = map[string]string{api.LabelPodNetwork: "cni", "kubernetes.io/hostname": "n1"}
		if _, err := n1.Nodes().Update(ctx, node); err != nil {
			t.Errorf("n1 setting the labels a kubelet sets: %v", err)
		}
	})
}

// rawClient is an HTTP client of the secure port with cc's certificate.
func rawClient(t *testing.T, s *framework.APIServer, cc client.Config) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	pair, err := tls.X509KeyPair(cc.CertData, cc.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
}

// statusOf is the status of GET url (a watch is closed at its headers).
func statusOf(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
