package daemonset

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

// A DaemonSet's history is its ControllerRevisions, one per template it
// has had, as Kubernetes keeps it: named <set>-<hash>, labelled with the
// template's labels and the hash, numbered in the order the templates
// were current. kubectl rollout history lists them; rollout undo patches
// the set with one's data, whose revision then becomes the newest again.

// patchOf is what a revision records of ds: its template, as a strategic
// merge patch that puts it back whole (Kubernetes' getPatch).
func patchOf(ds *api.DaemonSet) (json.RawMessage, error) {
	data, err := json.Marshal(ds.Spec.Template)
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

// revisions are the ControllerRevisions ds controls, oldest first.
func (dc *Controller) revisions(ds *api.DaemonSet) []*api.ControllerRevision {
	var out []*api.ControllerRevision
	for _, r := range dc.revs.ListNamespace(ds.Namespace, labelsAll) {
		if owner.IsControlledBy(&r.ObjectMeta, ds.UID) {
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

// currentRevision makes sure the revision of ds's current template exists
// and is the newest, and returns its hash. A revision of the same name
// recording another template (a hash collision) bumps the set's
// status.collisionCount, and the next sync hashes anew.
func (dc *Controller) currentRevision(ctx context.Context, ds *api.DaemonSet, revs []*api.ControllerRevision) (string, error) {
	hash := rollout.DaemonSetHash(ds)
	data, err := patchOf(ds)
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
		if _, err := dc.api.UpdateRevision(ctx, up); err != nil {
			return "", fmt.Errorf("renumbering revision %s: %w", cur.Name, err)
		}
		return hash, nil
	}
	labels := make(map[string]string, len(ds.Spec.Template.Labels)+1)
	for k, v := range ds.Spec.Template.Labels {
		labels[k] = v
	}
	labels[api.LabelControllerRevisionHash] = hash
	rev := &api.ControllerRevision{
		ObjectMeta: api.ObjectMeta{Name: revisionName(ds.Name, hash), Namespace: ds.Namespace, Labels: labels,
			OwnerReferences: []api.OwnerReference{owner.ControllerRef(api.DaemonSetsResource, ds)}},
		Data: data, Revision: newest + 1,
	}
	_, err = dc.api.CreateRevision(ctx, rev)
	if errdefs.IsAlreadyExists(err) {
		there, gerr := dc.api.GetRevision(ctx, ds.Namespace, rev.Name)
		if gerr != nil {
			return "", gerr
		}
		if owner.IsControlledBy(&there.ObjectMeta, ds.UID) && string(there.Data) == string(data) {
			return hash, nil // our own, not yet in the cache
		}
		return "", dc.bumpCollisionCount(ctx, ds)
	}
	if err != nil {
		return "", fmt.Errorf("recording revision %s: %w", rev.Name, err)
	}
	return hash, nil
}

func revisionName(ds, hash string) string {
	base := ds
	if len(base) > 253-len(hash)-1 {
		base = base[:253-len(hash)-1]
	}
	return base + "-" + hash
}

func (dc *Controller) bumpCollisionCount(ctx context.Context, ds *api.DaemonSet) error {
	up := cache.DeepCopy(ds)
	n := int32(1)
	if up.Status.CollisionCount != nil {
		n = *up.Status.CollisionCount + 1
	}
	up.Status.CollisionCount = &n
	if _, err := dc.api.UpdateDaemonSetStatus(ctx, up); err != nil {
		return fmt.Errorf("counting a hash collision: %w", err)
	}
	return fmt.Errorf("revision %s holds another template: hashing again (collision %d)", revisionName(ds.Name, rollout.DaemonSetHash(ds)), n)
}

// pruneHistory deletes the oldest revisions beyond revisionHistoryLimit
// that no pod of the set still runs.
func (dc *Controller) pruneHistory(ctx context.Context, ds *api.DaemonSet, revs []*api.ControllerRevision, hash string, pods []*api.Pod) error {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	inUse := map[string]bool{hash: true}
	for _, p := range pods {
		inUse[p.Labels[api.LabelControllerRevisionHash]] = true
	}
	var old []*api.ControllerRevision
	for _, r := range revs {
		if !inUse[r.Labels[api.LabelControllerRevisionHash]] {
			old = append(old, r)
		}
	}
	for _, r := range old[:max(0, len(old)-limit)] {
		if err := dc.api.DeleteRevision(ctx, r.Namespace, r.Name, r.UID); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("pruning revision %s: %w", r.Name, err)
		}
	}
	return nil
}
