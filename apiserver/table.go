package apiserver

import (
	"context"
	"mime"
	"net/http"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/printers"
)

// wantsTable says the client asked for a Table, as kubectl get does.
func wantsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == "application/json" && params["as"] == "Table" && params["g"] == "meta.k8s.io" &&
			(params["v"] == "v1" || params["v"] == "v1beta1") {
			return true
		}
	}
	return false
}

// table is objs as kubectl get shows them, with the columns mkctl prints
// (pkg/printers); withColumns false leaves out the column definitions (a
// watch sends them with its first event only).
func (h *handlers) table(ctx context.Context, objs []api.Object, rv string, withColumns bool) *api.Table {
	if h.columns != nil {
		return h.customTable(ctx, objs, rv, withColumns)
	}
	cols := printers.For(h.reg.Resource.Name)
	t := &api.Table{TypeMeta: api.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ListMeta: api.ListMeta{ResourceVersion: rv},
		Rows: []api.TableRow{}}
	if withColumns {
		for i, name := range append(append([]string{}, cols.Headers...), cols.Wide...) {
			def := api.TableColumnDefinition{Name: name, Type: "string"}
			if i == 0 && name == "NAME" {
				def.Format = "name"
			}
			if i >= len(cols.Headers) {
				def.Priority = 1
			}
			t.ColumnDefinitions = append(t.ColumnDefinitions, def)
		}
	}
	now := time.Now()
	for _, o := range objs {
		cells, wide := cols.Row(h.rowObject(ctx, o), now)
		row := api.TableRow{Object: api.PartialObjectMetadata{TypeMeta: api.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			ObjectMeta: *o.GetObjectMeta()}}
		for _, c := range append(cells, wide...) {
			row.Cells = append(row.Cells, c)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// rowObject is what a row is made of: a function with its pool, as mkctl
// get funcs shows it.
func (h *handlers) rowObject(ctx context.Context, o api.Object) api.Object {
	f, ok := o.(*api.Func)
	if !ok {
		return o
	}
	return printers.PoolRow(f, func(ns, name string) *api.ReplicaSet {
		if rs := h.srv.registries[api.ReplicaSetsResource.Name]; rs != nil {
			if pool, err := rs.Get(ctx, ns, name); err == nil {
				return pool.(*api.ReplicaSet)
			}
		}
		return nil
	})
}

// customTable is a custom resource's Table, its additionalPrinterColumns'.
func (h *handlers) customTable(ctx context.Context, objs []api.Object, rv string, withColumns bool) *api.Table {
	shown := make([]api.Object, len(objs))
	for i, o := range objs {
		shown[i] = h.show(o)
	}
	t, err := h.columns.Table(ctx, shown)
	if err != nil {
		// The columns' paths were compiled; a cell that does not print is empty.
		log.WithError(err).Warn("apiserver: custom resource table")
		t = &api.Table{}
	}
	t.TypeMeta = api.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}
	t.ListMeta = api.ListMeta{ResourceVersion: rv}
	if t.Rows == nil {
		t.Rows = []api.TableRow{}
	}
	if !withColumns {
		t.ColumnDefinitions = nil
	}
	return t
}
