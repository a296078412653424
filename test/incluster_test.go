package test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// TestClientGoInAPod (issue 25, hole 12): a client-go program (test/incluster)
// runs in a pod on its own network on each of two nodes of an underlay, with
// its service account (rest.InClusterConfig): it reaches the API at the
// kubernetes Service (KUBERNETES_SERVICE_HOST, 443), which the node's rules
// lead to the address the apiserver advertises (node 1's, where its secure
// port is served), checks the serving certificate against the mounted CA,
// lists the ConfigMaps its Role lets it read and is refused the Secrets.
func TestClientGoInAPod(t *testing.T) {
	// Long, and on a cluster of its own: it runs beside the other such tests.
	t.Parallel()
	ctx := context.Background()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportInClusterClient(t)
	u := framework.StartUnderlay(t, 2)
	s := u.StartSecureAPIServer(t, u.Nodes[0])
	kubelets := map[string]*framework.NetKubelet{}
	for i, node := range u.Nodes {
		name := fmt.Sprintf("incluster-%d", i+1)
		kubelets[name] = framework.StartNetKubelet(t, node, s, ctd, name)
	}
	c := s.Client

	// The Endpoints name the advertised address and the secure port.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.SecureURL, "https://"))
	waitUntil(t, 30*time.Second, "the kubernetes Service's endpoints at node 1's address", func() bool {
		ep, err := c.Endpoints("default").Get(ctx, "kubernetes")
		return err == nil && len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1 &&
			ep.Subsets[0].Addresses[0].IP == u.Nodes[0].IP && strconv.Itoa(int(ep.Subsets[0].Addresses[0].Port)) == port
	})

	const ns = "apps"
	for _, obj := range []func() error{
		func() error {
			_, err := c.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: ns}})
			return err
		},
		func() error {
			_, err := c.ServiceAccounts(ns).Create(ctx, &api.ServiceAccount{ObjectMeta: api.ObjectMeta{Name: "reader"}})
			return err
		},
		func() error {
			_, err := c.Roles(ns).Create(ctx, &api.Role{ObjectMeta: api.ObjectMeta{Name: "configmaps"},
				Rules: []api.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
			return err
		},
		func() error {
			_, err := c.RoleBindings(ns).Create(ctx, &api.RoleBinding{ObjectMeta: api.ObjectMeta{Name: "reader-configmaps"},
				Subjects: []api.Subject{{Kind: api.ServiceAccountKind, Name: "reader", Namespace: ns}},
				RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.RoleKind, Name: "configmaps"}})
			return err
		},
		func() error {
			_, err := c.ConfigMaps(ns).Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "settings"}, Data: map[string]string{"level": "debug"}})
			return err
		},
		func() error {
			_, err := c.Secrets(ns).Create(ctx, &api.Secret{ObjectMeta: api.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "s3cret"}})
			return err
		},
	} {
		if err := obj(); err != nil && !errdefs.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for node := range kubelets {
		p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "client-on-" + node},
			Spec: api.PodSpec{NodeName: node, ServiceAccountName: "reader", RestartPolicy: api.RestartPolicyNever,
				Containers: []api.Container{{Name: "client", Image: containerdtest.InClusterClientImage}}}}
		if _, err := c.Pods(ns).Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for node, k := range kubelets {
		name := "client-on-" + node
		var p *api.Pod
		var err error
		waitUntil(t, 2*time.Minute, name+" ended", func() bool {
			p, err = c.Pods(ns).Get(ctx, name)
			return err == nil && (p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed)
		})
		out := podLog(k, p)
		if p.Status.Phase != api.PodSucceeded {
			t.Errorf("%s: %s\n%s", name, statusString(p), out)
			continue
		}
		for _, want := range []string{"server: https://10.43.0.1:443", "configmaps of apps: settings", "secrets of apps: forbidden"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s's output lacks %q:\n%s", name, want, out)
			}
		}
	}
}
