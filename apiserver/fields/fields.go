// Package fields keeps metadata.managedFields, who set which field of an
// object, and does server-side apply, with Kubernetes' own field manager
// (k8s.io/apimachinery's managedfields over structured-merge-diff): every
// write through the API records its manager's fields, and an apply
// merges a manager's configuration into the object, refusing (409) to
// take a field another manager set unless forced.
package fields

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// StatusSubresource names the status subresource's field manager.
const StatusSubresource = "status"

// Manager keeps the managed fields of every served kind.
type Manager struct {
	// mu guards the maps: a custom resource's managers are made at its
	// first write.
	mu       sync.Mutex
	tc       managedfields.TypeConverter
	managers map[string]*managedfields.FieldManager
	gvks     map[string]schema.GroupVersionKind
}

// New makes the field managers of resources, each as served (its group
// and version are what managedFields record).
func New(resources []api.Resource) (*Manager, error) {
	tc, err := newTypeConverter()
	if err != nil {
		return nil, fmt.Errorf("server-side apply's schema: %w", err)
	}
	m := &Manager{tc: tc, managers: map[string]*managedfields.FieldManager{}, gvks: map[string]schema.GroupVersionKind{}}
	for _, res := range resources {
		if err := m.add(res); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// add makes res's managers.
func (m *Manager) add(res api.Resource) error {
	tc := m.tc
	{
		res = res.Served()
		gv, err := schema.ParseGroupVersion(res.GroupVersion())
		if err != nil {
			return err
		}
		gvk := gv.WithKind(res.Kind)
		m.gvks[key(res)] = gvk
		subs := []string{""}
		if res.HasStatus {
			subs = append(subs, StatusSubresource)
		}
		for _, sub := range subs {
			// Each version's manager works in its own version: the object
			// it is given and the one it returns are in it.
			fm, err := managedfields.NewDefaultFieldManager(tc, versions{}, noDefaults{}, creater{}, gvk, gv, sub, resetFields(res, sub))
			if err != nil {
				return err
			}
			m.managers[key(res)+"/"+sub] = fm
		}
	}
	return nil
}

// key names a resource in one version: "autoscaling/v1/horizontalpodautoscalers".
func key(res api.Resource) string {
	if res.Custom && res.HasStatus {
		// A custom resource may gain or lose its status subresource.
		return res.GroupVersion() + "/" + res.Name + "+status"
	}
	return res.Served().GroupVersion() + "/" + res.Name
}

// resetFields are the fields a write of the object (or of its status)
// does not set, and an apply there may not own: the status of a kind
// with a status subresource, or, through that subresource, its spec.
func resetFields(res api.Resource, sub string) map[fieldpath.APIVersion]fieldpath.Filter {
	if !res.HasStatus {
		return nil
	}
	reset := "status"
	if sub == StatusSubresource {
		reset = "spec"
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(res.Served().GroupVersion()): fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie(reset))),
	}
}

func (m *Manager) manager(res api.Resource, sub string) (*managedfields.FieldManager, schema.GroupVersionKind, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fm, ok := m.managers[key(res)+"/"+sub]
	if !ok && res.Custom {
		// A custom resource merges as a kind without a schema here
		// (atomic lists), its managers made at its first write.
		if err := m.add(res); err != nil {
			return nil, schema.GroupVersionKind{}, err
		}
		fm, ok = m.managers[key(res)+"/"+sub]
	}
	if !ok {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("%w: %s%s has no field manager", errdefs.ErrInvalid, key(res), "/"+sub)
	}
	return fm, m.gvks[key(res)], nil
}

// Apply merges patch, manager's applied configuration (YAML or JSON), into
// live, the object as stored (nil when the apply creates it), and returns
// the result as JSON, managedFields included, for the caller to decode,
// validate and write as any other write. force takes the fields other
// managers own; without it, taking one is a conflict naming them.
func (m *Manager) Apply(res api.Resource, sub string, live api.Object, patch []byte, manager string, force bool) ([]byte, error) {
	fm, gvk, err := m.manager(res, sub)
	if err != nil {
		return nil, err
	}
	applied, err := decodeApplied(patch, gvk)
	if err != nil {
		return nil, err
	}
	liveU := &unstructured.Unstructured{Object: map[string]any{}}
	liveU.SetGroupVersionKind(gvk)
	if live != nil {
		if liveU, err = toUnstructured(live, gvk); err != nil {
			return nil, err
		}
	}
	out, err := fm.Apply(liveU, applied, manager, force)
	if err != nil {
		return nil, applyError(err)
	}
	return json.Marshal(out)
}

// decodeApplied reads an applied configuration: an object of the kind,
// with no managedFields.
func decodeApplied(patch []byte, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	data, err := yaml.YAMLToJSON(patch)
	if err != nil {
		return nil, errdefs.BadRequest("", "malformed apply patch: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(data, &u.Object); err != nil || u.Object == nil {
		return nil, errdefs.BadRequest("", "malformed apply patch: it must be an object of kind %s", gvk.Kind)
	}
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, errdefs.BadRequest("", "an apply patch must say its apiVersion and kind (%s, %s)", gvk.GroupVersion(), gvk.Kind)
	}
	if u.GetKind() != gvk.Kind {
		return nil, errdefs.BadRequest("kind", "%q does not belong here (want %q)", u.GetKind(), gvk.Kind)
	}
	return u, nil
}

// applyError turns the field manager's errors into the error classes.
func applyError(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		// Everything else is what the configuration says: a field not in
		// the kind's schema, a duplicate key.
		return errdefs.BadRequest("", "%v", err)
	}
	msg := status.Status().Message
	switch {
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s: %w", msg, errdefs.ErrConflict)
	case apierrors.IsBadRequest(err):
		return errdefs.BadRequest("", "%s", msg)
	}
	return errdefs.Invalid("", "%s", msg)
}

// Update records in obj's managedFields that manager wrote it over old
// (nil on create). It never fails a write: managedFields it cannot work
// out are left as they were, as Kubernetes does.
func (m *Manager) Update(res api.Resource, sub string, old, obj api.Object, manager string) {
	if old != nil && len(old.GetObjectMeta().ManagedFields) == 0 && len(obj.GetObjectMeta().ManagedFields) == 0 {
		// An object nobody tracked stays untracked until applied, as
		// Kubernetes' field manager says (skipNonAppliedManager): said
		// before the conversions it would make to find that out.
		return
	}
	fm, gvk, err := m.manager(res, sub)
	if err != nil {
		return
	}
	newU, err := toUnstructured(obj, gvk)
	liveU := &unstructured.Unstructured{Object: map[string]any{}}
	liveU.SetGroupVersionKind(gvk)
	if err == nil && old != nil {
		liveU, err = toUnstructured(old, gvk)
	}
	var out runtime.Object
	if err == nil {
		out, err = fm.Update(liveU, newU, manager)
	}
	meta := obj.GetObjectMeta()
	if err != nil {
		slog.Warn("managedFields not updated", "kind", gvk.Kind, "namespace", meta.Namespace, "name", meta.Name, "err", err)
		if old != nil {
			meta.ManagedFields = old.GetObjectMeta().ManagedFields
		}
		return
	}
	meta.ManagedFields = out.(*unstructured.Unstructured).GetManagedFields()
}

// toUnstructured is obj as JSON reads it, of kind gvk.
func toUnstructured(obj api.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(data, &u.Object); err != nil {
		return nil, err
	}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// Valid says whether managedFields, as a client sent them, decode.
func Valid(entries []metav1.ManagedFieldsEntry) error {
	return managedfields.ValidateManagedFields(entries)
}

// The registry defaults what an apply produces, as any other write.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
