package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/owner"
	"minik8s/pkg/rollout"
)

// A StatefulSet's history is its ControllerRevisions, one per template it
// has had, as Kubernetes keeps it: named <set>-<hash>, labelled with the
// template's labels and the hash, numbered in the order the templates
// were current. kubectl rollout history lists them; rollout undo patches
// the set with one's data, whose revision then becomes the newest again.

// patchOf is what a revision records of a set: its template, as a strategic
// merge patch that puts it back whole (Kubernetes' getPatch).
func patchOf(set *api.StatefulSet) (json.RawMessage, error) {
	data, err := json.Marshal(set.Spec.Template)
	if err != nil {
		return nil, err
	}
	var tmpl map[string]any
	if err := json.Unmarshal(data, &tmpl); err != nil {
		return nil, err
	}
	tmpl["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
}

// revisions are the ControllerRevisions a set controls, oldest first.
func (sc *Controller) revisions(set *api.StatefulSet) []*api.ControllerRevision {
	var out []*api.ControllerRevision
	for _, r := range sc.revs.ListNamespace(set.Namespace, labelsAll) {
		if owner.IsControlledBy(&r.ObjectMeta, set.UID) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Revision != out[j].Revision {
			return out[i].Revision < out[j].Revision
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// currentRevision makes sure the revision of a set's current template exists
// and is the newest, and returns its hash. A revision of the same name
// recording another template (a hash collision) bumps the set's
// status.collisionCount, and the next sync hashes anew.
func (sc *Controller) currentRevision(ctx context.Context, set *api.StatefulSet, revs []*api.ControllerRevision) (string, error) {
	hash := rollout.StatefulSetHash(set)
	data, err := patchOf(set)
	if err != nil {
		return "", err
	}
	var newest int64
	var cur *api.ControllerRevision
	for _, r := range revs {
		newest = max(newest, r.Revision)
		if r.Labels[api.LabelControllerRevisionHash] == hash {
			cur = r
		}
	}
	if cur != nil {
		if cur.Revision == newest {
			return hash, nil
		}
		// Rolled back to an older template: it is the newest again.
		up := cache.DeepCopy(cur)
		up.Revision = newest + 1
		if _, err := sc.api.UpdateRevision(ctx, up); err != nil {
			return "", fmt.Errorf("renumbering revision %s: %w", cur.Name, err)
		}
		return hash, nil
	}
	labels := make(map[string]string, len(set.Spec.Template.Labels)+1)
	for k, v := range set.Spec.Template.Labels {
		labels[k] = v
	}
	labels[api.LabelControllerRevisionHash] = hash
	rev := &api.ControllerRevision{
		ObjectMeta: api.ObjectMeta{Name: revisionName(set.Name, hash), Namespace: set.Namespace, Labels: labels,
			OwnerReferences: []api.OwnerReference{owner.ControllerRef(api.StatefulSetsResource, set)}},
		Data: data, Revision: newest + 1,
	}
	_, err = sc.api.CreateRevision(ctx, rev)
	if errdefs.IsAlreadyExists(err) {
		there, gerr := sc.api.GetRevision(ctx, set.Namespace, rev.Name)
		if gerr != nil {
			return "", gerr
		}
		if owner.IsControlledBy(&there.ObjectMeta, set.UID) && string(there.Data) == string(data) {
			return hash, nil // our own, not yet in the cache
		}
		return "", sc.bumpCollisionCount(ctx, set)
	}
	if err != nil {
		return "", fmt.Errorf("recording revision %s: %w", rev.Name, err)
	}
	return hash, nil
}

func revisionName(set, hash string) string {
	base := set
	if len(base) > 253-len(hash)-1 {
		base = base[:253-len(hash)-1]
	}
	return base + "-" + hash
}

func (sc *Controller) bumpCollisionCount(ctx context.Context, set *api.StatefulSet) error {
	up := cache.DeepCopy(set)
	n := int32(1)
	if up.Status.CollisionCount != nil {
		n = *up.Status.CollisionCount + 1
	}
	up.Status.CollisionCount = &n
	if _, err := sc.api.UpdateStatefulSetStatus(ctx, up); err != nil {
		return fmt.Errorf("counting a hash collision: %w", err)
	}
	return fmt.Errorf("revision %s holds another template: hashing again (collision %d)", revisionName(set.Name, rollout.StatefulSetHash(set)), n)
}

// pruneHistory deletes the oldest revisions beyond revisionHistoryLimit
// that neither a pod of the set (whose label names its revision) nor the
// set's status still names.
func (sc *Controller) pruneHistory(ctx context.Context, set *api.StatefulSet, revs []*api.ControllerRevision, keep []string, pods []*api.Pod) error {
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	inUse := map[string]bool{}
	for _, k := range keep {
		inUse[k] = true
	}
	for _, p := range pods {
		inUse[p.Labels[api.LabelControllerRevisionHash]] = true
	}
	var old []*api.ControllerRevision
	for _, r := range revs {
		if !inUse[r.Name] {
			old = append(old, r)
		}
	}
	for _, r := range old[:max(0, len(old)-limit)] {
		if err := sc.api.DeleteRevision(ctx, r.Namespace, r.Name, r.UID); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("pruning revision %s: %w", r.Name, err)
		}
	}
	return nil
}

// templateOf is the pod template a revision records.
func templateOf(r *api.ControllerRevision) (api.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template api.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	err := json.Unmarshal(r.Data, &data)
	return data.Spec.Template, err
}
