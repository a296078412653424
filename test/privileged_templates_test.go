package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/rollout"
	"minik8s/test/framework"
)

// Tokens of the template tests: an edit user of default (through team-a)
// and the controller manager, which holds pods/privileged as in minik8s up.
const templateTokens = secureTokens + `cm-token,system:kube-controller-manager,u9
`

// Pod specs: plain, and the ways a pod reaches into its node: the three
// of the host, and what Pod Security's baseline forbids in a security
// context (a privileged container, a capability beyond the default set,
// no seccomp filter).
var (
	plainSpec  = api.PodSpec{Containers: []api.Container{{Name: "c", Image: "i"}}}
	privileged = map[string]api.PodSpec{"hostPath": withHostPath(plainSpec), "hostNetwork": withHostNetwork(plainSpec), "hostPort": withHostPort(plainSpec),
		"privileged":   withContainerSecurity(plainSpec, &corev1.SecurityContext{Privileged: ptrTo(true)}),
		"capabilities": withContainerSecurity(plainSpec, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}),
		"seccomp":      withPodSecurity(plainSpec, &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}),
	}
	privilegeRe = []string{`"hostPath"`, `"hostNetwork"`, `"hostPort"`, `"privileged"`, `"SYS_ADMIN"`, `"Unconfined"`}
)

func withContainerSecurity(s api.PodSpec, sc *corev1.SecurityContext) api.PodSpec {
	s.Containers = []api.Container{{Name: "c", Image: "i", SecurityContext: sc}}
	return s
}

func withPodSecurity(s api.PodSpec, sc *corev1.PodSecurityContext) api.PodSpec {
	s.SecurityContext = sc
	return s
}

func withHostPath(s api.PodSpec) api.PodSpec {
	s.Volumes = []api.Volume{{Name: "root", HostPath: &api.HostPathVolumeSource{Path: "/"}}}
	return s
}

func withHostNetwork(s api.PodSpec) api.PodSpec { s.HostNetwork = true; return s }

func withHostPort(s api.PodSpec) api.PodSpec {
	s.Containers = []api.Container{{Name: "c", Image: "i", Ports: []api.ContainerPort{{ContainerPort: 80, HostPort: 80}}}}
	return s
}

// podKind is a kind that carries a pod spec: where its collection is, how
// to wrap a spec into one, and the JSON path of the spec in it.
type podKind struct {
	res  api.Resource
	wrap func(name string, spec api.PodSpec) any
	path []string
}

func (k podKind) coll() string { return k.res.Path("default", "") }

// applied is body as a server-side apply sends it: with its kind.
func (k podKind) applied(body any) string {
	var m map[string]any
	data, _ := json.Marshal(body)
	_ = json.Unmarshal(data, &m)
	m["apiVersion"], m["kind"] = k.res.GroupVersion(), k.res.Kind
	return mustJSON(m)
}

func (k podKind) body(name string, spec api.PodSpec) string {
	data, _ := json.Marshal(k.wrap(name, spec))
	return string(data)
}

func template(name string, spec api.PodSpec) api.PodTemplateSpec {
	return api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: spec}
}

func selector(name string) *api.LabelSelector {
	return &api.LabelSelector{MatchLabels: map[string]string{"app": name}}
}

func jobSpec(name string, spec api.PodSpec) api.JobSpec {
	spec.RestartPolicy = api.RestartPolicyNever
	return api.JobSpec{Template: template(name, spec)}
}

// podKinds are every kind that carries a pod spec today.
var podKinds = []podKind{
	{api.PodsResource, func(n string, s api.PodSpec) any {
		return api.Pod{ObjectMeta: api.ObjectMeta{Name: n, Labels: map[string]string{"app": n}}, Spec: s}
	}, []string{"spec"}},
	{api.ReplicaSetsResource, func(n string, s api.PodSpec) any {
		return api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: n}, Spec: api.ReplicaSetSpec{Selector: selector(n), Template: template(n, s)}}
	}, []string{"spec", "template", "spec"}},
	{api.DeploymentsResource, func(n string, s api.PodSpec) any {
		return api.Deployment{ObjectMeta: api.ObjectMeta{Name: n}, Spec: api.DeploymentSpec{Selector: selector(n), Template: template(n, s)}}
	}, []string{"spec", "template", "spec"}},
	{api.JobsResource, func(n string, s api.PodSpec) any {
		return api.Job{ObjectMeta: api.ObjectMeta{Name: n}, Spec: jobSpec(n, s)}
	}, []string{"spec", "template", "spec"}},
	{api.CronJobsResource, func(n string, s api.PodSpec) any {
		return api.CronJob{ObjectMeta: api.ObjectMeta{Name: n}, Spec: api.CronJobSpec{Schedule: "@every 1s",
			ConcurrencyPolicy: api.ConcurrencyForbid, JobTemplate: api.JobTemplateSpec{Spec: jobSpec(n, s)}}}
	}, []string{"spec", "jobTemplate", "spec", "template", "spec"}},
}

// send is caller.do with a Content-Type of the caller's choice.
func (c *caller) send(method, path, ctype, body string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", ctype)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// nested is {"a":{"b":leaf}} for path a, b.
func nested(path []string, leaf any) any {
	for i := len(path) - 1; i >= 0; i-- {
		leaf = map[string]any{path[i]: leaf}
	}
	return leaf
}

func mustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// TestPrivilegedTemplatesRefused: an edit user gets 403 for a pod that
// reaches into the node whatever kind carries it (Pod, ReplicaSet,
// Deployment, Job, CronJob), on create, PUT, every patch type and dry
// runs, and nothing is written; it may scale and restart an admin's
// privileged Deployment but not change what its pods run; a status write
// cannot change a spec; and with the controller manager running as
// itself, the only privileged pods that appear are those of the admin's
// objects. Server-side apply, creating and updating, is refused alike.
func TestPrivilegedTemplatesRefused(t *testing.T) {
	t.Parallel()
	s := framework.StartSecureAPIServer(t, templateTokens)
	rbacObject(t, s, "/namespaces/default/rolebindings", binding("RoleBinding", "default", "team-a-edit", "ClusterRole", "edit",
		api.Subject{Kind: api.GroupKind, APIGroup: api.RBACGroup, Name: "team-a"}))
	editor, cm := newCaller(t, s, "editor-token"), newCaller(t, s, "cm-token")
	waitAllowed(t, editor, "GET", "/api/v1/namespaces/default/pods")
	framework.StartControllers(t, s, controller.Config{Client: s.SecureClient(t, client.Config{Token: "cm-token"}),
		Controllers: []string{"replicaset", "deployment", "job", "cronjob"}})
	admin := func(method, path, body string, want int) {
		t.Helper()
		if code, data := httpDo(t, method, s.URL+path, "application/json", []byte(body)); code != want {
			t.Fatalf("the admin's %s %s: %d %s", method, path, code, data)
		}
	}
	stored := func(path string) string {
		t.Helper()
		code, data := httpDo(t, "GET", s.URL+path, "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, data)
		}
		return string(data)
	}
	// unpinned is the stored object at path, without its resourceVersion:
	// the controllers write its status meanwhile.
	unpinned := func(path string) map[string]any {
		t.Helper()
		var cur map[string]any
		if err := json.Unmarshal([]byte(stored(path)), &cur); err != nil {
			t.Fatal(err)
		}
		delete(cur["metadata"].(map[string]any), "resourceVersion")
		return cur
	}
	noPrivileges := func(path string) {
		t.Helper()
		got := stored(path)
		for _, p := range privilegeRe {
			if strings.Contains(got, p) {
				t.Errorf("%s holds %s after refused writes: %s", path, p, got)
			}
		}
	}

	t.Run("create", func(t *testing.T) {
		for _, k := range podKinds {
			for why, spec := range privileged {
				name := strings.ToLower("c-" + k.res.Name + "-" + why)
				for _, query := range []string{"?dryRun=All", ""} {
					editor.expect("POST", k.coll()+query, k.body(name, spec), http.StatusForbidden,
						fmt.Sprintf(`%s \"%s\" is forbidden: User \"editor\" may not create privileged pods`, k.res.Name, name))
				}
				// A server-side apply that would create it (the editor may create).
				var whole map[string]any
				_ = json.Unmarshal([]byte(k.body(name, spec)), &whole)
				for _, query := range []string{"?fieldManager=editor&dryRun=All", "?fieldManager=editor"} {
					if code, data := editor.send("PATCH", k.res.Path("default", name)+query, "application/apply-patch+yaml", k.applied(whole)); code != http.StatusForbidden ||
						!strings.Contains(string(data), "may not create privileged pods") {
						t.Errorf("apply creating %s %s (%s): %d %s", k.res.Kind, name, why, code, data)
					}
				}
				if code, data := httpDo(t, "GET", s.URL+k.res.Path("default", name), "", nil); code != http.StatusNotFound {
					t.Errorf("refused %s %s was written: %d %s", k.res.Kind, name, code, data)
				}
			}
		}
	})

	t.Run("update and patch", func(t *testing.T) {
		for _, k := range podKinds {
			name := "u-" + k.res.Name
			editor.expect("POST", k.coll(), k.body(name, plainSpec), http.StatusCreated, name)
			one := k.res.Path("default", name)
			// A Pod's spec and a Job's template are immutable: Kubernetes'
			// validation answers 422 before admission is asked.
			want, says := http.StatusForbidden, "may not create privileged pods"
			switch k.res.Kind {
			case api.PodsResource.Kind:
				want, says = http.StatusUnprocessableEntity, "pod updates may not change fields"
			case api.JobsResource.Kind:
				want, says = http.StatusUnprocessableEntity, "spec.template: Invalid value"
			}
			for why, spec := range privileged {
				cur := unpinned(one)
				var full map[string]any
				_ = json.Unmarshal([]byte(k.body(name, spec)), &full)
				cur["spec"] = full["spec"]
				for _, query := range []string{"?dryRun=All", ""} {
					editor.expect("PUT", one+query, mustJSON(cur), want, says)
				}
				var leaf any = full // the spec as the kind carries it
				for _, f := range k.path {
					leaf = leaf.(map[string]any)[f]
				}
				for _, ctype := range []string{"application/merge-patch+json", "application/strategic-merge-patch+json"} {
					if code, data := editor.send("PATCH", one, ctype, mustJSON(nested(k.path, leaf))); code != want || !strings.Contains(string(data), says) {
						t.Errorf("%s patch of %s %s to %s: %d %s", ctype, k.res.Kind, name, why, code, data)
					}
				}
				partial := nested(k.path, leaf).(map[string]any)
				partial["metadata"] = map[string]any{"name": name}
				if code, data := editor.send("PATCH", one+"?fieldManager=editor&force=true", "application/apply-patch+yaml", k.applied(partial)); code != want ||
					!strings.Contains(string(data), says) {
					t.Errorf("server-side apply of %s %s to %s: %d %s", k.res.Kind, name, why, code, data)
				}
				ops := mustJSON([]map[string]any{{"op": "replace", "path": "/" + strings.Join(k.path, "/"), "value": leaf}})
				if code, data := editor.send("PATCH", one, "application/json-patch+json", ops); code != want || !strings.Contains(string(data), says) {
					t.Errorf("json patch of %s %s to %s: %d %s", k.res.Kind, name, why, code, data)
				}
			}
			noPrivileges(one)
		}
	})

	t.Run("an admin's privileged deployment", func(t *testing.T) {
		d := podKinds[2]
		one := d.res.Path("default", "adm-scale")
		admin("POST", d.coll(), d.body("adm-scale", privileged["hostPath"]), http.StatusCreated)
		// Scaling and restarting leave what the pods run as the admin wrote it.
		editor.expect("PUT", one+"/scale", `{"metadata":{"name":"adm-scale"},"spec":{"replicas":2}}`, http.StatusOK, `"replicas":2`)
		cur := unpinned(one)
		cur["spec"].(map[string]any)["replicas"] = 3
		editor.expect("PUT", one, mustJSON(cur), http.StatusOK, `"replicas":3`)
		restart := `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"now"}}}}}`
		if code, data := editor.send("PATCH", one, "application/strategic-merge-patch+json", restart); code != http.StatusOK {
			t.Errorf("restarting the admin's deployment: %d %s", code, data)
		}
		// Changing what they run is refused.
		image := `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"attacker"}]}}}}`
		if code, data := editor.send("PATCH", one, "application/strategic-merge-patch+json", image); code != http.StatusForbidden ||
			!strings.Contains(string(data), `may not create privileged pods (hostPath volume \"root\" (/)`) {
			t.Errorf("swapping the image of the admin's hostPath deployment: %d %s", code, data)
		}
		if got := stored(one); strings.Contains(got, "attacker") {
			t.Errorf("the image was swapped: %s", got)
		}
	})

	t.Run("status writes keep the spec", func(t *testing.T) {
		for _, k := range podKinds[1:] {
			one := k.res.Path("default", "u-"+k.res.Name)
			cur := unpinned(one)
			var full map[string]any
			_ = json.Unmarshal([]byte(k.body("u-"+k.res.Name, privileged["hostNetwork"])), &full)
			cur["spec"] = full["spec"]
			// The controller manager may write status and create privileged pods.
			cm.expect("PUT", one+"/status", mustJSON(cur), http.StatusOK, "")
			noPrivileges(one)
		}
	})

	t.Run("no privileged pod from an edit user's objects", func(t *testing.T) {
		for _, k := range podKinds {
			editor.expect("POST", k.coll(), k.body("ed-"+k.res.Name, plainSpec), http.StatusCreated, "")
			if k.res.Kind != api.PodsResource.Kind && k.res.Kind != api.ReplicaSetsResource.Kind {
				admin("POST", k.coll(), k.body("adm-"+k.res.Name, privileged["hostNetwork"]), http.StatusCreated)
			}
		}
		// A ReplicaSet of the admin's, relabelled by the edit user as its
		// Deployment's (name, pod-template-hash and owner as the controller
		// would make them: the spec left as it was, which edit may), is not
		// taken for the Deployment's: its template is not the Deployment's.
		paused := api.Deployment{ObjectMeta: api.ObjectMeta{Name: "ed-adopt"},
			Spec: api.DeploymentSpec{Selector: selector("ed-adopt"), Template: template("ed-adopt", plainSpec), Paused: true}}
		var d api.Deployment
		if err := json.Unmarshal(editor.expect("POST", podKinds[2].coll(), mustJSON(paused), http.StatusCreated, ""), &d); err != nil {
			t.Fatal(err)
		}
		hash := rollout.TemplateHash(d.Spec.Template)
		rs := podKinds[1].wrap("ed-adopt-"+hash, privileged["hostNetwork"]).(api.ReplicaSet)
		zero := int32(0)
		rs.Spec.Replicas = &zero
		admin("POST", podKinds[1].coll(), mustJSON(rs), http.StatusCreated)
		taken := unpinned(podKinds[1].res.Path("default", rs.Name))
		meta := taken["metadata"].(map[string]any)
		meta["labels"] = map[string]string{api.LabelPodTemplateHash: hash}
		yes := true
		meta["ownerReferences"] = []api.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}}
		editor.expect("PUT", podKinds[1].res.Path("default", rs.Name), mustJSON(taken), http.StatusOK, "")
		if code, data := editor.send("PATCH", podKinds[2].res.Path("default", d.Name), "application/merge-patch+json", `{"spec":{"paused":false}}`); code != http.StatusOK {
			t.Fatalf("resuming %s: %d %s", d.Name, code, data)
		}

		// Every object of the namespace has its pods: the controllers have
		// acted on all of them.
		var pods []api.Pod
		roots := map[string]string{}
		waitFor(t, "every workload's pods", 2*time.Minute, func() bool {
			pods, roots = podsAndRoots(t, s)
			have := map[string]bool{}
			for _, p := range pods {
				have[roots[p.Name]] = true
			}
			for _, want := range []string{"ed-pods", "ed-replicasets", "ed-deployments", "ed-jobs", "ed-cronjobs",
				"adm-deployments", "adm-jobs", "adm-cronjobs", "adm-scale", "u-replicasets", "u-deployments", "u-jobs", "ed-adopt"} {
				if !have[want] {
					return false
				}
			}
			return true
		})
		for _, p := range pods {
			data := mustJSON(p.Spec)
			priv := strings.Contains(data, `"hostNetwork":true`) || strings.Contains(data, `"hostPath"`) || strings.Contains(data, `"hostPort"`)
			if root := roots[p.Name]; priv && !strings.HasPrefix(root, "adm-") {
				t.Errorf("pod %s (of %s) is privileged: %s", p.Name, root, data)
			}
			if root := roots[p.Name]; !priv && strings.HasPrefix(root, "adm-") {
				t.Errorf("pod %s of the admin's %s is not privileged: the check proves nothing", p.Name, root)
			}
		}
	})
}

// podsAndRoots lists default's pods and, for each, the name of the object
// at the top of its owners (a Deployment over a ReplicaSet, a CronJob over
// a Job; the pod itself when it has none).
func podsAndRoots(t *testing.T, s *framework.APIServer) ([]api.Pod, map[string]string) {
	t.Helper()
	owners := map[string]api.OwnerReference{} // uid → its controller
	names := map[string]string{}              // uid → name
	add := func(meta api.ObjectMeta) {
		names[meta.UID] = meta.Name
		for _, r := range meta.OwnerReferences {
			if r.Controller != nil && *r.Controller {
				owners[meta.UID] = r
			}
		}
	}
	var rss api.ReplicaSetList
	var jobs api.JobList
	var pods api.PodList
	for path, out := range map[string]any{api.ReplicaSetsResource.Path("default", ""): &rss, api.JobsResource.Path("default", ""): &jobs,
		api.PodsResource.Path("default", ""): &pods} {
		code, data := httpDo(t, "GET", s.URL+path, "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, data)
		}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatal(err)
		}
	}
	for _, rs := range rss.Items {
		add(rs.ObjectMeta)
	}
	for _, j := range jobs.Items {
		add(j.ObjectMeta)
	}
	roots := map[string]string{}
	for _, p := range pods.Items {
		add(p.ObjectMeta)
		uid, root := p.UID, p.Name
		for {
			r, ok := owners[uid]
			if !ok {
				break
			}
			uid, root = r.UID, r.Name
		}
		roots[p.Name] = root
	}
	return pods.Items, roots
}
