package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"

	"minik8s/apiserver/alloc"
	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// Store is the storage logic of one resource, independent of HTTP:
// defaulting, validation, server-set fields, subresources.
type Store struct {
	Resource api.Resource
	Storage  storage.Interface
	// TTL > 0 makes created objects expire (function instances).
	TTL time.Duration
	// IPs allocates cluster IPs (services only), PodCIDRs pod CIDRs
	// (nodes only).
	IPs      *alloc.ClusterIPs
	PodCIDRs *alloc.PodCIDRs
	// NodePorts allocates the node ports of NodePort Services.
	NodePorts *alloc.NodePorts
	// Cache serves the watches.
	Cache *WatchCache
	// Namespaces admits creates of namespaced kinds.
	Namespaces *NamespaceIndex
	// AdmitSpecs admits the pod specs a created or updated object
	// carries against the request's user (Server.admitPodSpecs): here,
	// so that no route writing the kind can miss it. old is nil on create.
	AdmitSpecs func(ctx context.Context, res api.Resource, old, obj api.Object) error
	// AdmitState judges what a created or updated object says against
	// the cluster's state (Server.admitEndpoints), when set.
	AdmitState func(ctx context.Context, obj api.Object) error
	// Fields keeps metadata.managedFields, when set.
	Fields FieldTracker
	// MutateCreate changes a new object after its defaults and before it
	// is validated (Server.limitPod: a LimitRange's defaults), when set.
	MutateCreate func(ctx context.Context, obj api.Object) error
	// Reserve admits new objects against their namespaces' quotas and
	// holds what they take until release is called, after the write
	// (Server.reserveQuota), when set.
	Reserve func(ctx context.Context, res api.Resource, objs ...api.Object) (release func(), err error)
	// Schema prunes, defaults and judges the objects of a custom
	// resource by its CRD's schema in the Store's version, when set.
	Schema Schema
}

// Schema is a custom resource's structural schema at work (apiserver's
// customresource package implements it with apiextensions-apiserver's).
type Schema interface {
	// Default prunes the fields the schema does not declare and fills
	// its defaults (in obj's status too when status is true).
	Default(obj api.Object, status bool) error
	// Validate judges obj (old is nil on create).
	Validate(obj, old api.Object) field.ErrorList
	// Unknown is the fields of obj Default would prune ("spec.foo"):
	// what strict field validation refuses.
	Unknown(obj api.Object) []string
}

// hooks is the strategy of the registry's kind.
func (r *Store) hooks() strategy { return strategyFor(r.Resource) }

// defaultStored defaults an object read from the store before an update
// compares with it, as Kubernetes defaults what it decodes: an object
// written before a default was added (a template's schedulerName) then
// compares equal to its update, and immutability holds. The function
// kinds' records are written by the platform with their defaults, and
// their updates are the call path: left as stored.
func (r *Store) defaultStored(cur api.Object) {
	if r.Resource.Served().Group != api.FuncGroup {
		validation.Default(r.Resource, cur)
	}
}

// admit runs admitSpecs and admitState, when set.
func (r *Store) admit(ctx context.Context, old, obj api.Object) error {
	if r.AdmitSpecs != nil {
		if err := r.AdmitSpecs(ctx, r.Resource, old, obj); err != nil {
			return err
		}
	}
	if r.AdmitState != nil {
		return r.AdmitState(ctx, obj)
	}
	return nil
}

const keyRoot = storage.KeyRoot

// collection is where the resource's objects are stored: a custom
// resource's under its group, apart from every built-in kind's, as
// Kubernetes keys them (a CRD may well name its plural "pods").
func (r *Store) collection() string {
	if r.Resource.Custom {
		return keyRoot + CustomResourcePrefix + r.Resource.Group + "/" + r.Resource.Name
	}
	return keyRoot + r.Resource.Name
}

// CustomResourcePrefix is under the key root where custom objects are.
const CustomResourcePrefix = "customresources/"

func (r *Store) Key(ns, name string) string {
	if r.Resource.Namespaced {
		return r.collection() + "/" + ns + "/" + name
	}
	return r.collection() + "/" + name
}

// prefix is the key prefix of a collection; ns == "" lists all namespaces.
// Watch streams the changes in namespace ns ("" for all) after revision from.
func (r *Store) Watch(ctx context.Context, ns string, from int64) (<-chan storage.Event, error) {
	if r.Cache == nil {
		return r.Storage.Watch(ctx, r.Prefix(ns), from, r.Resource.New)
	}
	return r.Cache.watch(ctx, ns, from, r.Prefix(ns))
}

func (r *Store) Prefix(ns string) string {
	if r.Resource.Namespaced && ns != "" {
		return r.collection() + "/" + ns + "/"
	}
	return r.collection() + "/"
}

// checkTypeMeta refuses a body whose kind or apiVersion belongs elsewhere.
func (r *Store) checkTypeMeta(obj api.Object) error {
	tm := obj.GetTypeMeta()
	if tm.Kind != "" && tm.Kind != r.Resource.Kind {
		return errdefs.BadRequest("kind", "%q does not belong at %s (want %q)", tm.Kind, r.Resource.Path("", ""), r.Resource.Kind)
	}
	if tm.APIVersion == "" || r.hooks().anyAPIVersion() {
		return nil
	}
	if tm.APIVersion != r.Resource.GroupVersion() {
		return errdefs.BadRequest("apiVersion", "%q is not the version of %s (want %q)", tm.APIVersion, r.Resource.Kind, r.Resource.GroupVersion())
	}
	return nil
}

// CheckIdentity reconciles the namespace and name of the URL with the
// body's, as Kubernetes does (EnsureObjectNamespaceMatchesRequestNamespace,
// checkName): a body's namespace or name that is not the request's is 400.
func (r *Store) CheckIdentity(obj api.Object, ns, name string) error {
	meta := obj.GetObjectMeta()
	if r.Resource.Namespaced {
		if err := MatchNamespace(meta, ns); err != nil {
			return err
		}
	} else {
		meta.Namespace = ""
	}
	if name != "" {
		return MatchName(meta, name)
	}
	return nil
}

// MatchNamespace sets an object's namespace to the request's, refusing
// another.
func MatchNamespace(meta *api.ObjectMeta, ns string) error {
	if meta.Namespace == "" {
		meta.Namespace = ns
	} else if meta.Namespace != ns {
		return errdefs.BadRequest("metadata.namespace", "the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// MatchName sets an object's name to the request's, refusing another.
func MatchName(meta *api.ObjectMeta, name string) error {
	if meta.Name == "" {
		meta.Name = name
	} else if meta.Name != name {
		return errdefs.BadRequest("metadata.name", "the name of the object (%s) does not match the name on the URL (%s)", meta.Name, name)
	}
	return nil
}

func (r *Store) Create(ctx context.Context, ns string, obj api.Object) (api.Object, error) {
	generated, err := r.prepareCreate(ctx, ns, obj)
	if err != nil {
		return nil, err
	}
	r.track(ctx, "", nil, obj)
	if err := r.admit(ctx, nil, obj); err != nil {
		return nil, err
	}
	meta := obj.GetObjectMeta()
	if r.Resource.Namespaced && r.Namespaces != nil {
		if err := r.Namespaces.Admit(ctx, meta.Namespace); err != nil {
			return nil, err
		}
	}
	if r.Reserve != nil {
		release, err := r.Reserve(ctx, r.Resource, obj)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	// A generated name that is taken is generated again, as Kubernetes
	// does (RetryGenerateName): the caller asked for any name. A name the
	// caller gave is its own, taken or not.
	for attempt := 1; ; attempt++ {
		err := r.hooks().create(ctx, r, r.Key(meta.Namespace, meta.Name), obj)
		if generated && errdefs.IsAlreadyExists(err) && attempt < generateNameAttempts {
			meta.Name = nameGenerator.GenerateName(meta.GenerateName)
			continue
		}
		if err != nil {
			return nil, err
		}
		return obj, nil
	}
}

// nameGenerator makes names from metadata.generateName (a test's may
// repeat itself).
var nameGenerator = names.SimpleNameGenerator

// generateNameAttempts bounds the names tried for a create with
// metadata.generateName, as Kubernetes' RetryGenerateName (8 in all).
const generateNameAttempts = 8

// PrepareCreate checks a new object, sets the metadata the server owns,
// defaults and validates it.
func (r *Store) PrepareCreate(ctx context.Context, ns string, obj api.Object) error {
	_, err := r.prepareCreate(ctx, ns, obj)
	return err
}

// prepareCreate is PrepareCreate, saying whether it generated the
// object's name (metadata.generateName).
func (r *Store) prepareCreate(ctx context.Context, ns string, obj api.Object) (generated bool, err error) {
	if err := r.checkTypeMeta(obj); err != nil {
		return false, err
	}
	if err := r.CheckIdentity(obj, ns, ""); err != nil {
		return false, err
	}
	meta := obj.GetObjectMeta()
	now := time.Now().UTC().Truncate(time.Second)
	meta.UID = uuid.NewString()
	meta.ResourceVersion = ""
	meta.CreationTimestamp = &now
	meta.DeletionTimestamp = nil
	meta.DeletionGracePeriodSeconds = nil
	meta.Generation = 1
	r.hooks().prepareForCreate(obj)
	if meta.Name == "" && meta.GenerateName != "" {
		meta.Name = nameGenerator.GenerateName(meta.GenerateName)
		generated = true
	}
	validation.Default(r.Resource, obj)
	if r.MutateCreate != nil {
		if err := r.MutateCreate(ctx, obj); err != nil {
			return generated, err
		}
	}
	if err := r.schemaDefault(obj, false); err != nil {
		return generated, err
	}
	return generated, r.validateSchema(ValidateCreate(r.Resource, obj), obj, nil)
}

// CreateMany creates objects of a kind without cluster IPs in one store
// write: all or none. An object that does not pass the checks is left
// out, its error at its index in errs.
func (r *Store) CreateMany(ctx context.Context, objs []api.Object) (errs []error, err error) {
	errs = make([]error, len(objs))
	items := make([]storage.Item, 0, len(objs))
	for i, obj := range objs {
		if errs[i] = r.PrepareCreate(ctx, obj.GetObjectMeta().Namespace, obj); errs[i] != nil {
			continue
		}
		if errs[i] = r.admit(ctx, nil, obj); errs[i] != nil {
			continue
		}

		meta := obj.GetObjectMeta()
		items = append(items, storage.Item{Key: r.Key(meta.Namespace, meta.Name), Object: obj})
	}
	if r.Reserve != nil && len(items) > 0 {
		// One reservation for the batch: the write is all or none.
		objs := make([]api.Object, len(items))
		for i, it := range items {
			objs[i] = it.Object
		}
		release, err := r.Reserve(ctx, r.Resource, objs...)
		if err != nil {
			return errs, err
		}
		defer release()
	}
	return errs, r.Storage.CreateMany(ctx, items, r.TTL)
}

func (r *Store) Get(ctx context.Context, ns, name string) (api.Object, error) {
	obj := r.Resource.New()
	if err := r.Storage.Get(ctx, r.Key(ns, name), obj); err != nil {
		return nil, r.notFound(err, ns, name)
	}
	return obj, nil
}

func (r *Store) notFound(err error, ns, name string) error {
	if !errdefs.IsNotFound(err) {
		return err
	}
	if r.Resource.Namespaced {
		return fmt.Errorf("%s %q not found in namespace %q: %w", r.Resource.Kind, name, ns, errdefs.ErrNotFound)
	}
	return fmt.Errorf("%s %q not found: %w", r.Resource.Kind, name, errdefs.ErrNotFound)
}

func (r *Store) List(ctx context.Context, ns string, f Filter) ([]api.Object, int64, error) {
	objs, rev, err := r.Storage.List(ctx, r.Prefix(ns), r.Resource.New)
	if err != nil {
		return nil, 0, err
	}
	return f.keep(objs), rev, nil
}

// Update replaces the spec (and metadata) of an object; for kinds with a
// status subresource the stored status is kept.
func (r *Store) Update(ctx context.Context, ns, name string, obj api.Object) (api.Object, error) {
	if err := r.checkTypeMeta(obj); err != nil {
		return nil, err
	}
	if err := r.CheckIdentity(obj, ns, name); err != nil {
		return nil, err
	}
	wantRV := obj.GetObjectMeta().ResourceVersion
	if wantRV != "" {
		if _, err := strconv.ParseInt(wantRV, 10, 64); err != nil {
			return nil, errdefs.BadRequest("metadata.resourceVersion", "%q is not a resource version", wantRV)
		}
	}
	validation.Default(r.Resource, obj)
	if err := r.schemaDefault(obj, false); err != nil {
		return nil, err
	}
	updated, err := r.Storage.GuaranteedUpdate(ctx, r.Key(ns, name), r.Resource.New, func(cur api.Object) (api.Object, error) {
		r.defaultStored(cur)
		curMeta := cur.GetObjectMeta()
		if wantRV != "" && wantRV != curMeta.ResourceVersion {
			return nil, fmt.Errorf("%s %q: resourceVersion %s is stale (now %s): the object has been modified; read it again and retry: %w",
				r.Resource.Kind, name, wantRV, curMeta.ResourceVersion, errdefs.ErrConflict)
		}
		next := CopyObject(r.Resource, obj)
		meta := next.GetObjectMeta()
		meta.UID = curMeta.UID
		meta.CreationTimestamp = curMeta.CreationTimestamp
		meta.DeletionTimestamp = curMeta.DeletionTimestamp
		meta.DeletionGracePeriodSeconds = curMeta.DeletionGracePeriodSeconds
		meta.Generation = curMeta.Generation
		if err := checkNewFinalizers(curMeta, meta); err != nil {
			return nil, err
		}
		if r.Resource.HasStatus {
			setStatus(next, statusOf(cur))
		}
		if err := r.hooks().prepareForUpdate(r, cur, next); err != nil {
			return nil, err
		}
		if !sameSpec(next, cur) {
			meta.Generation++
		}
		r.track(ctx, "", cur, next)
		if err := r.validateSchema(validateUpdate(r.Resource, next, cur), next, cur); err != nil {
			return nil, err
		}
		if err := checkImmutable(cur, next); err != nil {
			return nil, err
		}
		if err := r.admit(ctx, cur, next); err != nil {
			return nil, err
		}
		return next, nil
	})
	if err != nil {
		return nil, r.notFound(err, ns, name)
	}
	return r.finalized(ctx, ns, name, updated)
}

// UpdateStatus replaces only the status of an object.
func (r *Store) UpdateStatus(ctx context.Context, ns, name string, obj api.Object) (api.Object, error) {
	if err := r.CheckIdentity(obj, ns, name); err != nil {
		return nil, err
	}
	wantRV := obj.GetObjectMeta().ResourceVersion
	updated, err := r.Storage.GuaranteedUpdate(ctx, r.Key(ns, name), r.Resource.New, func(cur api.Object) (api.Object, error) {
		if wantRV != "" && wantRV != cur.GetObjectMeta().ResourceVersion {
			return nil, fmt.Errorf("%s %q: resourceVersion %s is stale (now %s): %w",
				r.Resource.Kind, name, wantRV, cur.GetObjectMeta().ResourceVersion, errdefs.ErrConflict)
		}
		old := CopyObject(r.Resource, cur)
		setStatus(cur, statusOf(obj))
		// As Kubernetes' pod status strategy: a writer that does not know
		// the pod's QoS class (set at create, immutable) keeps it.
		if p, ok := cur.(*api.Pod); ok && p.Status.QOSClass == "" {
			p.Status.QOSClass = old.(*api.Pod).Status.QOSClass
		}
		if err := r.schemaDefault(cur, true); err != nil {
			return nil, err
		}
		if err := r.validateSchema(validateStatus(r.Resource, cur, old), cur, old); err != nil {
			return nil, err
		}
		r.track(ctx, "status", old, cur)
		return cur, nil
	})
	if err != nil {
		return nil, r.notFound(err, ns, name)
	}
	return updated, nil
}

// Mutate applies fn to the stored object under compare-and-swap.
func (r *Store) Mutate(ctx context.Context, ns, name string, fn storage.UpdateFunc) (api.Object, error) {
	obj, err := r.Storage.GuaranteedUpdate(ctx, r.Key(ns, name), r.Resource.New, fn)
	if err != nil {
		return nil, r.notFound(err, ns, name)
	}
	return obj, nil
}

// MutateFrom is mutate starting from an object the caller believes
// current, saving the read: the write is conditional on its version, and a
// conflict falls back to reading the stored object.
func (r *Store) MutateFrom(ctx context.Context, cur api.Object, fn storage.UpdateFunc) (api.Object, error) {
	meta := cur.GetObjectMeta()
	next, err := fn(CopyObject(r.Resource, cur))
	if err != nil {
		return nil, err
	}
	next.GetObjectMeta().ResourceVersion = meta.ResourceVersion
	err = r.Storage.Update(ctx, r.Key(meta.Namespace, meta.Name), next)
	if errdefs.IsConflict(err) {
		return r.Mutate(ctx, meta.Namespace, meta.Name, fn)
	}
	if err != nil {
		return nil, r.notFound(err, meta.Namespace, meta.Name)
	}
	return next, nil
}

// DeleteOptions are the parts of Kubernetes' DeleteOptions minik8s honours.
type DeleteOptions struct {
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	// DryRun: kubectl delete --dry-run=server says it here.
	DryRun []string `json:"dryRun,omitempty"`
	// PropagationPolicy: what becomes of the object's dependents.
	PropagationPolicy string `json:"propagationPolicy,omitempty"`
	Preconditions     *struct {
		UID             string `json:"uid,omitempty"`
		ResourceVersion string `json:"resourceVersion,omitempty"`
	} `json:"preconditions,omitempty"`
}

// Delete removes an object, after its kind's own deletion
// (strategy.beginDelete: a bound pod is deleted gracefully, a namespace
// emptied first), which may answer instead.
func (r *Store) Delete(ctx context.Context, ns, name string, opts DeleteOptions) (api.Object, error) {
	var rv, uid string
	if p := opts.Preconditions; p != nil {
		rv, uid = p.ResourceVersion, p.UID
	}
	if out, done, err := r.hooks().beginDelete(ctx, r, ns, name, opts, rv, uid); err != nil || done {
		return out, err
	}
	// The object goes at the version whose finalizers were judged: one
	// added since (a conflict) is judged again, unless the caller asked
	// for a version, whose conflict is its own.
	for attempt := 1; ; attempt++ {
		marked, kept, seen, err := r.markDeleting(ctx, ns, name, opts, rv, uid)
		if err != nil || kept {
			return marked, err
		}
		out, err := r.remove(ctx, ns, name, seen)
		if errdefs.IsConflict(err) && rv == "" && attempt < deleteAttempts {
			continue
		}
		return out, err
	}
}

// deleteAttempts bounds the re-reads of an object that keeps changing
// while it is deleted.
const deleteAttempts = 5

// remove deletes the object from the store (at version rv, if given) and
// frees what was allocated for it.
func (r *Store) remove(ctx context.Context, ns, name, rv string) (api.Object, error) {
	out := r.Resource.New()
	if err := r.Storage.Delete(ctx, r.Key(ns, name), out, rv); err != nil {
		return nil, r.notFound(err, ns, name)
	}
	r.hooks().afterDelete(ctx, r, out)
	return out, nil
}

// CopyObject deep-copies an object through JSON (objects are small).
func CopyObject(res api.Resource, obj api.Object) api.Object {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", obj, err))
	}
	out := res.New()
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("unmarshal %T: %v", obj, err))
	}
	out.GetObjectMeta().ResourceVersion = obj.GetObjectMeta().ResourceVersion
	return out
}

// statusOf is the Status field of an object, invalid for kinds without one.
func statusOf(obj api.Object) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName("Status")
}

func setStatus(obj api.Object, status reflect.Value) {
	if f := statusOf(obj); f.IsValid() && status.IsValid() {
		f.Set(status)
	}
}

// sameSpec compares everything but metadata and status.
func sameSpec(a, b api.Object) bool {
	return bytes.Equal(specBytes(a), specBytes(b))
}

func specBytes(obj api.Object) []byte {
	data, _ := json.Marshal(obj)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(data, &m)
	delete(m, "metadata")
	delete(m, "status")
	delete(m, "apiVersion")
	delete(m, "kind")
	out, _ := json.Marshal(m)
	return out
}

// ListAt lists namespace ns as it was at revision rev.
func (r *Store) ListAt(ctx context.Context, ns string, f Filter, rev int64) ([]api.Object, int64, error) {
	at, ok := r.Storage.(storage.RevisionLister)
	if !ok {
		return nil, 0, fmt.Errorf("lists at a resourceVersion (resourceVersionMatch=Exact) are not served by this store: %w", errdefs.ErrBadRequest)
	}
	objs, err := at.ListAt(ctx, r.Prefix(ns), rev, r.Resource.New)
	if err != nil {
		return nil, 0, err
	}
	return f.keep(objs), rev, nil
}

// DryRun is the registry with every write checked and not made: its store
// and its allocators' stores are dry runs.
func (r *Store) DryRun() *Store {
	c := *r
	c.Storage = storage.DryRun{Interface: r.Storage}
	if r.IPs != nil {
		c.IPs = r.IPs.DryRun()
	}
	if r.NodePorts != nil {
		c.NodePorts = r.NodePorts.DryRun()
	}
	if r.PodCIDRs != nil {
		c.PodCIDRs = r.PodCIDRs.DryRun()
	}
	return &c
}
