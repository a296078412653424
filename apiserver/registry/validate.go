package registry

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
	"minik8s/pkg/api/validation"
	"minik8s/pkg/api/validation/upstream"
	"minik8s/pkg/errdefs"
)

// A write is judged by Kubernetes' own rules for the kinds Kubernetes
// defines (package upstream), and by minik8s's where it serves less than
// Kubernetes or the kind is its own (package validation); every cause
// comes in one 422, worded as Kubernetes words it.

// ValidateCreate judges obj, a new object of res, defaulted.
func ValidateCreate(res api.Resource, obj api.Object) error {
	errs := validation.Object(res, obj)
	errs = append(errs, validation.Status(obj)...)
	if upstream.Known(res) {
		kube, ok := upstream.Create(res, obj)
		errs = merge(errs, kube, ok)
	} else {
		errs = append(upstream.Meta(res, obj), errs...)
	}
	return upstream.Invalid(res, obj.GetObjectMeta().Name, errs)
}

// validateUpdate judges obj replacing old.
func validateUpdate(res api.Resource, obj, old api.Object) error {
	errs := validation.Object(res, obj)
	if upstream.Known(res) {
		kube, ok := upstream.Update(res, obj, old)
		errs = merge(errs, kube, ok)
	} else {
		errs = append(upstream.Meta(res, obj), errs...)
	}
	return upstream.Invalid(res, obj.GetObjectMeta().Name, errs)
}

// validateStatus judges obj's status replacing old's.
func validateStatus(res api.Resource, obj, old api.Object) error {
	errs := validation.Status(obj)
	if upstream.Known(res) {
		kube, ok := upstream.UpdateStatus(res, obj, old)
		errs = merge(errs, kube, ok)
	}
	return upstream.Invalid(res, obj.GetObjectMeta().Name, errs)
}

// merge puts Kubernetes' causes first; an object Kubernetes could not read
// is refused by minik8s's rules already (a quantity that does not parse),
// which say it better.
func merge(own, kube field.ErrorList, readable bool) field.ErrorList {
	if !readable && len(own) > 0 {
		return own
	}
	return append(kube, own...)
}

// schemaDefault prunes and defaults a custom object by its schema.
func (r *Store) schemaDefault(obj api.Object, status bool) error {
	if r.Schema == nil {
		return nil
	}
	return r.Schema.Default(obj, status)
}

// validateSchema adds what the custom resource's schema refuses in obj to
// err, the 422 of the other rules (or nil), as one 422.
func (r *Store) validateSchema(err error, obj, old api.Object) error {
	if r.Schema == nil {
		return err
	}
	errs := r.Schema.Validate(obj, old)
	if len(errs) == 0 {
		return err
	}
	var inv *errdefs.InvalidObject
	if err != nil && !errors.As(err, &inv) {
		return err
	}
	if inv != nil {
		for _, c := range inv.Causes {
			errs = append(errs, &field.Error{Type: field.ErrorType(c.Type), Field: c.Field, Detail: c.Message, BadValue: field.OmitValueType{}})
		}
	}
	return upstream.Invalid(r.Resource, obj.GetObjectMeta().Name, errs)
}
