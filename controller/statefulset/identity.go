package statefulset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
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

func whenScaled(set *api.StatefulSet) string {
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		return p.WhenScaled
	}
	return api.RetainPersistentVolumeClaimRetentionPolicy
}

// ensureClaims makes the claims of the pod of ord that do not exist yet,
// in the set's namespace whatever the template says; an existing claim
// (the pod's before it was deleted) is kept as it is, data and all.
func (sc *Controller) ensureClaims(ctx context.Context, set *api.StatefulSet, ord int) error {
	for _, t := range set.Spec.VolumeClaimTemplates {
		name := claimName(t.Name, set.Name, ord)
		if _, err := sc.api.GetClaim(ctx, set.Namespace, name); err == nil {
			continue
		} else if !errdefs.IsNotFound(err) {
			return fmt.Errorf("reading claim %s: %w", name, err)
		}
		lbls := maps.Clone(t.Labels)
		if lbls == nil {
			lbls = map[string]string{}
		}
		maps.Copy(lbls, set.Spec.Selector.MatchLabels)
		c := &api.PersistentVolumeClaim{
			TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: api.ObjectMeta{Name: name, Namespace: set.Namespace, Labels: lbls, Annotations: t.Annotations},
			Spec:       copyJSON(t.Spec),
		}
		// Retain (the default) leaves the claim to outlive the set;
		// Delete makes the set its owner, for the collector.
		if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenDeleted == api.DeletePersistentVolumeClaimRetentionPolicy {
			c.OwnerReferences = []api.OwnerReference{{APIVersion: api.StatefulSetsResource.GroupVersion(),
				Kind: api.StatefulSetsResource.Kind, Name: set.Name, UID: set.UID}}
		}
		if _, err := sc.api.CreateClaim(ctx, c); err != nil && !errdefs.IsAlreadyExists(err) {
			return fmt.Errorf("creating claim %s: %w", name, err)
		}
	}
	return nil
}

// deleteClaims deletes the claims of a pod the set scaled away.
func (sc *Controller) deleteClaims(ctx context.Context, set *api.StatefulSet, ord int) error {
	var errs []error
	for _, t := range set.Spec.VolumeClaimTemplates {
		if err := sc.api.DeleteClaim(ctx, set.Namespace, claimName(t.Name, set.Name, ord)); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
