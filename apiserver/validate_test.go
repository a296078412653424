package apiserver

import (
	"encoding/json"
	"strings"
	"testing"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/errdefs"
)

// validObjects holds a valid object of every kind the apiserver serves, as
// a user would write it.
var validObjects = map[string]string{
	"nodes":                     `{"metadata":{"name":"n1"},"status":{"capacity":{"cpu":"2","memory":"4Gi","pods":"110"}}}`,
	"pods":                      `{"metadata":{"name":"web","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx:1.27","ports":[{"name":"http","containerPort":80}],"env":[{"name":"A","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],"resources":{"limits":{"cpu":"1","memory":"64Mi"},"requests":{"cpu":"500m","memory":"32Mi"}}}]}}`,
	"replicasets":               `{"metadata":{"name":"rs","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
	"deployments":               `{"metadata":{"name":"d","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
	"daemonsets":                `{"metadata":{"name":"ds","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
	"statefulsets":              `{"metadata":{"name":"web","namespace":"default"},"spec":{"serviceName":"web","selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"nginx","volumeMounts":[{"name":"www","mountPath":"/www"}]}]}},"volumeClaimTemplates":[{"metadata":{"name":"www"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`,
	"controllerrevisions":       `{"metadata":{"name":"ds-5d4f8b","namespace":"default"},"revision":1,"data":{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"c","image":"nginx"}]}}}}}`,
	"ingresses":                 `{"metadata":{"name":"ing","namespace":"default"},"spec":{"rules":[{"host":"a.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}}]}}]}}`,
	"poddisruptionbudgets":      `{"metadata":{"name":"pdb","namespace":"default"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"a"}}}}`,
	"persistentvolumes":         `{"metadata":{"name":"pv"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/var/lib/pv"}}}`,
	"persistentvolumeclaims":    `{"metadata":{"name":"pvc","namespace":"default"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
	"storageclasses":            `{"metadata":{"name":"sc"},"provisioner":"example.com/sc"}`,
	"ingressclasses":            `{"metadata":{"name":"other"},"spec":{"controller":"example.com/ingress"}}`,
	"priorityclasses":           `{"metadata":{"name":"high"},"value":1000,"description":"for the web"}`,
	"horizontalpodautoscalers":  `{"metadata":{"name":"h","namespace":"default"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"d"},"maxReplicas":5}}`,
	"jobs":                      `{"metadata":{"name":"j","namespace":"default","uid":"6c8f1ad6-0000-4000-8000-000000000001"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`,
	"cronjobs":                  `{"metadata":{"name":"cj","namespace":"default"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`,
	"services":                  `{"metadata":{"name":"s","namespace":"default"},"spec":{"selector":{"app":"a"},"ports":[{"name":"http","port":80,"targetPort":"http"}]}}`,
	"endpoints":                 `{"metadata":{"name":"s","namespace":"default"},"subsets":[{"addresses":[{"ip":"192.0.2.5"}],"ports":[{"name":"http","port":8080}]}]}`,
	"limitranges":               `{"metadata":{"name":"lr","namespace":"default"},"spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"128Mi"},"defaultRequest":{"cpu":"100m"},"max":{"cpu":"1"}}]}}`,
	"resourcequotas":            `{"metadata":{"name":"q","namespace":"default"},"spec":{"hard":{"pods":"10","requests.cpu":"2","limits.memory":"4Gi","count/deployments.apps":"5"},"scopes":["NotBestEffort"]}}`,
	"configmaps":                `{"metadata":{"name":"cm","namespace":"default"},"data":{"a.txt":"hello"}}`,
	"events":                    `{"metadata":{"name":"e","namespace":"default"},"involvedObject":{"kind":"Pod","name":"web","namespace":"default"},"reason":"Started","type":"Normal"}`,
	"funcs":                     `{"apiVersion":"v2","metadata":{"name":"append_world","namespace":"default"},"spec":{"name":"append_world","function":"ZGVmIHJ1bihhcmcpOgogICAgcmV0dXJuIGFyZwo="}}`,
	"funcinstances":             `{"metadata":{"name":"fi","namespace":"default"},"spec":{"function":"append_world","arg":"x"}}`,
	"triggers":                  `{"metadata":{"name":"t","namespace":"default"},"spec":{"function":"append_world","http":{"path":"/hello"}}}`,
	"apps":                      `{"metadata":{"name":"app","namespace":"default"},"spec":{"config":{"greeting":"hi"}}}`,
	"funcrevisions":             `{"metadata":{"name":"append-world-r1","namespace":"default"},"spec":{"function":"append_world","revision":1,"template":{"function":"ZGVmIHJ1bihhcmcpOgogICAgcmV0dXJuIGFyZwo="}}}`,
	"leases":                    `{"metadata":{"name":"l","namespace":"default"},"spec":{"holderIdentity":"runner-1","leaseDurationSeconds":15}}`,
	"namespaces":                `{"metadata":{"name":"team-a"}}`,
	"secrets":                   `{"metadata":{"name":"s","namespace":"default"},"stringData":{"password":"x"}}`,
	"serviceaccounts":           `{"metadata":{"name":"sa","namespace":"default"}}`,
	"roles":                     `{"metadata":{"name":"r","namespace":"default"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]}`,
	"clusterroles":              `{"metadata":{"name":"system:r"},"rules":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}]}`,
	"rolebindings":              `{"metadata":{"name":"rb","namespace":"default"},"subjects":[{"kind":"ServiceAccount","name":"sa"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"}}`,
	"clusterrolebindings":       `{"metadata":{"name":"crb"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"alice"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}}`,
	"customresourcedefinitions": `{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`,
	"networkpolicies":           `{"metadata":{"name":"deny","namespace":"default"},"spec":{"podSelector":{},"policyTypes":["Ingress"]}}`,
}

// decodeValid makes res's valid object, with edit applied to its JSON form
// (a map) before it is decoded and defaulted as the server does.
func decodeValid(t testing.TB, res api.Resource, edit func(m map[string]any)) api.Object {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(validObjects[res.Name]), &m); err != nil {
		t.Fatalf("%s: %v", res.Name, err)
	}
	if edit != nil {
		edit(m)
	}
	raw, _ := json.Marshal(m)
	obj := res.New()
	if err := json.Unmarshal(raw, obj); err != nil {
		t.Fatalf("%s: %v", res.Name, err)
	}
	validation.Default(res, obj)
	return obj
}

// at walks m along path ("spec.containers.0") and sets the last key to v
// (nil deletes it).
func at(path string, v any) func(map[string]any) {
	return func(m map[string]any) {
		keys := strings.Split(path, ".")
		var cur any = m
		for _, k := range keys[:len(keys)-1] {
			switch c := cur.(type) {
			case map[string]any:
				if c[k] == nil {
					c[k] = map[string]any{}
				}
				cur = c[k]
			case []any:
				cur = c[int(k[0]-'0')]
			}
		}
		last := keys[len(keys)-1]
		switch c := cur.(type) {
		case map[string]any:
			if v == nil {
				delete(c, last)
			} else {
				c[last] = v
			}
		case []any:
			c[int(last[0]-'0')] = v
		}
	}
}

// TestValidObjectsOfEveryKind: every kind has a valid object here, and it
// passes, so that the table below walks every kind.
func TestValidObjectsOfEveryKind(t *testing.T) {
	for _, res := range api.Resources {
		if _, ok := validObjects[res.Name]; !ok {
			t.Errorf("no valid %s in validObjects", res.Kind)
			continue
		}
		if err := registry.ValidateCreate(res, decodeValid(t, res, nil)); err != nil {
			t.Errorf("valid %s: %v", res.Kind, err)
		}
	}
}

// TestValidationOfEveryKind walks the fields of each kind: what Kubernetes
// refuses is a 422 naming the field (every cause, in Kubernetes' words),
// including the instances the probe found stored.
func TestValidationOfEveryKind(t *testing.T) {
	long := strings.Repeat("a", 254)
	tests := []struct {
		res   api.Resource
		name  string
		edit  func(map[string]any)
		field string
	}{
		// Metadata, on every kind alike.
		{api.ConfigMapsResource, "label prefix over 253", at("metadata.labels", map[string]any{long + "/k": "v"}), "metadata.labels"},
		{api.ConfigMapsResource, "label value", at("metadata.labels", map[string]any{"a": "no spaces"}), "metadata.labels"},
		{api.PodsResource, "annotation key with a space", at("metadata.annotations", map[string]any{"a b": "v"}), "metadata.annotations"},
		{api.PodsResource, "name", at("metadata.name", "Web"), "metadata.name"},
		{api.PodsResource, "namespace", at("metadata.namespace", "a.b"), "metadata.namespace"},
		{api.PodsResource, "finalizer", at("metadata.finalizers", []any{"a b/c"}), "metadata.finalizers"},
		{api.FuncsResource, "label of a function", at("metadata.labels", map[string]any{long + "/k": "v"}), "metadata.labels"},
		{api.FuncInstancesResource, "annotation of an instance", at("metadata.annotations", map[string]any{"a b": "v"}), "metadata.annotations"},
		{api.TriggersResource, "owner without uid", at("metadata.ownerReferences", []any{map[string]any{"apiVersion": "v1", "kind": "App", "name": "a"}}), "metadata.ownerReferences[0].uid"},
		{api.NodesResource, "node name", at("metadata.name", "../../x"), "metadata.name"},

		// Pods.
		{api.PodsResource, "image with a newline", at("spec.containers.0.image", "nginx\n"), "spec.containers[0].image"},
		{api.PodsResource, "image containerd cannot pull", at("spec.containers.0.image", "ngi\nnx"), "spec.containers[0].image"},
		{api.PodsResource, "no image", at("spec.containers.0.image", " "), "spec.containers[0].image"},
		{api.PodsResource, "node name", at("spec.nodeName", "../../x"), "spec.nodeName"},
		{api.PodsResource, "service account", at("spec.serviceAccountName", "a/b"), "spec.serviceAccountName"},
		{api.PodsResource, "secret key ref name", at("spec.containers.0.env.0.valueFrom.secretKeyRef.name", "a/b"), "spec.containers[0].env[0].valueFrom.secretKeyRef.name"},
		{api.PodsResource, "config map key ref key", at("spec.containers.0.env.0.valueFrom", map[string]any{"configMapKeyRef": map[string]any{"name": "c", "key": "../x"}}), "spec.containers[0].env[0].valueFrom.configMapKeyRef.key"},
		{api.PodsResource, "requests above limits", at("spec.containers.0.resources.requests.cpu", "2"), "spec.containers[0].resources.requests"},
		{api.PodsResource, "bad quantity", at("spec.containers.0.resources.limits.cpu", "fast"), "spec.containers[0].resources.limits[cpu]"},
		{api.PodsResource, "cpu beyond int64", at("spec.containers.0.resources.limits.cpu", "1e19"), "spec.containers[0].resources.limits[cpu]"},
		{api.PodsResource, "port range", at("spec.containers.0.ports.0.containerPort", 70000), "spec.containers[0].ports[0].containerPort"},
		{api.PodsResource, "udp", at("spec.containers.0.ports.0.protocol", "UDP"), "spec.containers[0].ports[0].protocol"},
		{api.PodsResource, "env name", at("spec.containers.0.env.0.name", "A=B"), "spec.containers[0].env[0].name"},
		{api.PodsResource, "restart policy", at("spec.restartPolicy", "Sometimes"), "spec.restartPolicy"},
		{api.PodsResource, "mount of no volume", at("spec.containers.0.volumeMounts", []any{map[string]any{"name": "v", "mountPath": "/v"}}), "spec.containers[0].volumeMounts[0].name"},
		{api.PodsResource, "relative hostPath", at("spec.volumes", []any{map[string]any{"name": "v", "hostPath": map[string]any{"path": "x"}}}), "spec.volumes[0].hostPath.path"},
		{api.PodsResource, "probe of no port", at("spec.containers.0.livenessProbe", map[string]any{"httpGet": map[string]any{"port": "nope"}}), "spec.containers[0].livenessProbe.httpGet.port"},
		{api.PodsResource, "host network with a port of its own", func(m map[string]any) {
			at("spec.hostNetwork", true)(m)
			at("spec.containers.0.ports.0.hostPort", 81)(m)
		}, "spec.containers[0].ports[0].hostPort"},

		// Workloads: their templates are pods.
		{api.ReplicaSetsResource, "selector mismatch", at("spec.template.metadata.labels", map[string]any{"app": "b"}), "spec.template.metadata.labels"},
		{api.ReplicaSetsResource, "restart policy", at("spec.template.spec.restartPolicy", "Never"), "spec.template.spec.restartPolicy"},
		{api.ReplicaSetsResource, "negative replicas", at("spec.replicas", -1), "spec.replicas"},
		{api.ResourceQuotasResource, "a resource minik8s does not count", at("spec.hard", map[string]any{"requests.storage": "1Gi"}), "spec.hard[requests.storage]"},
		{api.ResourceQuotasResource, "a count of no kind", at("spec.hard", map[string]any{"count/widgets.example.com": "1"}), "spec.hard[count/widgets.example.com]"},
		{api.ResourceQuotasResource, "a priority class scope", at("spec.scopes", []any{"PriorityClass"}), "spec.scopes[0]"},
		{api.ResourceQuotasResource, "a negative count", at("spec.hard", map[string]any{"pods": "-1"}), "spec.hard[pods]"},
		{api.LimitRangesResource, "a claim's limit", at("spec.limits", []any{map[string]any{"type": "PersistentVolumeClaim", "max": map[string]any{"storage": "1Gi"}}}), "spec.limits[0].type"},
		{api.LimitRangesResource, "default above max", at("spec.limits", []any{map[string]any{"type": "Container", "default": map[string]any{"cpu": "2"}, "max": map[string]any{"cpu": "1"}}}), "spec.limits[0].default[cpu]"},
		{api.DaemonSetsResource, "template image", at("spec.template.spec.containers.0.image", "nginx\n"), "spec.template.spec.containers[0].image"},
		{api.DaemonSetsResource, "maxSurge and maxUnavailable 0", at("spec.updateStrategy", map[string]any{"rollingUpdate": map[string]any{"maxSurge": 0, "maxUnavailable": 0}}), "spec.updateStrategy.rollingUpdate.maxUnavailable"},
		{api.DaemonSetsResource, "selector not matching", at("spec.template.metadata.labels.app", "b"), "spec.template.metadata.labels"},
		{api.IngressesResource, "path type", at("spec.rules.0.http.paths.0.pathType", "Regex"), "spec.rules[0].http.paths[0].pathType"},
		{api.IngressesResource, "relative prefix", at("spec.rules.0.http.paths.0.path", "web"), "spec.rules[0].http.paths[0].path"},
		{api.IngressesResource, "host with a port", at("spec.rules.0.host", "a.example.com:80"), "spec.rules[0].host"},
		{api.IngressesResource, "backend port", at("spec.rules.0.http.paths.0.backend.service.port", map[string]any{}), "spec.rules[0].http.paths[0].backend"},
		{api.PodDisruptionBudgetsResource, "both bounds", at("spec.maxUnavailable", 1), "spec"},
		{api.PodDisruptionBudgetsResource, "percentage past 100", at("spec.minAvailable", "120%"), "spec.minAvailable"},
		{api.PodDisruptionBudgetsResource, "eviction policy", at("spec.unhealthyPodEvictionPolicy", "Sometimes"), "spec.unhealthyPodEvictionPolicy"},
		{api.PriorityClassesResource, "value past the users'", at("value", 1000000001), "value"},
		{api.PriorityClassesResource, "system- name", at("metadata.name", "system-mine"), "metadata.name"},
		{api.PriorityClassesResource, "preemption policy", at("preemptionPolicy", "Sometimes"), "preemptionPolicy"},
		{api.PersistentVolumesResource, "no capacity", at("spec.capacity", map[string]any{}), "spec.capacity"},
		{api.PersistentVolumesResource, "no source", at("spec.hostPath", nil), "spec"},
		{api.PersistentVolumesResource, "access mode", at("spec.accessModes", []any{"ReadWriteSometimes"}), "spec.accessModes"},
		{api.PersistentVolumeClaimsResource, "no size", at("spec.resources.requests", map[string]any{}), "spec.resources[storage]"},
		{api.PersistentVolumeClaimsResource, "no access mode", at("spec.accessModes", []any{}), "spec.accessModes"},
		{api.StorageClassesResource, "reclaim policy", at("reclaimPolicy", "Recycle"), "reclaimPolicy"},
		{api.StorageClassesResource, "binding mode", at("volumeBindingMode", "Later"), "volumeBindingMode"},
		{api.StorageClassesResource, "provisioner", at("provisioner", "not a name!"), "provisioner"},
		{api.NetworkPoliciesResource, "policy type", at("spec.policyTypes", []any{"Sideways"}), "spec.policyTypes[0]"},
		{api.NetworkPoliciesResource, "except outside the block", at("spec.ingress", []any{map[string]any{"from": []any{map[string]any{"ipBlock": map[string]any{"cidr": "192.0.2.0/25", "except": []any{"198.18.0.0/24"}}}}}}), "spec.ingress[0].from[0].ipBlock.except[0]"},
		{api.NetworkPoliciesResource, "end port below port", at("spec.ingress", []any{map[string]any{"ports": []any{map[string]any{"port": 80, "endPort": 79}}}}), "spec.ingress[0].ports[0].endPort"},
		{api.IngressClassesResource, "controller", at("spec.controller", "not a path"), "spec.controller"},
		{api.StatefulSetsResource, "template image", at("spec.template.spec.containers.0.image", "nginx\n"), "spec.template.spec.containers[0].image"},
		{api.StatefulSetsResource, "selector not matching", at("spec.template.metadata.labels.app", "b"), "spec.template.metadata.labels"},
		{api.StatefulSetsResource, "pod management policy", at("spec.podManagementPolicy", "Random"), "spec.podManagementPolicy"},
		{api.StatefulSetsResource, "service name", at("spec.serviceName", "Web_1"), "spec.serviceName"},
		{api.StatefulSetsResource, "restart policy", at("spec.template.spec.restartPolicy", "Never"), "spec.template.spec.restartPolicy"},
		{api.StatefulSetsResource, "claim without size", at("spec.volumeClaimTemplates.0.spec.resources", map[string]any{}), "spec.volumeClaimTemplates[0].spec.resources[storage]"},
		{api.StatefulSetsResource, "negative ordinal start", at("spec.ordinals", map[string]any{"start": -1}), "spec.ordinals.start"},
		{api.StatefulSetsResource, "retention policy", at("spec.persistentVolumeClaimRetentionPolicy", map[string]any{"whenDeleted": "Keep"}), "spec.persistentVolumeClaimRetentionPolicy.whenDeleted"},
		{api.ControllerRevisionsResource, "negative revision", at("revision", -1), "revision"},
		{api.DeploymentsResource, "template image", at("spec.template.spec.containers.0.image", "nginx\n"), "spec.template.spec.containers[0].image"},
		{api.DeploymentsResource, "template node name", at("spec.template.spec.nodeName", "../../x"), "spec.template.spec.nodeName"},
		{api.DeploymentsResource, "pod-template-hash", at("spec.template.metadata.labels.pod-template-hash", "x"), "spec.template.metadata.labels[pod-template-hash]"},
		{api.DeploymentsResource, "maxSurge and maxUnavailable 0", at("spec.strategy", map[string]any{"rollingUpdate": map[string]any{"maxSurge": 0, "maxUnavailable": 0}}), "spec.strategy.rollingUpdate.maxUnavailable"},
		{api.JobsResource, "restart policy", at("spec.template.spec.restartPolicy", "Always"), "spec.template.spec.restartPolicy"},
		{api.JobsResource, "template service account", at("spec.template.spec.serviceAccountName", "a/b"), "spec.template.spec.serviceAccountName"},
		{api.JobsResource, "negative backoff", at("spec.backoffLimit", -1), "spec.backoffLimit"},
		{api.CronJobsResource, "schedule", at("spec.schedule", "every day"), "spec.schedule"},
		{api.CronJobsResource, "template image", at("spec.jobTemplate.spec.template.spec.containers.0.image", "busybox\n"), "spec.jobTemplate.spec.template.spec.containers[0].image"},
		{api.HorizontalPodAutoscalersResource, "max below min", at("spec.maxReplicas", 0), "spec.maxReplicas"},
		{api.HorizontalPodAutoscalersResource, "target kind", at("spec.scaleTargetRef.kind", "DaemonSet"), "spec.scaleTargetRef.kind"},

		// Services and endpoints.
		{api.ServicesResource, "spec null", at("spec", nil), "spec.ports"},
		{api.ServicesResource, "port 0", at("spec.ports.0.port", 0), "spec.ports[0].port"},
		{api.ServicesResource, "cluster IP", at("spec.clusterIP", "300.1.1.1"), "spec.clusterIPs[0]"},
		{api.ServicesResource, "duplicate port", at("spec.ports", []any{map[string]any{"port": 80}, map[string]any{"port": 80}}), "spec.ports[1].name"},
		{api.ServicesResource, "udp", at("spec.ports.0.protocol", "UDP"), "spec.ports[0].protocol"},
		{api.EndpointsResource, "address", at("subsets.0.addresses.0.ip", "nowhere"), "subsets[0].addresses[0].ip"},
		{api.EndpointsResource, "link-local address", at("subsets.0.addresses.0.ip", "169.254.169.254"), "subsets[0].addresses[0].ip"},

		// Configuration and identities.
		{api.ConfigMapsResource, "key", at("data", map[string]any{"../x": "y"}), "data[../x]"},
		{api.SecretsResource, "key", at("stringData", map[string]any{"a b": "y"}), "data[a b]"},
		{api.ServiceAccountsResource, "name", at("metadata.name", "a/b"), "metadata.name"},
		{api.NamespacesResource, "name", at("metadata.name", "a.b"), "metadata.name"},
		{api.EventsResource, "other namespace", at("involvedObject.namespace", "other"), "involvedObject.namespace"},
		{api.LeasesResource, "duration", at("spec.leaseDurationSeconds", 0), "spec.leaseDurationSeconds"},
		{api.NodesResource, "capacity", at("status.capacity.memory", "lots"), "status.capacity[memory]"},
		{api.NodesResource, "pod CIDR", at("spec.podCIDR", "192.0.2.1/24"), "spec.podCIDRs[0]"},

		// RBAC.
		{api.RolesResource, "no verbs", at("rules.0.verbs", []any{}), "rules[0].verbs"},
		{api.RoleBindingsResource, "role kind", at("roleRef.kind", "Pod"), "roleRef.kind"},
		{api.ClusterRoleBindingsResource, "subject kind", at("subjects.0.kind", "Robot"), "subjects[0].kind"},

		// The function kinds: minik8s's own rules.
		{api.FuncsResource, "name", func(m map[string]any) {
			at("metadata.name", "RETURN")(m)
			at("spec.name", "RETURN")(m)
		}, "metadata.name"},
		{api.FuncsResource, "source", at("spec.function", "def run"), "spec.function"},
		{api.FuncInstancesResource, "function", at("spec.function", "a b"), "spec.function"},
		{api.TriggersResource, "path", at("spec.http.path", "hello"), "spec.http.path"},
		{api.AppsResource, "config key", at("spec.config", map[string]any{"a b": "x"}), "spec.config[a b]"},
		{api.FuncRevisionsResource, "revision", at("spec.revision", 0), "spec.revision"},
		{api.FuncsResource, "traffic total", at("spec.traffic", []any{map[string]any{"latest": true, "percent": 90}}), "spec.traffic"},
		{api.FuncsResource, "traffic target", at("spec.traffic", []any{map[string]any{"percent": 100}}), "spec.traffic[0].revision"},
	}
	for _, tc := range tests {
		t.Run(tc.res.Kind+"/"+tc.name, func(t *testing.T) {
			err := registry.ValidateCreate(tc.res, decodeValid(t, tc.res, tc.edit))
			io, ok := errdefs.AsInvalidObject(err)
			if !ok {
				t.Fatalf("got %v, want a 422 naming %s", err, tc.field)
			}
			var fields []string
			for _, c := range io.Causes {
				if c.Field == tc.field {
					if !strings.HasPrefix(c.Type, "FieldValue") || c.Message == "" {
						t.Errorf("cause %+v is not worded as Kubernetes words it", c)
					}
					if !strings.Contains(io.Message, " is invalid: ") || !strings.Contains(io.Message, c.Field+": "+c.Message) {
						t.Errorf("message %q does not hold the cause %q", io.Message, c.Message)
					}
					return
				}
				fields = append(fields, c.Field)
			}
			t.Errorf("%v: causes name %q, want %s", err, fields, tc.field)
		})
	}
}

// BenchmarkCreateValidation: what judging a write costs. A pod's goes
// through Kubernetes' rules (conversion, defaulting, validation); "own" is
// minik8s's rules alone, about what the hand-written validation cost
// before. A FuncInstance (the call path) is judged by minik8s's rules and
// Kubernetes' metadata rules only.
func BenchmarkCreateValidation(b *testing.B) {
	pod := decodeValid(b, api.PodsResource, nil)
	inst := decodeValid(b, api.FuncInstancesResource, nil)
	b.Run("pod", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := registry.ValidateCreate(api.PodsResource, pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pod-own", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if errs := append(validation.Object(api.PodsResource, pod), validation.Status(pod)...); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("funcinstance", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := registry.ValidateCreate(api.FuncInstancesResource, inst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
