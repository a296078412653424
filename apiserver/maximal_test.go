package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"minik8s/pkg/api"
)

// A maximal object of every Kubernetes kind minik8s serves (every field
// of minik8s's types set, testdata/maximal) goes through create, get,
// update and server-side apply, and nothing of it is lost on the way.
// A field added to the types without a value in its maximal object fails
// TestMaximalObjectsAreMaximal, so the round trip keeps covering them all.

// notInMaximal are the fields (Type.field, of minik8s's types) a maximal
// object leaves out, and why: the server writes them, or minik8s refuses
// them when set (pkg/api/validation's notacted.go), so no accepted object
// has them. Status is the server's, and not walked.
var notInMaximal = map[string]string{
	"ObjectMeta.uid": "the server's", "ObjectMeta.resourceVersion": "the server's", "ObjectMeta.generation": "the server's",
	"ObjectMeta.creationTimestamp": "the server's", "ObjectMeta.deletionTimestamp": "the server's",
	"ObjectMeta.deletionGracePeriodSeconds": "the server's", "ObjectMeta.managedFields": "the server's",
	"ObjectMeta.selfLink":      "dropped, as Kubernetes does",
	"ObjectMeta.generateName":  "a name is given (generateName is tested on its own)",
	"PodSpec.runtimeClassName": "refused", "PodSpec.overhead": "refused", "PodSpec.readinessGates": "refused",
	"PodSpec.schedulingGroup": "refused", "PodSpec.resourceClaims": "refused", "PodSpec.resources": "refused",
	"PodSpec.hostnameOverride": "refused", "PodSpec.ephemeralContainers": "refused", "PodSpec.evictionResponders": "refused",
	"PodSpec.activeDeadlineSeconds": "refused on pods (a Job's is kept)", "PodSpec.hostPID": "refused", "PodSpec.hostIPC": "refused",
	"PodSpec.nodeName":        "bound by the scheduler through a binding",
	"PodSpec.schedulingGates": "a gated pod's gates may only be taken away (tested on their own)",
	"Container.restartPolicy": "refused", "Container.restartPolicyRules": "refused", "Container.volumeDevices": "refused",
	"ResourceRequirements.claims": "refused", "EnvVarSource.fileKeyRef": "refused", "VolumeMount.bindMountOptions": "refused",
	"ServiceSpec.externalIPs": "refused", "ServiceSpec.externalName": "refused", "ServiceSpec.healthCheckNodePort": "refused",
	"ServiceSpec.allocateLoadBalancerNodePorts": "refused", "ServiceSpec.loadBalancerClass": "refused",
	"ServiceSpec.loadBalancerIP": "refused", "ServiceSpec.loadBalancerSourceRanges": "refused",
	"ServiceSpec.sessionAffinityConfig": "refused",
	"JobSpec.podFailurePolicy":          "refused", "JobSpec.successPolicy": "refused", "JobSpec.backoffLimitPerIndex": "refused",
	"JobSpec.maxFailedIndexes": "refused", "JobSpec.scheduling": "refused",
	"Secret.stringData":            "write-only: folded into data, as Kubernetes does",
	"ClusterRole.aggregationRule":  "refused",
	"NodeSpec.podPreemptionPolicy": "refused by Kubernetes' validation (its feature gate is off)",
	"MetricTarget.value":           "refused by Kubernetes' validation for (container) resource metrics, whose target this type is; object and external metrics keep Kubernetes' own",
}

// notInMaximalOf are the fields one kind leaves out.
var notInMaximalOf = map[string][]string{
	"Role": {"PolicyRule.nonResourceURLs"}, // a ClusterRole's only
	// Values go with In and NotIn, which only the PriorityClass scope
	// takes, and minik8s refuses that scope.
	"ResourceQuota": {"ScopedResourceSelectorRequirement.values"},
	// A volume has one source.
	"PersistentVolume": {"PersistentVolumeSpec.local"},
	// A budget has one bound: minAvailable or maxUnavailable.
	"PodDisruptionBudget": {"PodDisruptionBudgetSpec.maxUnavailable"},
	// A claim's conditions have no observedGeneration in Kubernetes
	// (PersistentVolumeClaimCondition), whose schema apply reads.
	"StatefulSet": {"Condition.observedGeneration"},
	// A CronJob's Jobs get the server's selector.
	"CronJob": {"JobSpec.manualSelector", "JobSpec.selector", "LabelSelector.matchExpressions", "LabelSelector.matchLabels",
		"LabelSelectorRequirement.key", "LabelSelectorRequirement.operator", "LabelSelectorRequirement.values"},
}

// fieldOf is a field of one of minik8s's struct types, by JSON name.
type fieldOf struct {
	in   reflect.Type
	name string
}

func (f fieldOf) String() string { return f.in.Name() + "." + f.name }

// ours is a struct type of minik8s's own (not Kubernetes', which minik8s
// stores whole: a value set in them is kept as they keep it).
func ours(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && strings.HasPrefix(t.PkgPath(), "minik8s/") && t != reflect.TypeOf(time.Time{})
}

func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || (t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8) || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	return t
}

// fieldsOf adds every field of t and of minik8s's types under it, but a
// kind's status.
func fieldsOf(t reflect.Type, kind bool, out map[fieldOf]bool) {
	t = elem(t)
	if !ours(t) {
		return
	}
	for name, ft := range jsonFields(t) {
		f := fieldOf{t, name}
		if out[f] || name == "apiVersion" || name == "kind" || (kind && name == "status") {
			continue
		}
		out[f] = true
		fieldsOf(ft, false, out)
	}
}

// setIn marks in set the fields of t that v (decoded JSON) sets.
func setIn(t reflect.Type, v any, set map[fieldOf]bool) {
	t = elem(t)
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			setIn(t, e, set)
		}
		return
	case map[string]any:
		if !ours(t) {
			return
		}
		fields := jsonFields(t)
		for name, fv := range x {
			ft, ok := fields[name]
			if !ok || fv == nil {
				continue
			}
			set[fieldOf{t, name}] = true
			if m, ok := fv.(map[string]any); ok && elem(ft).Kind() != reflect.Struct {
				for _, e := range m {
					setIn(ft, e, set) // a map's values
				}
				continue
			}
			setIn(ft, fv, set)
		}
	}
}

// subset reports where got lacks what want sets: every key of a map, every
// element of a list, every scalar equal.
func subset(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v, want an object", path, got)}
		}
		var out []string
		for k, v := range w {
			out = append(out, subset(v, g[k], path+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %v, want %v", path, got, want)}
		}
		var out []string
		for i := range w {
			out = append(out, subset(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: %v, want %v", path, got, want)}
	}
	return nil
}

// maximalObjects are the maximal objects by resource name, as JSON: the
// pod's spec is the template of every kind that has one.
func maximalObjects(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	files, err := filepath.Glob("testdata/maximal/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no maximal objects: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = obj
	}
	// The metadata every object may carry.
	for _, obj := range out {
		meta := obj["metadata"].(map[string]any)
		for k, v := range map[string]any{"labels": map[string]any{"app": "max"}, "annotations": map[string]any{"note": "every field"},
			"finalizers": []any{"example.com/keep"}, "ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"name": "owner", "uid": "6f1c1d3e-0000-4000-8000-000000000001", "controller": true, "blockOwnerDeletion": true}}} {
			if _, ok := meta[k]; !ok {
				meta[k] = v
			}
		}
	}
	pod := out["pods"]
	template := func() map[string]any {
		meta := map[string]any{"labels": map[string]any{"app": "max"}, "annotations": map[string]any{"a": "b"}}
		spec := clone(pod["spec"]).(map[string]any)
		spec["restartPolicy"] = "Always"
		return map[string]any{"metadata": meta, "spec": spec}
	}
	selector := map[string]any{"matchLabels": map[string]any{"app": "max"},
		"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{"max"}}}}
	meta := func(name string) map[string]any {
		return map[string]any{"name": name, "labels": map[string]any{"app": "max"}, "annotations": map[string]any{"note": "every field"},
			"finalizers": []any{"example.com/keep"}, "ownerReferences": clone(pod["metadata"].(map[string]any)["ownerReferences"])}
	}
	out["replicasets"] = map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta("max"),
		"spec": map[string]any{"replicas": 0, "minReadySeconds": 1, "selector": clone(selector), "template": template()}}
	out["deployments"] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("max"),
		"spec": map[string]any{"replicas": 0, "minReadySeconds": 1, "revisionHistoryLimit": 3, "progressDeadlineSeconds": 60, "paused": true,
			"selector": clone(selector), "template": template(),
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "50%", "maxUnavailable": 1}}}}
	out["daemonsets"] = map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("max"),
		"spec": map[string]any{"minReadySeconds": 1, "revisionHistoryLimit": 3, "selector": clone(selector), "template": template(),
			"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "50%", "maxUnavailable": 0}}}}
	out["limitranges"] = map[string]any{"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("max"),
		"spec": map[string]any{"limits": []any{
			map[string]any{"type": "Container", "max": map[string]any{"cpu": "2", "memory": "1Gi"}, "min": map[string]any{"cpu": "10m", "memory": "4Mi"},
				"default": map[string]any{"cpu": "500m", "memory": "256Mi"}, "defaultRequest": map[string]any{"cpu": "100m", "memory": "64Mi"},
				"maxLimitRequestRatio": map[string]any{"cpu": "10"}},
			map[string]any{"type": "Pod", "max": map[string]any{"cpu": "4"}}}}}
	out["resourcequotas"] = map[string]any{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("max"),
		"spec": map[string]any{"hard": map[string]any{"pods": "10", "requests.cpu": "2", "limits.memory": "4Gi"},
			"scopes":        []any{"NotTerminating"},
			"scopeSelector": map[string]any{"matchExpressions": []any{map[string]any{"scopeName": "NotBestEffort", "operator": "Exists"}}}}}
	out["statefulsets"] = map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("max"),
		"spec": map[string]any{"replicas": 0, "minReadySeconds": 1, "revisionHistoryLimit": 3, "selector": clone(selector), "template": template(),
			"serviceName": "max", "podManagementPolicy": "Parallel", "ordinals": map[string]any{"start": 1},
			"updateStrategy":                       map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": 1, "maxUnavailable": 1}},
			"persistentVolumeClaimRetentionPolicy": map[string]any{"whenDeleted": "Delete", "whenScaled": "Retain"},
			"volumeClaimTemplates": []any{map[string]any{"metadata": map[string]any{"name": "data", "labels": map[string]any{"tier": "db"}, "annotations": map[string]any{"note": "n"}},
				"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "storageClassName": "standard", "volumeMode": "Filesystem",
					"selector":   map[string]any{"matchLabels": map[string]any{"disk": "ssd"}},
					"volumeName": "pv-1", "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}, "limits": map[string]any{"storage": "2Gi"}}},
				"status": map[string]any{"phase": "Pending", "accessModes": []any{"ReadWriteOnce"}, "capacity": map[string]any{"storage": "1Gi"},
					"conditions": []any{map[string]any{"type": "Resizing", "status": "False", "reason": "R", "message": "m",
						"lastTransitionTime": "2026-01-01T00:00:00Z"}}}}}}}
	out["controllerrevisions"] = map[string]any{"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta("max"),
		"revision": 3, "data": map[string]any{"spec": map[string]any{"template": map[string]any{"$patch": "replace", "spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}}}}
	jobSpec := func(cron bool) map[string]any {
		tpl := template()
		tpl["spec"].(map[string]any)["restartPolicy"] = "Never"
		spec := map[string]any{"parallelism": 1, "completions": 1, "activeDeadlineSeconds": 600, "backoffLimit": 2,
			"ttlSecondsAfterFinished": 60, "suspend": true, "completionMode": "NonIndexed", "podReplacementPolicy": "TerminatingOrFailed",
			"managedBy": "kubernetes.io/job-controller", "template": tpl}
		if !cron { // a CronJob's Jobs get the server's selector
			spec["manualSelector"], spec["selector"] = true, clone(selector)
		}
		return spec
	}
	out["jobs"] = map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("max"), "spec": jobSpec(false)}
	out["cronjobs"] = map[string]any{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("max"),
		"spec": map[string]any{"schedule": "0 9 * * *", "timeZone": "Asia/Shanghai", "startingDeadlineSeconds": 60,
			"concurrencyPolicy": "Forbid", "suspend": true, "successfulJobsHistoryLimit": 2, "failedJobsHistoryLimit": 1,
			"jobTemplate": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "max"}, "annotations": map[string]any{"a": "b"}},
				"spec": jobSpec(true)}}}
	return out
}

func clone(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

// Every field of every kind is set in its maximal object, but for those
// notInMaximal says why not.
func TestMaximalObjectsAreMaximal(t *testing.T) {
	objs := maximalObjects(t)
	for _, res := range api.Resources {
		if res.Served().Group == api.FuncGroup { // the function kinds: not Kubernetes'
			continue
		}
		obj, ok := objs[res.Name]
		if !ok {
			t.Errorf("%s has no maximal object in testdata/maximal", res.Kind)
			continue
		}
		typ := reflect.TypeOf(res.New()).Elem()
		all, set := map[fieldOf]bool{}, map[fieldOf]bool{}
		fieldsOf(typ, true, all)
		setIn(typ, obj, set)
		// The round trip puts namespaced objects in a namespace.
		set[fieldOf{reflect.TypeOf(api.ObjectMeta{}), "namespace"}] = true
		var missing []string
		for f := range all {
			if slices.Contains(notInMaximalOf[res.Kind], f.String()) {
				continue
			}
			if _, ok := notInMaximal[f.String()]; !ok && !set[f] {
				missing = append(missing, f.String())
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s's maximal object does not set %s", res.Kind, strings.Join(missing, ", "))
		}
	}
}

// TestMaximalRoundTrip: create, get, update (of what get gave) and apply
// (of the maximal object, by another manager) keep all of it.
func TestMaximalRoundTrip(t *testing.T) {
	et := newEngineTest(t)
	objs := maximalObjects(t)
	var names []string
	for n := range objs {
		names = append(names, n)
	}
	// The referenced objects first: a pod's service account and
	// PriorityClass must exist.
	first := func(n string) int { return map[string]int{"serviceaccounts": 2, "priorityclasses": 1}[n] }
	sort.Slice(names, func(i, j int) bool {
		if fi, fj := first(names[i]), first(names[j]); fi != fj {
			return fi > fj
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		res, ok := api.LookupResource(name)
		if !ok {
			t.Fatalf("testdata/maximal/%s.yaml names no resource", name)
		}
		obj := objs[name]
		meta := obj["metadata"].(map[string]any)
		ns := ""
		if res.Namespaced {
			ns = "team-a"
			meta["namespace"] = ns
		}
		body, _ := json.Marshal(obj)
		check := func(step string, a answer, code int) map[string]any {
			t.Helper()
			if a.code != code {
				t.Fatalf("%s %s: %d %s", step, res.Kind, a.code, a.body)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(a.body), &got); err != nil {
				t.Fatal(err)
			}
			for _, lost := range subset(clone(obj), got, "") {
				t.Errorf("%s %s lost %s", step, res.Kind, lost)
			}
			return got
		}
		check("create", et.doType("POST", res.Path(ns, ""), string(body), "application/json", ""), http.StatusCreated)
		got := check("get", et.doType("GET", res.Path(ns, meta["name"].(string)), "", "", ""), http.StatusOK)
		again, _ := json.Marshal(got)
		check("update", et.doType("PUT", res.Path(ns, meta["name"].(string)), string(again), "application/json", ""), http.StatusOK)
		check("apply", et.doType("PATCH", res.Path(ns, meta["name"].(string))+"?fieldManager=maximal&force=true", string(body), applyPatchType, ""), http.StatusOK)
	}
}
