// Package customresource is what serving a CustomResourceDefinition's
// kind takes beyond the generic registry: its schema at work (pruning,
// defaults, validation) and its printer columns, all by
// apiextensions-apiserver's own packages, as Kubernetes serves them.
package customresource

import (
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
)

// Schema is one version's openAPIV3Schema at work: registry.Schema.
type Schema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
}

var _ registry.Schema = (*Schema)(nil)

// NewSchema compiles a version's schema (the CRD was validated: a
// structural schema is there).
func NewSchema(v *apiextv1.CustomResourceValidation) (*Schema, error) {
	if v == nil || v.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("no openAPIV3Schema")
	}
	var in apiextensions.JSONSchemaProps
	if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.OpenAPIV3Schema, &in, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(&in)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(&in)
	if err != nil {
		return nil, err
	}
	return &Schema{structural: s, validator: validator}, nil
}

// Default prunes what the schema does not declare (but where it says
// x-kubernetes-preserve-unknown-fields) and fills its defaults, as
// Kubernetes does to what it decodes.
func (s *Schema) Default(obj api.Object, _ bool) error {
	o, ok := obj.(*api.CustomObject)
	if !ok {
		return fmt.Errorf("%T is not a custom object", obj)
	}
	m, err := o.Object()
	if err != nil {
		return err
	}
	structuralpruning.Prune(m, s.structural, true)
	structuraldefaulting.Default(m, s.structural)
	return o.SetObject(m)
}

// Unknown is the fields of obj the schema does not declare, by their
// paths ("spec.foo"), as Kubernetes' strict field validation of custom
// resources names them: the fields pruning drops.
func (s *Schema) Unknown(obj api.Object) []string {
	o, ok := obj.(*api.CustomObject)
	if !ok {
		return nil
	}
	m, err := o.Object()
	if err != nil {
		return nil
	}
	return structuralpruning.PruneWithOptions(m, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// Validate judges the object by the schema.
func (s *Schema) Validate(obj, old api.Object) field.ErrorList {
	o, ok := obj.(*api.CustomObject)
	if !ok {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("%T is not a custom object", obj))}
	}
	m, err := o.Object()
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	if oo, ok := old.(*api.CustomObject); ok && oo != nil {
		om, err := oo.Object()
		if err == nil {
			return apiservervalidation.ValidateCustomResourceUpdate(nil, m, om, s.validator)
		}
	}
	return apiservervalidation.ValidateCustomResource(nil, m, s.validator)
}
