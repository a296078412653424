package statefulset

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"minik8s/pkg/api"
	"minik8s/pkg/owner"
)

// podName is the stable name of the set's pod of ordinal ord.
func podName(set string, ord int) string { return set + "-" + strconv.Itoa(ord) }

// claimName is the claim of template tmpl for the set's pod of ord.
func claimName(tmpl, set string, ord int) string { return tmpl + "-" + podName(set, ord) }

// newPod is the set's pod of ordinal ord from tmpl (of revision rev): its
// identity (name, host name under the set's Service, labels) and its
// claims' volumes, as Kubernetes' newVersionedStatefulSetPod makes it.
// The template's own namespace, if it says one, is not the pod's: the
// pod is the set's.
func newPod(set *api.StatefulSet, tmpl api.PodTemplateSpec, rev string, ord int) *api.Pod {
	t := copyJSON(tmpl)
	name := podName(set.Name, ord)
	lbls := maps.Clone(t.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[api.LabelStatefulSetPodName] = name
	lbls[api.LabelPodIndex] = strconv.Itoa(ord)
	lbls[api.LabelControllerRevisionHash] = rev
	p := &api.Pod{
		TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: lbls, Annotations: t.Annotations,
			OwnerReferences: []api.OwnerReference{owner.ControllerRef(api.StatefulSetsResource, set)}},
		Spec: t.Spec,
	}
	p.Spec.Hostname, p.Spec.Subdomain = name, set.Spec.ServiceName
	for _, c := range set.Spec.VolumeClaimTemplates {
		setClaimVolume(&p.Spec, c.Name, claimName(c.Name, set.Name, ord))
	}
	return p
}

// copyJSON is a deep copy of an API value (which always encodes).
func copyJSON[T any](in T) T {
	var out T
	data, err := json.Marshal(in)
	if err == nil {
		err = json.Unmarshal(data, &out)
	}
	if err != nil {
		panic(fmt.Sprintf("copy of %T: %v", in, err))
	}
	return out
}
