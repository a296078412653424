package customresource

import (
	"context"
	"encoding/json"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/registry/rest"

	"minik8s/pkg/api"
)

// Columns makes a version's Table (kubectl get's rows) from its
// additionalPrinterColumns, by Kubernetes' own convertor.
type Columns struct{ convertor rest.TableConvertor }

// NewColumns compiles the columns (NAME and AGE when none are given).
func NewColumns(cols []apiextv1.CustomResourceColumnDefinition) (*Columns, error) {
	c, err := tableconvertor.New(cols)
	if err != nil {
		return nil, err
	}
	return &Columns{convertor: c}, nil
}

// Table is objs as a Table.
func (c *Columns) Table(ctx context.Context, objs []api.Object) (*api.Table, error) {
	list := &unstructured.UnstructuredList{Object: map[string]any{}}
	for _, o := range objs {
		co, ok := o.(*api.CustomObject)
		if !ok {
			continue
		}
		m, err := co.Object()
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, unstructured.Unstructured{Object: m})
	}
	t, err := c.convertor.ConvertToTable(ctx, list, nil)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var out api.Table
	return &out, json.Unmarshal(raw, &out)
}
