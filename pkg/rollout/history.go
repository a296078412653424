package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/owner"
)

// A DaemonSet's or StatefulSet's history is its ControllerRevisions, one
// per template it has had, as Kubernetes keeps it: named <set>-<hash>,
// labelled with the template's labels and the hash, numbered in the order
// the templates were current. kubectl rollout history lists them; rollout
// undo patches the set with one's data, whose revision then becomes the
// newest again.

// RevisionClient is what a History writes.
type RevisionClient interface {
	CreateRevision(ctx context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error)
	GetRevision(ctx context.Context, namespace, name string) (*api.ControllerRevision, error)
	UpdateRevision(ctx context.Context, r *api.ControllerRevision) (*api.ControllerRevision, error)
	DeleteRevision(ctx context.Context, namespace, name, uid string) error
}

// RevisionKey is what a pod's controller-revision-hash label holds of the
// revision it runs: its hash (DaemonSet) or its name (StatefulSet).
type RevisionKey func(*api.ControllerRevision) string

// ByHash and ByName are the two RevisionKeys Kubernetes' controllers use.
var (
	ByHash RevisionKey = func(r *api.ControllerRevision) string { return r.Labels[api.LabelControllerRevisionHash] }
	ByName RevisionKey = func(r *api.ControllerRevision) string { return r.Name }
)

// History is the revision history of the pod template of one object.
type History struct {
	Owner api.Object
	// Kind is the owner's resource, for the revisions' controller reference.
	Kind           api.Resource
	Template       api.PodTemplateSpec
	CollisionCount *int32
	// Limit is the owner's revisionHistoryLimit (nil: 10).
	Limit *int32
	// PodKey is what the owner's pods name their revision by.
	PodKey RevisionKey
	Client RevisionClient
	// SetCollisionCount writes the owner's status.collisionCount.
	SetCollisionCount func(ctx context.Context, n int32) error
}

// Hash is the controller-revision-hash of the owner's current template:
// TemplateHash salted by the collision count, as Hash is.
func (h *History) Hash() string {
	return hash(h.Template, h.CollisionCount)
}

// RevisionName is the name of the owner's revision of hash.
func RevisionName(owner, hash string) string {
	base := owner
	if len(base) > 253-len(hash)-1 {
		base = base[:253-len(hash)-1]
	}
	return base + "-" + hash
}

// patch is what a revision records of a template: a strategic merge patch
// that puts it back whole (Kubernetes' getPatch).
func patch(t api.PodTemplateSpec) (json.RawMessage, error) {
	data, err := json.Marshal(t)
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

// TemplateOf is the pod template a revision records.
func TemplateOf(r *api.ControllerRevision) (api.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template api.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	err := json.Unmarshal(r.Data, &data)
	return data.Spec.Template, err
}

// Revisions are those of all the owner controls, oldest first.
func (h *History) Revisions(all []*api.ControllerRevision) []*api.ControllerRevision {
	uid := h.Owner.GetObjectMeta().UID
	var out []*api.ControllerRevision
	for _, r := range all {
		if owner.IsControlledBy(&r.ObjectMeta, uid) {
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

// Current makes sure the revision of the owner's current template exists
// and is the newest, and returns its hash. A revision of the same name
// recording another template (a hash collision) bumps the owner's
// status.collisionCount, and the next sync hashes anew.
func (h *History) Current(ctx context.Context, revs []*api.ControllerRevision) (string, error) {
	m := h.Owner.GetObjectMeta()
	hash := h.Hash()
	data, err := patch(h.Template)
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
		if _, err := h.Client.UpdateRevision(ctx, up); err != nil {
			return "", fmt.Errorf("renumbering revision %s: %w", cur.Name, err)
		}
		return hash, nil
	}
	labels := make(map[string]string, len(h.Template.Labels)+1)
	for k, v := range h.Template.Labels {
		labels[k] = v
	}
	labels[api.LabelControllerRevisionHash] = hash
	rev := &api.ControllerRevision{
		ObjectMeta: api.ObjectMeta{Name: RevisionName(m.Name, hash), Namespace: m.Namespace, Labels: labels,
			OwnerReferences: []api.OwnerReference{owner.ControllerRef(h.Kind, h.Owner)}},
		Data: data, Revision: newest + 1,
	}
	_, err = h.Client.CreateRevision(ctx, rev)
	if errdefs.IsAlreadyExists(err) {
		there, gerr := h.Client.GetRevision(ctx, m.Namespace, rev.Name)
		if gerr != nil {
			return "", gerr
		}
		if owner.IsControlledBy(&there.ObjectMeta, m.UID) && string(there.Data) == string(data) {
			return hash, nil // our own, not yet in the cache
		}
		return "", h.bumpCollisionCount(ctx, rev.Name)
	}
	if err != nil {
		return "", fmt.Errorf("recording revision %s: %w", rev.Name, err)
	}
	return hash, nil
}

func (h *History) bumpCollisionCount(ctx context.Context, name string) error {
	n := int32(1)
	if h.CollisionCount != nil {
		n = *h.CollisionCount + 1
	}
	if err := h.SetCollisionCount(ctx, n); err != nil {
		return fmt.Errorf("counting a hash collision: %w", err)
	}
	return fmt.Errorf("revision %s holds another template: hashing again (collision %d)", name, n)
}

// Prune deletes the oldest revisions beyond the history limit that
// neither keep nor a pod of the owner (by its controller-revision-hash
// label, read by PodKey) still names.
func (h *History) Prune(ctx context.Context, revs []*api.ControllerRevision, pods []*api.Pod, keep ...string) error {
	limit := 10
	if h.Limit != nil {
		limit = int(*h.Limit)
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
		if !inUse[h.PodKey(r)] {
			old = append(old, r)
		}
	}
	for _, r := range old[:max(0, len(old)-limit)] {
		if err := h.Client.DeleteRevision(ctx, r.Namespace, r.Name, r.UID); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("pruning revision %s: %w", r.Name, err)
		}
	}
	return nil
}
