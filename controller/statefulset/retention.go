package statefulset

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
)

// retention is the set's persistentVolumeClaimRetentionPolicy, Retain
// for what it does not say.
func retention(set *api.StatefulSet) (whenDeleted, whenScaled string) {
	whenDeleted, whenScaled = api.RetainPersistentVolumeClaimRetentionPolicy, api.RetainPersistentVolumeClaimRetentionPolicy
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		if p.WhenDeleted == api.DeletePersistentVolumeClaimRetentionPolicy {
			whenDeleted = p.WhenDeleted
		}
		if p.WhenScaled == api.DeletePersistentVolumeClaimRetentionPolicy {
			whenScaled = p.WhenScaled
		}
	}
	return whenDeleted, whenScaled
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
		if whenDeleted, _ := retention(set); whenDeleted == api.DeletePersistentVolumeClaimRetentionPolicy {
			c.OwnerReferences = []api.OwnerReference{setRef(set)}
		}
		if _, err := sc.api.CreateClaim(ctx, c); err != nil && !errdefs.IsAlreadyExists(err) {
			return fmt.Errorf("creating claim %s: %w", name, err)
		}
	}
	return nil
}

func setRef(set *api.StatefulSet) api.OwnerReference {
	return api.OwnerReference{APIVersion: api.StatefulSetsResource.GroupVersion(), Kind: api.StatefulSetsResource.Kind, Name: set.Name, UID: set.UID}
}

func podRef(p *api.Pod) api.OwnerReference {
	return api.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID}
}

// claimOwners are the owners the claim of the set's pod p should have
// under the set's retention policy, as Kubernetes'
// updateClaimOwnerRefForSetAndPod gives them: the set when its deletion
// deletes the claim, the pod when the set scaled it away and scaling
// deletes claims (the collector deletes the claim once the pod is gone,
// so no claim goes while its pod still runs); ok is false when they are
// those it has.
func claimOwners(claim *api.PersistentVolumeClaim, set *api.StatefulSet, p *api.Pod, inRange bool) ([]api.OwnerReference, bool) {
	whenDeleted, whenScaled := retention(set)
	const del = api.DeletePersistentVolumeClaimRetentionPolicy
	wantSet := whenDeleted == del && (inRange || whenScaled != del)
	wantPod := whenScaled == del && !inRange
	refs := slices.Clone(claim.OwnerReferences)
	// Earlier pods of the name (and sets of the name) are dropped too:
	// they are gone, and would have the collector delete the claim.
	refs = slices.DeleteFunc(refs, func(r api.OwnerReference) bool {
		return (r.Kind == "Pod" && r.Name == p.Name && (!wantPod || r.UID != p.UID)) ||
			(r.Kind == api.StatefulSetsResource.Kind && r.Name == set.Name && (!wantSet || r.UID != set.UID))
	})
	has := func(uid string) bool {
		return slices.ContainsFunc(refs, func(r api.OwnerReference) bool { return r.UID == uid })
	}
	if wantSet && !has(set.UID) {
		refs = append(refs, setRef(set))
	}
	if wantPod && !has(p.UID) {
		refs = append(refs, podRef(p))
	}
	if slices.EqualFunc(refs, claim.OwnerReferences, func(a, b api.OwnerReference) bool { return a.UID == b.UID }) {
		return nil, false
	}
	return refs, true
}

// retainClaims gives the claims of the set's pods the owners the
// retention policy says (pods out of range first of all: before they are
// deleted, their claims must be theirs).
func (sc *Controller) retainClaims(ctx context.Context, set *api.StatefulSet, v *view) error {
	for _, p := range v.all {
		ord, _ := ordinalOf(set.Name, p)
		inRange := ord >= v.start && ord < v.start+v.replicas
		for _, t := range set.Spec.VolumeClaimTemplates {
			claim, ok := sc.claims.Get(set.Namespace, claimName(t.Name, set.Name, ord))
			if !ok || claim.DeletionTimestamp != nil {
				continue
			}
			refs, changed := claimOwners(claim, set, p, inRange)
			if !changed {
				continue
			}
			up := cache.DeepCopy(claim)
			up.OwnerReferences = refs
			if _, err := sc.api.UpdateClaim(ctx, up); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("updating the owners of claim %s: %w", cache.Key(claim), err)
			}
		}
	}
	return nil
}
