package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// APIExtensionsGroup serves CustomResourceDefinitions.
const APIExtensionsGroup = "apiextensions.k8s.io"

// CustomResourceDefinition (apiextensions.k8s.io/v1) declares a kind the
// apiserver then serves: its spec and status are Kubernetes' own types.
type CustomResourceDefinition struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       apiextv1.CustomResourceDefinitionSpec   `json:"spec"`
	Status     apiextv1.CustomResourceDefinitionStatus `json:"status,omitempty"`
}

// CRDCleanupFinalizer keeps a deleted CustomResourceDefinition until
// every object of its kind is gone, as Kubernetes names it.
const CRDCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// CustomObject is an object of a custom resource: its metadata typed, as
// every object's, and the rest as its JSON has it (the CRD's schema
// prunes and judges it). Status is apart so that a kind with a status
// subresource keeps it as the built-in kinds do.
type CustomObject struct {
	TypeMeta
	ObjectMeta
	Status  any
	Content map[string]any
}

// MarshalJSON writes the object as one JSON object.
func (o *CustomObject) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(o.Content)+4)
	for k, v := range o.Content {
		m[k] = v
	}
	if o.APIVersion != "" {
		m["apiVersion"] = o.APIVersion
	}
	if o.Kind != "" {
		m["kind"] = o.Kind
	}
	m["metadata"] = &o.ObjectMeta
	if o.Status != nil {
		m["status"] = o.Status
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads an object, numbers as Kubernetes reads them (int64
// when integral, else float64).
func (o *CustomObject) UnmarshalJSON(data []byte) error {
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("json: cannot unmarshal %s into an object", bytes.TrimSpace(data))
	}
	*o = CustomObject{}
	var err error
	if o.APIVersion, err = stringField(m, "apiVersion"); err != nil {
		return err
	}
	if o.Kind, err = stringField(m, "kind"); err != nil {
		return err
	}
	if md, ok := m["metadata"]; ok && md != nil {
		raw, err := json.Marshal(md)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &o.ObjectMeta); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
	}
	o.Status = m["status"]
	delete(m, "apiVersion")
	delete(m, "kind")
	delete(m, "metadata")
	delete(m, "status")
	o.Content = m
	return nil
}

func stringField(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", &json.UnmarshalTypeError{Value: fmt.Sprintf("%T", v), Type: typeOfString, Field: key}
	}
	return s, nil
}

// Object is the whole object as a map, as the schema's pruning,
// defaulting and validation read it.
func (o *CustomObject) Object() (map[string]any, error) {
	data, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, utiljson.Unmarshal(data, &m)
}

// SetObject replaces the object with m (the metadata as m has it).
func (o *CustomObject) SetObject(m map[string]any) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return o.UnmarshalJSON(data)
}

var typeOfString = reflect.TypeOf("")
