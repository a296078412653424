// Package upstream runs Kubernetes' own validation over minik8s objects of
// the kinds Kubernetes defines, so that what its apiserver refuses,
// minik8s refuses in the same words.
//
// An object goes the way it goes in Kubernetes' apiserver: to the
// k8s.io/api type of its version (by JSON: the names are the same),
// defaulted, converted to the internal type, and validated by the
// resource's strategy's rules (handwritten and declarative), with the
// options the strategy derives. The strategies themselves (pkg/registry)
// are not imported: they bring the whole generic apiserver and etcd 3.7.
// What the strategies add before validating (a Job's selector) minik8s's
// defaulting has already done.
//
// The function kinds, which Kubernetes does not know, are left to the
// validation package; so are the rules where minik8s is stricter.
package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validate"
	"k8s.io/apimachinery/pkg/api/validate/content"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/capabilities"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/errdefs"
)

// Known says whether Kubernetes defines res's kind, and so whether Create,
// Privileged containers are valid (kube-apiserver --allow-privileged, as
// k3s and kubeadm start it): whether a user may make one is admission's
// question (pods/privileged), not validation's.
func init() { capabilities.Setup(true, 0) }

// Update and UpdateStatus judge it.
func Known(res api.Resource) bool {
	_, ok := kinds[res.Kind]
	return ok && res.Group == kinds[res.Kind].gvk.Group
}

// Create returns what Kubernetes refuses in obj, a new object of res
// (defaulted as minik8s defaults it, before the server fills what it
// allocates). ok is false when obj cannot even be read as Kubernetes'
// type (a quantity that does not parse): errs then says why.
func Create(res api.Resource, obj api.Object) (errs field.ErrorList, ok bool) {
	k, known := lookup(res)
	if !known {
		return nil, true
	}
	v, in, errs := convert(k, obj)
	if errs != nil {
		return errs, false
	}
	errs = k.create(in)
	if len(errs) == 0 {
		// As the generic registry does after the strategy's rules, so that
		// these come only when those said nothing more precise.
		m, _ := meta.Accessor(in)
		errs = genericvalidation.ValidateObjectMetaAccessor(m, res.Namespaced, pathSegment, field.NewPath("metadata"))
	}
	return declarative(k, v, nil, errs, ""), true
}

// Update returns what Kubernetes refuses in obj replacing old (a PUT or a
// PATCH of the object, its status kept as old has it); ok as for Create.
func Update(res api.Resource, obj, old api.Object) (errs field.ErrorList, ok bool) {
	return update(res, obj, old, false)
}

// UpdateStatus returns what Kubernetes refuses in obj's status replacing
// old's (a write of the status subresource); ok as for Create.
func UpdateStatus(res api.Resource, obj, old api.Object) (errs field.ErrorList, ok bool) {
	return update(res, obj, old, true)
}

func update(res api.Resource, obj, old api.Object, status bool) (field.ErrorList, bool) {
	k, known := lookup(res)
	if !known || status && k.status == nil {
		return nil, true
	}
	v, in, errs := convert(k, obj)
	if errs != nil {
		return errs, false
	}
	ov, oldIn, errs := convert(k, old)
	if errs != nil {
		return nil, true // what is stored was judged when it was written
	}
	m, _ := meta.Accessor(in)
	om, _ := meta.Accessor(oldIn)
	if m.GetResourceVersion() == "" {
		// An update without a version is made at the stored one, as
		// Kubernetes' registry sets it before validating.
		m.SetResourceVersion(om.GetResourceVersion())
	}
	errs = genericvalidation.ValidateObjectMetaAccessor(m, res.Namespaced, pathSegment, field.NewPath("metadata"))
	errs = append(errs, genericvalidation.ValidateObjectMetaAccessorUpdate(m, om, field.NewPath("metadata"))...)
	subresource := ""
	if status {
		errs = append(errs, k.status(in, oldIn)...)
		subresource = "status"
	} else {
		errs = append(errs, k.update(in, oldIn)...)
	}
	return declarative(k, v, ov, errs, subresource), true
}

func lookup(res api.Resource) (kind, bool) {
	k, ok := kinds[res.Kind]
	return k, ok && k.gvk.Group == res.Group
}

func pathSegment(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

// convert makes the versioned (defaulted) and internal forms of obj.
func convert(k kind, obj api.Object) (runtime.Object, runtime.Object, field.ErrorList) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, field.ErrorList{field.InternalError(nil, err)}
	}
	v, err := legacyscheme.Scheme.New(k.gvk)
	if err != nil {
		return nil, nil, field.ErrorList{field.InternalError(nil, err)}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		// Only a value the validation package refuses on its own (a
		// quantity that does not parse) gets here.
		return nil, nil, field.ErrorList{field.Invalid(nil, string(raw), fmt.Sprintf("%s cannot be read as Kubernetes' %s: %v", k.gvk.Kind, k.gvk.GroupVersion(), err))}
	}
	if k.adapt != nil {
		k.adapt(v)
	}
	legacyscheme.Scheme.Default(v)
	in, err := legacyscheme.Scheme.New(k.gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
	if err != nil {
		return nil, nil, field.ErrorList{field.InternalError(nil, err)}
	}
	if err := legacyscheme.Scheme.Convert(v, in, nil); err != nil {
		return nil, nil, field.ErrorList{field.InternalError(nil, err)}
	}
	return v, in, nil
}

// declarative runs the rules Kubernetes declares on the versioned types and
// merges them with the handwritten ones as its registry does
// (rest.ValidateDeclarativelyWithMigrationChecks): the enforced
// declarative errors replace the handwritten ones they cover.
func declarative(k kind, v, old runtime.Object, errs field.ErrorList, subresource string) field.ErrorList {
	ctx := context.Background()
	var opts map[string]bool
	if k.options != nil {
		opts = k.options(v, old)
	}
	var subs []string
	if subresource != "" {
		subs = []string{subresource}
	}
	var dv field.ErrorList
	if old == nil {
		dv = legacyscheme.Scheme.Validate(ctx, opts, v, subs...)
	} else {
		dv = legacyscheme.Scheme.ValidateUpdate(ctx, opts, v, old, subs...)
	}
	beta := utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta)
	enforced := validate.FilterEnforcedDeclarativeErrors(ctx, dv, beta)
	errs = validate.FilterCoveredHandwrittenErrors(ctx, errs.MarkFromImperative(), enforced, beta)
	return append(errs, enforced...)
}

// GroupKind is the kind's name as Kubernetes' messages qualify it
// ("Deployment.apps").
func GroupKind(res api.Resource) schema.GroupKind {
	return schema.GroupKind{Group: res.Group, Kind: res.Kind}
}

// Meta returns what Kubernetes' generic registry refuses in the metadata
// of obj, an object of a kind Kubernetes does not define (a function
// kind), its name judged by the kind's rule: labels, annotations,
// finalizers and owner references as on any Kubernetes object.
func Meta(res api.Resource, obj api.Object) field.ErrorList {
	m := obj.GetObjectMeta()
	om := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations,
		Finalizers: m.Finalizers, ResourceVersion: m.ResourceVersion, Generation: m.Generation, UID: types.UID(m.UID)}
	if g := m.DeletionGracePeriodSeconds; g != nil {
		om.DeletionGracePeriodSeconds = g
	}
	for _, r := range m.OwnerReferences {
		om.OwnerReferences = append(om.OwnerReferences, metav1.OwnerReference{APIVersion: r.APIVersion, Kind: r.Kind,
			Name: r.Name, UID: types.UID(r.UID), Controller: r.Controller, BlockOwnerDeletion: r.BlockOwnerDeletion})
	}
	return genericvalidation.ValidateObjectMeta(&om, res.Namespaced, validation.NameFunc(res), field.NewPath("metadata"))
}

// Invalid is the 422 Kubernetes answers for errs in the object name of
// res's kind: its message and every cause (nil without errors).
func Invalid(res api.Resource, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	st := apierrors.NewInvalid(GroupKind(res), name, errs).ErrStatus
	out := &errdefs.InvalidObject{Group: res.Group, Kind: res.Kind, Name: name, Message: st.Message}
	for _, c := range st.Details.Causes {
		out.Causes = append(out.Causes, errdefs.Cause{Type: string(c.Type), Field: c.Field, Message: c.Message})
	}
	return out
}

// Binding returns what Kubernetes refuses in a pod's binding to a node
// (the pods/binding subresource): a target other than a node, or a name
// no node may have.
func Binding(b *api.Binding) field.ErrorList {
	raw, err := json.Marshal(b)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var v corev1.Binding
	if err := json.Unmarshal(raw, &v); err != nil {
		return field.ErrorList{field.Invalid(nil, string(raw), err.Error())}
	}
	var in core.Binding
	if err := legacyscheme.Scheme.Convert(&v, &in, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return corevalidation.ValidatePodBinding(&in)
}
