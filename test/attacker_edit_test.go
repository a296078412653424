package test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/pkg/rbac"
	"minik8s/test/containerdtest"
)

var attackPodSpecType = reflect.TypeOf(api.PodSpec{})

// podBearingKinds are the kinds of api.Resources whose type can hold a
// pod spec, found by walking their types: a kind added later is attacked
// without a change here.
func podBearingKinds() []api.Resource {
	var out []api.Resource
	for _, res := range api.Resources {
		if holdsPodSpec(reflect.TypeOf(res.New()).Elem(), map[reflect.Type]bool{}) {
			out = append(out, res)
		}
	}
	return out
}

func holdsPodSpec(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == attackPodSpecType {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return holdsPodSpec(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() && holdsPodSpec(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// podKindObject is an object of res named name in a whose every pod spec
// is spec, its templates labelled app=NAME and selected: with run, one
// that makes pods at once (a replica, not suspended, scheduled every
// minute), else one that makes none (a Pod runs).
func podKindObject(res api.Resource, name string, spec api.PodSpec, run bool) api.Object {
	obj := res.New()
	v := reflect.ValueOf(obj).Elem()
	if tm := v.FieldByName("TypeMeta"); tm.IsValid() {
		tm.Set(reflect.ValueOf(api.TypeMeta{APIVersion: res.GroupVersion(), Kind: res.Kind}))
	}
	fillPodSpecs(v, name, spec, false, run)
	if ds, ok := obj.(*api.DaemonSet); ok && !run {
		// A DaemonSet has no count to hold at zero: it is kept off
		// every node instead.
		ds.Spec.Template.Spec.NodeSelector = map[string]string{"minik8s.io/no-such-node": "x"}
	}
	meta := obj.GetObjectMeta()
	meta.Name, meta.Namespace = name, "a"
	return obj
}

func fillPodSpecs(v reflect.Value, name string, spec api.PodSpec, inJob, run bool) {
	t := v.Type()
	switch {
	case t == attackPodSpecType:
		s := spec
		s.Containers = slices.Clone(spec.Containers)
		if inJob {
			s.RestartPolicy = api.RestartPolicyNever
		}
		v.Set(reflect.ValueOf(s))
		return
	case t == reflect.TypeOf(api.JobSpec{}):
		inJob = true
	}
	if !holdsPodSpec(t, map[reflect.Type]bool{}) {
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		e := reflect.New(t.Elem())
		fillPodSpecs(e.Elem(), name, spec, inJob, run)
		v.Set(e)
	case reflect.Slice:
		e := reflect.New(t.Elem()).Elem()
		fillPodSpecs(e, name, spec, inJob, run)
		v.Set(reflect.Append(reflect.MakeSlice(t, 0, 1), e))
	case reflect.Struct:
		labels := map[string]string{"app": name}
		_, manual := t.FieldByName("ManualSelector")
		_, templated := t.FieldByName("Template")
		for i := 0; i < t.NumField(); i++ {
			f, fv := t.Field(i), v.Field(i)
			switch {
			case !f.IsExported():
			case f.Type == reflect.TypeOf(api.ObjectMeta{}) && t == reflect.TypeOf(api.PodTemplateSpec{}):
				fv.Set(reflect.ValueOf(api.ObjectMeta{Labels: labels}))
			case f.Name == "Selector" && f.Type == reflect.TypeOf(&api.LabelSelector{}) && templated && !manual:
				fv.Set(reflect.ValueOf(&api.LabelSelector{MatchLabels: labels}))
			case f.Name == "Replicas" && f.Type == reflect.TypeOf(new(int32)):
				n := int32(0)
				if run {
					n = 1
				}
				fv.Set(reflect.ValueOf(&n))
			case f.Name == "Suspend" && f.Type == reflect.TypeOf(new(bool)):
				suspend := !run
				fv.Set(reflect.ValueOf(&suspend))
			case f.Name == "Schedule" && f.Type.Kind() == reflect.String:
				fv.SetString(map[bool]string{false: "@hourly", true: "* * * * *"}[run])
			default:
				fillPodSpecs(fv, name, spec, inJob, run)
			}
		}
	}
}

// editorTemplates: the edit user of a writes a pod that reaches into the
// node (a hostPath, the host network, a host port, a privileged
// container) through every kind that
// carries a pod spec, on create (dry run too), PUT and each patch type of
// an object it made: every write is refused, and what it made still runs
// nothing privileged. The same object with a plain spec is taken (the
// refusals are the privileges').
func (c *attackCluster) editorTemplates(t *testing.T) {
	ed := newAttacker(t, c.s, attackEditor, "editor-token")
	plain := api.PodSpec{Containers: []api.Container{{Name: "c", Image: containerdtest.PythonRuntimeImage, Command: []string{"sleep", "3600"}}}}
	privileges := map[string]func(api.PodSpec) api.PodSpec{"hostpath": withHostPath, "hostnetwork": withHostNetwork, "hostport": withHostPort,
		// A privileged container escapes as surely as a hostPath of "/".
		"privileged": func(s api.PodSpec) api.PodSpec {
			s.Containers = []api.Container{s.Containers[0]}
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
			return s
		}}
	kinds := podBearingKinds()
	var names []string
	for _, res := range kinds {
		names = append(names, res.Name)
	}
	for _, want := range []string{"pods", "replicasets", "deployments", "daemonsets", "statefulsets", "jobs", "cronjobs"} {
		if !slices.Contains(names, want) {
			t.Errorf("the walk of api.Resources found no pod spec in %s (found %v)", want, names)
		}
	}
	t.Logf("kinds carrying a pod spec: %v", names)
	forbidden := []int{http.StatusForbidden}
	// A spec that cannot change (a Job's template, a Pod's) is 422 first.
	changed := []int{http.StatusForbidden, http.StatusUnprocessableEntity}
	for _, res := range kinds {
		t.Run(res.Kind, func(t *testing.T) {
			t.Parallel()
			ctl := "ctl-" + res.Name
			ed.try(t,
				attempt{name: "a plain " + res.Kind + " (dry run)", method: "POST", path: res.Path("a", "") + "?dryRun=All",
					body: mustJSON(podKindObject(res, ctl+"-dry", plain, true)), want: []int{http.StatusCreated}},
				attempt{name: "a plain " + res.Kind, method: "POST", path: res.Path("a", ""), body: mustJSON(podKindObject(res, ctl, plain, false)),
					want: []int{http.StatusCreated}})
			for why, privileged := range privileges {
				pwn := "pwn-" + res.Name + "-" + why
				// Were it taken, its controller would make pods at once.
				bad := podKindObject(res, pwn, privileged(plain), true)
				for _, q := range []string{"?dryRun=All", ""} {
					ed.try(t, attempt{name: "a " + res.Kind + " with " + why + q, method: "POST", path: res.Path("a", "") + q,
						body: mustJSON(bad), want: forbidden, says: "may not create privileged pods"})
				}
				// The same pod specs written over the plain object, whole
				// and by every patch type.
				var full map[string]any
				if err := json.Unmarshal([]byte(mustJSON(podKindObject(res, ctl, privileged(plain), true))), &full); err != nil {
					t.Fatal(err)
				}
				fields := map[string]any{}
				var ops []map[string]any
				for k, val := range full {
					if k != "metadata" && k != "apiVersion" && k != "kind" && k != "status" {
						fields[k] = val
						ops = append(ops, map[string]any{"op": "replace", "path": "/" + k, "value": val})
					}
				}
				cur := c.stored(t, res.Path("a", ctl))
				delete(cur["metadata"].(map[string]any), "resourceVersion")
				for k, val := range fields {
					cur[k] = val
				}
				one := res.Path("a", ctl)
				ed.try(t,
					attempt{name: "PUT with " + why + " (dry run)", method: "PUT", path: one + "?dryRun=All", body: mustJSON(cur), want: changed},
					attempt{name: "PUT with " + why, method: "PUT", path: one, body: mustJSON(cur), want: changed},
					attempt{name: "merge patch with " + why, method: "PATCH", path: one, ctype: "application/merge-patch+json", body: mustJSON(fields), want: changed},
					attempt{name: "strategic merge patch with " + why, method: "PATCH", path: one, ctype: "application/strategic-merge-patch+json",
						body: mustJSON(fields), want: changed},
					attempt{name: "JSON patch with " + why, method: "PATCH", path: one, ctype: "application/json-patch+json", body: mustJSON(ops), want: changed},
				)
			}
			got := mustJSON(c.stored(t, res.Path("a", ctl)))
			for _, p := range []string{`"hostPath"`, `"hostNetwork":true`, `"hostPort"`} {
				if strings.Contains(got, p) {
					t.Errorf("editor: %s %s holds %s after the refused writes: %s", res.Kind, ctl, p, got)
				}
			}
		})
	}
}

// stored is the object at path, read as the admin.
func (c *attackCluster) stored(t *testing.T, path string) map[string]any {
	t.Helper()
	code, data := httpDo(t, "GET", c.s.URL+path, "", nil)
	var out map[string]any
	if err := json.Unmarshal(data, &out); code != http.StatusOK || err != nil {
		t.Fatalf("GET %s: %d %s", path, code, data)
	}
	return out
}

// editorNamespaceB: the edit user of a reads and writes nothing of b's,
// whatever route and whatever namespace its bodies name, and reaches no
// pod of b.
func (c *attackCluster) editorNamespaceB(t *testing.T) {
	ed := newAttacker(t, c.s, attackEditor, "editor-token")
	forbidden, mismatch := []int{http.StatusForbidden}, []int{http.StatusBadRequest}
	const who = `User \"editor\"`
	const notOurs = "the namespace of the provided object does not match the namespace sent on the request"
	cm := func(name, ns string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"data":{"by":"editor"}}`
	}
	tmpl := func(name, ns string) string {
		meta := `"name":"` + name + `"`
		if ns != "" {
			meta += `,"namespace":"` + ns + `"`
		}
		return `{"metadata":{` + meta + `},"spec":{"name":"` + name + `","function":"ZGVmIHJ1bihhKTogcmV0dXJuICdwd24n","left":"RETURN","right":"RETURN"}}`
	}
	ed.try(t,
		attempt{name: "a ConfigMap of its own", method: "POST", path: "/api/v1/namespaces/a/configmaps", body: cm("ctl-cm", "a"), want: []int{http.StatusCreated}},
		attempt{name: "a template of its own", method: "POST", path: "/api/funcs/template", body: tmpl("ctl-fn", "a"), want: []int{http.StatusCreated}},
	)
	ed.try(t,
		attempt{name: "b's Secret", method: "GET", path: "/api/v1/namespaces/b/secrets/db", want: forbidden, says: who},
		attempt{name: "b's ConfigMaps", method: "GET", path: "/api/v1/namespaces/b/configmaps", want: forbidden, says: who},
		attempt{name: "every namespace's Secrets", method: "GET", path: "/api/v1/secrets", want: forbidden, says: who},
		attempt{name: "a watch of b's pods", method: "GET", path: "/api/v1/namespaces/b/pods?watch=true", want: forbidden, says: who},
		attempt{name: "b's functions", method: "GET", path: "/api/funcs/template?namespace=b", want: forbidden, says: who},
		attempt{name: "b's Secret impersonating system:admin", method: "GET", path: "/api/v1/namespaces/b/secrets/db", want: forbidden,
			header: http.Header{"Impersonate-User": {"system:admin"}, "Impersonate-Group": {"system:masters"}}},
		attempt{name: "a ConfigMap of b", method: "POST", path: "/api/v1/namespaces/b/configmaps", body: cm("pwn-ed-cm", "b"), want: forbidden, says: who},
		attempt{name: "replacing b's ConfigMap", method: "PUT", path: "/api/v1/namespaces/b/configmaps/settings", body: cm("settings", "b"), want: forbidden, says: who},
		attempt{name: "patching b's ConfigMap", method: "PATCH", path: "/api/v1/namespaces/b/configmaps/settings", ctype: "application/merge-patch+json",
			body: `{"data":{"by":"editor"}}`, want: forbidden, says: who},
		attempt{name: "deleting b's Secret", method: "DELETE", path: "/api/v1/namespaces/b/secrets/db", want: forbidden, says: who},
		attempt{name: "a token of b's service account", method: "POST", path: "/api/v1/namespaces/b/serviceaccounts/default/token", body: `{}`,
			want: forbidden, says: who},
		attempt{name: "a ConfigMap of b posted to a", method: "POST", path: "/api/v1/namespaces/a/configmaps", body: cm("pwn-ed-cm2", "b"), want: mismatch, says: notOurs},
		attempt{name: "its ConfigMap moved to b by PUT", method: "PUT", path: "/api/v1/namespaces/a/configmaps/ctl-cm", body: cm("ctl-cm", "b"), want: mismatch, says: notOurs},
		attempt{name: "a template of b with ?namespace=a", method: "POST", path: "/api/funcs/template/?namespace=a", body: tmpl("pwn-ed-fn", "b"), want: mismatch, says: notOurs},
		attempt{name: "a template of b", method: "POST", path: "/api/funcs/template/", body: tmpl("pwn-ed-fn2", "b"), want: forbidden, says: who},
		attempt{name: "replacing b's function", method: "PUT", path: "/api/funcs/template/secret", body: tmpl("secret", "b"), want: forbidden, says: who},
		attempt{name: "replacing b's function with ?namespace=a", method: "PUT", path: "/api/funcs/template/secret?namespace=a", body: tmpl("secret", "b"),
			want: mismatch, says: notOurs},
		attempt{name: "deleting b's function", method: "DELETE", path: "/api/funcs/template/secret?namespace=b", want: forbidden, says: who},
		attempt{name: "a template of b naming a, then b", method: "POST", path: "/api/funcs/template?namespace=a&namespace=b", body: tmpl("pwn-ed-fn3", "b"),
			want: []int{http.StatusBadRequest, http.StatusForbidden}},
		attempt{name: "a template of b naming b, then a", method: "POST", path: "/api/funcs/template?namespace=b&namespace=a", body: tmpl("pwn-ed-fn4", "b"),
			want: []int{http.StatusBadRequest, http.StatusForbidden}},
		attempt{name: "calling b's function naming a, then b", method: "POST", path: "/api/funcs/secret?namespace=a&namespace=b", body: "x",
			ctype: "text/plain", want: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound}},
		attempt{name: "a chain from its function into b's", method: "POST", path: "/api/funcs/template",
			body: strings.Replace(tmpl("pwn-ed-chain", "a"), `"left":"RETURN","right":"RETURN"`, `"left":"b/secret","right":"../b/secret"`, 1),
			want: []int{http.StatusUnprocessableEntity}, says: "spec.left"},
		attempt{name: "a trigger of b's function", method: "POST", path: "/apis/minik8s.io/v1/namespaces/a/triggers",
			body: `{"metadata":{"name":"pwn-ed-trigger"},"spec":{"function":"b/secret","schedule":{"cron":"* * * * *"}}}`,
			want: []int{http.StatusUnprocessableEntity}, says: "spec.function"},
		attempt{name: "a runner's Lease", method: "POST", path: api.LeasesResource.Path(function.RunnerNamespace, ""), want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-runner","annotations":{"` + function.AnnotationRunnerURL + `":"http://` + c.cp.IP + `:1"}},"spec":{"holderIdentity":"pwn"}}`},
		attempt{name: "calling b's function", method: "POST", path: "/api/funcs/secret?namespace=b", body: "x", ctype: "text/plain", want: forbidden, says: who},
		// Revisions: b's are not its to read or call; its own function's
		// are the function controller's to write (what ran as revision N
		// stays what N names).
		attempt{name: "calling a revision of b's function", method: "POST", path: "/api/funcs/secret@1?namespace=b", body: "x", ctype: "text/plain",
			want: forbidden, says: who},
		attempt{name: "b's revisions", method: "GET", path: "/apis/minik8s.io/v1/namespaces/b/funcrevisions", want: forbidden, says: who},
		attempt{name: "a revision of its own function", method: "POST", path: "/apis/minik8s.io/v1/namespaces/a/funcrevisions", want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-rev"},"spec":{"function":"ctl-fn","revision":9,"template":{"function":"ZGVmIHJ1bihhKTogcmV0dXJuICdwd24n"}}}`},
		attempt{name: "rewriting revision 1 of its own function", method: "PUT", path: "/apis/minik8s.io/v1/namespaces/a/funcrevisions/" + function.RevisionName("ctl-fn", 1),
			want: forbidden, says: who,
			body: `{"metadata":{"name":"` + function.RevisionName("ctl-fn", 1) + `"},"spec":{"function":"ctl-fn","revision":1,"template":{"function":"ZGVmIHJ1bihhKTogcmV0dXJuICdwd24n"}}}`},
		// A DaemonSet's revisions are its controller's to write: rollout
		// undo patches the DaemonSet, which is admitted as any write.
		attempt{name: "a ControllerRevision", method: "POST", path: api.ControllerRevisionsResource.Path("a", ""), want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-cr"},"revision":1,"data":{"spec":{"template":{"$patch":"replace","spec":{"hostNetwork":true}}}}}`},
		// A tenant's quota and limits are the administrator's: its editor
		// may neither raise nor lift them.
		attempt{name: "a ResourceQuota of its own namespace", method: "POST", path: api.ResourceQuotasResource.Path("a", ""), want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-quota"},"spec":{"hard":{"pods":"1000"}}}`},
		attempt{name: "a LimitRange of its own namespace", method: "POST", path: api.LimitRangesResource.Path("a", ""), want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-limits"},"spec":{"limits":[{"type":"Container","max":{"cpu":"64"}}]}}`},
		// Ingresses route to the Services of their own namespace; which
		// controller serves a class, and which class is the default, is
		// the administrator's.
		attempt{name: "an IngressClass", method: "POST", path: api.IngressClassesResource.Path("", ""), want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-class","annotations":{"ingressclass.kubernetes.io/is-default-class":"true"}},"spec":{"controller":"example.com/pwn"}}`},
		attempt{name: "the default IngressClass", method: "PUT", path: api.IngressClassesResource.Path("", api.DefaultIngressClassName), want: forbidden, says: who,
			body: `{"metadata":{"name":"minik8s"},"spec":{"controller":"example.com/pwn"}}`},
		// A NetworkPolicy isolates, or opens, the pods of its own
		// namespace: b's are b's editors' to write.
		attempt{name: "b's NetworkPolicies", method: "GET", path: api.NetworkPoliciesResource.Path("b", ""), want: forbidden, says: who},
		attempt{name: "a NetworkPolicy in b", method: "POST", path: api.NetworkPoliciesResource.Path("b", ""), want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-np"},"spec":{"podSelector":{},"ingress":[{}]}}`},
		attempt{name: "b's Ingresses", method: "GET", path: api.IngressesResource.Path("b", ""), want: forbidden, says: who},
		attempt{name: "an Ingress in b", method: "POST", path: api.IngressesResource.Path("b", ""), want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-ing"},"spec":{"defaultBackend":{"service":{"name":"sink","port":{"number":80}}}}}`},
		// Evictions take from the disruption budget of the pod's
		// namespace; the budget's count is its controller's to write.
		attempt{name: "evicting b's pod", method: "POST", path: "/api/v1/namespaces/b/pods/sink/eviction", want: forbidden, says: who,
			body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"sink","namespace":"b"}}`},
		attempt{name: "b's PodDisruptionBudgets", method: "GET", path: api.PodDisruptionBudgetsResource.Path("b", ""), want: forbidden, says: who},
		attempt{name: "the status of a budget of its own", method: "PUT", path: api.PodDisruptionBudgetsResource.Path("a", "web") + "/status",
			want: forbidden, says: who,
			body: `{"metadata":{"name":"web"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}},"status":{"disruptionsAllowed":100,"currentHealthy":0,"desiredHealthy":0,"expectedPods":0}}`},
		// Priorities weigh every namespace's pods against each other (the
		// scheduler preempts by them): the classes are the
		// administrator's, the system ones kube-system's alone.
		attempt{name: "a PriorityClass", method: "POST", path: api.PriorityClassesResource.Path("", ""), want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-priority"},"value":1000000000,"globalDefault":true}`},
		attempt{name: "a pod of its own at system-node-critical", method: "POST", path: api.PodsResource.Path("a", ""), want: forbidden,
			says: "may be used only by pods in the kube-system namespace",
			body: `{"metadata":{"name":"pwn-ed-critical"},"spec":{"priorityClassName":"system-node-critical","containers":[{"name":"c","image":"` + containerdtest.PythonRuntimeImage + `"}]}}`},
		attempt{name: "b's DaemonSets", method: "GET", path: api.DaemonSetsResource.Path("b", ""), want: forbidden, says: who},
		attempt{name: "exec in b's pod", method: "POST", path: "/api/v1/namespaces/b/pods/sink/exec?command=id&stdout=true", want: forbidden, says: who},
		attempt{name: "exec in b's pod by GET", method: "GET", path: "/api/v1/namespaces/b/pods/sink/exec?command=id&stdout=true", want: forbidden, says: who},
		attempt{name: "port-forward to b's pod", method: "POST", path: "/api/v1/namespaces/b/pods/sink/portforward?ports=8080", want: forbidden, says: who},
		attempt{name: "b's pod's log", method: "GET", path: "/api/v1/namespaces/b/pods/sink/log", want: forbidden, says: who},
	)
	// Names that would lead a kubelet or a controller out of a.
	pod := func(name string, spec map[string]any) string {
		spec["containers"] = append([]any{map[string]any{"name": "c", "image": containerdtest.PythonRuntimeImage}}, spec["containers"].([]any)...)[:1]
		if env, ok := spec["env"]; ok {
			spec["containers"].([]any)[0].(map[string]any)["env"] = env
			delete(spec, "env")
		}
		return mustJSON(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name}, "spec": spec})
	}
	invalid := []int{http.StatusUnprocessableEntity}
	ref := func(field string) []any {
		return []any{map[string]any{"name": "X", "valueFrom": map[string]any{field: map[string]string{"name": "../b/db", "key": "password"}}}}
	}
	ed.try(t,
		attempt{name: "a pod reading b's Secret by path", method: "POST", path: "/api/v1/namespaces/a/pods", want: invalid,
			body: pod("pwn-ed-env", map[string]any{"containers": []any{}, "env": ref("secretKeyRef")})},
		attempt{name: "a pod reading b's ConfigMap by path", method: "POST", path: "/api/v1/namespaces/a/pods", want: invalid,
			body: pod("pwn-ed-cmref", map[string]any{"containers": []any{}, "env": ref("configMapKeyRef")})},
		attempt{name: "a pod running as b's service account", method: "POST", path: "/api/v1/namespaces/a/pods", want: invalid,
			body: pod("pwn-ed-sa", map[string]any{"containers": []any{}, "serviceAccountName": "b/default"})},
		attempt{name: "a pod bound to a node by path", method: "POST", path: "/api/v1/namespaces/a/pods", want: invalid,
			body: pod("pwn-ed-node", map[string]any{"containers": []any{}, "nodeName": "../../nodes/atk-1"})},
		// An anti-affinity matching every pod of every namespace would keep
		// all of b's pods off the nodes a's pods hold.
		attempt{name: "a pod keeping every namespace's pods off its node", method: "POST", path: "/api/v1/namespaces/a/pods", want: invalid,
			body: pod("pwn-ed-anti", map[string]any{"containers": []any{}, "affinity": map[string]any{"podAntiAffinity": map[string]any{
				"requiredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"topologyKey": "kubernetes.io/hostname", "namespaceSelector": map[string]any{},
					"labelSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "pwn", "operator": "DoesNotExist"}}}}}}}})},
		attempt{name: "a pod placed by b's pods", method: "POST", path: "/api/v1/namespaces/a/pods", want: invalid,
			body: pod("pwn-ed-aff", map[string]any{"containers": []any{}, "affinity": map[string]any{"podAffinity": map[string]any{
				"requiredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"topologyKey": "kubernetes.io/hostname", "namespaces": []any{"b"},
					"labelSelector": map[string]any{"matchLabels": map[string]any{"app": "db"}}}}}}})},
		// Preferred terms weigh in the score: pods of a that prefer away
		// from every pod would push b's about as well.
		attempt{name: "a pod weighing every namespace's pods", method: "POST", path: "/api/v1/namespaces/a/pods", want: invalid,
			body: pod("pwn-ed-prefanti", map[string]any{"containers": []any{}, "affinity": map[string]any{"podAntiAffinity": map[string]any{
				"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 100, "podAffinityTerm": map[string]any{
					"topologyKey": "kubernetes.io/hostname", "namespaceSelector": map[string]any{},
					"labelSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "pwn", "operator": "DoesNotExist"}}}}}}}}})},
	)
	c.editorVolumesByPath(t, ed, pod)
	c.editorServiceAddresses(t, ed, tmpl)
}

// editorVolumesByPath: pods of a mounting b's Secret and ConfigMap by a
// name that climbs out of a are taken, as Kubernetes takes them (a
// volume's secretName and name are only required), and never start: the
// kubelet gets nothing of b's.
func (c *attackCluster) editorVolumesByPath(t *testing.T, ed *attacker, pod func(string, map[string]any) string) {
	ctx := context.Background()
	vols := map[string]map[string]any{
		"ctl-vol-secret":    {"secret": map[string]string{"secretName": "../b/db"}},
		"ctl-vol-configmap": {"configMap": map[string]string{"name": "../b/settings"}},
	}
	for name, vol := range vols {
		vol["name"] = "v"
		ed.try(t, attempt{name: "a pod mounting " + name + " by path", method: "POST", path: "/api/v1/namespaces/a/pods", want: []int{http.StatusCreated},
			body: pod(name, map[string]any{"containers": []any{}, "nodeName": c.kubelets[1].Name, "volumes": []any{vol}})})
	}
	for name := range vols {
		var p *api.Pod
		waitUntil(t, time.Minute, "the kubelet's verdict on pod "+name, func() bool {
			var err error
			p, err = c.s.Client.Pods("a").Get(ctx, name)
			if err != nil || p.Status.Phase == api.PodRunning || len(p.Status.ContainerStatuses) == 0 {
				return err != nil || p.Status.Phase == api.PodRunning
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError"
		})
		t.Logf("pod %s: %s", name, mustJSON(p.Status)) // shown with -v
		if p.Status.Phase == api.PodRunning || strings.Contains(mustJSON(p.Status), "s3cret") || strings.Contains(mustJSON(p.Status), "debug") {
			t.Errorf("editor: pod %s mounting b's object by path: %s", name, mustJSON(p.Status))
		}
		zero := int64(0)
		if _, err := c.s.Client.Pods("a").Delete(ctx, name, client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Error(err)
		}
	}
}

// editorServiceAddresses: functions of a asking for the cluster IPs of
// the kubernetes Service and of b's function get no Service there: the
// controller manager's creates are refused.
func (c *attackCluster) editorServiceAddresses(t *testing.T, ed *attacker, tmpl func(name, ns string) string) {
	ips := map[string]string{"kubernetes": c.kubernetesIP, "secret": c.fnService["secret"]}
	made := 0
	for what, ip := range ips {
		body := strings.Replace(tmpl("ctl-addr-"+what, "a"), `"spec":{`, `"spec":{"serviceAddress":"`+ip+`",`, 1)
		code, data := ed.do(t, "POST", "/api/funcs/template", "application/json", body, nil)
		switch code {
		case http.StatusCreated:
			made++
		case http.StatusUnprocessableEntity, http.StatusConflict:
		default:
			t.Errorf("editor: a function at %s's address %s: %d %s", what, ip, code, data)
		}
	}
	// The controller manager has tried each: the audit log holds its
	// refused creates.
	waitUntil(t, time.Minute, "the controller manager's attempts at the functions' Services", func() bool {
		refused := 0
		for _, code := range c.audited(t, rbac.ControllerManagerUser, "create", "services", "a") {
			if code >= 300 {
				refused++
			}
		}
		return refused >= made
	})
	for what := range ips {
		if svc, err := c.s.Client.Services("a").Get(t.Context(), function.ObjectName("ctl-addr-"+what)); err == nil {
			t.Errorf("editor: function ctl-addr-%s asking for %s's address got Service %s at %s", what, what, svc.Name, svc.Spec.ClusterIP)
		}
		ed.do(t, "DELETE", "/api/funcs/template/ctl-addr-"+what+"?namespace=a", "", "", nil)
	}
	svc, err := c.s.Client.Services("b").Get(t.Context(), function.ObjectName("secret"))
	if err != nil || svc.Spec.ClusterIP != c.fnService["secret"] {
		t.Errorf("b's function's Service after a function of a asked for its address: %v %v", svc, err)
	}
}

// editorBindings: the edit user binds nothing and writes no Endpoints.
func (c *attackCluster) editorBindings(t *testing.T) {
	ed := newAttacker(t, c.s, attackEditor, "editor-token")
	forbidden := []int{http.StatusForbidden}
	const who = `User \"editor\"`
	rb := func(name, role string) string {
		return mustJSON(binding("RoleBinding", "a", name, "ClusterRole", role, userSubject(attackEditor)))
	}
	relayEp := api.EndpointsResource.Path("a", function.ObjectName("relay"))
	ep := func(name string) string {
		return mustJSON(map[string]any{"apiVersion": "v1", "kind": "Endpoints", "metadata": map[string]any{"name": name, "namespace": "a"},
			"subsets": []any{map[string]any{"addresses": []any{map[string]string{"ip": c.cp.IP}}, "ports": []any{map[string]any{"port": 443}}}}})
	}
	ed.try(t,
		attempt{name: "a RoleBinding to cluster-admin", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings",
			body: rb("pwn-ed-rb", "cluster-admin"), want: forbidden, says: who},
		attempt{name: "a RoleBinding to a role that does not exist", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings",
			body: rb("pwn-ed-rb2", "pwn-future"), want: forbidden, says: who},
		attempt{name: "a ClusterRoleBinding to cluster-admin", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
			body: mustJSON(binding("ClusterRoleBinding", "", "pwn-ed-crb", "ClusterRole", "cluster-admin", userSubject(attackEditor))), want: forbidden, says: who},
		attempt{name: "a Role", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/a/roles", want: forbidden, says: who,
			body: `{"metadata":{"name":"pwn-ed-role"},"rules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]}`},
		attempt{name: "Endpoints of its own", method: "POST", path: api.EndpointsResource.Path("a", ""), body: ep("pwn-ed-ep"), want: forbidden, says: who},
		attempt{name: "replacing relay's Endpoints", method: "PUT", path: relayEp, body: ep(function.ObjectName("relay")), want: forbidden, says: who},
		attempt{name: "patching relay's Endpoints", method: "PATCH", path: relayEp, ctype: "application/merge-patch+json",
			body: `{"subsets":[{"addresses":[{"ip":"` + c.cp.IP + `"}],"ports":[{"port":443}]}]}`, want: forbidden, says: who},
		attempt{name: "deleting relay's Endpoints", method: "DELETE", path: relayEp, want: forbidden, says: who},
	)
	got := mustJSON(c.stored(t, relayEp))
	if strings.Contains(got, c.cp.IP) {
		t.Errorf("editor: relay's Endpoints name the apiserver's address after refused writes: %s", got)
	}
}
