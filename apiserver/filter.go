package apiserver

import (
	"encoding/json"
	"strings"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
)

// filter selects objects by labelSelector and fieldSelector.
type filter struct {
	labels labels.Selector
	fields []fieldRequirement
}

type fieldRequirement struct {
	path   []string
	value  string
	negate bool
}

func parseFilter(labelSelector, fieldSelector string) (filter, error) {
	var f filter
	sel, err := labels.Parse(labelSelector)
	if err != nil {
		return f, errdefs.BadRequest("labelSelector", "%v", err)
	}
	f.labels = sel
	for _, clause := range strings.Split(fieldSelector, ",") {
		clause = strings.TrimSpace(clause)
		if clause == "" {
			continue
		}
		req := fieldRequirement{}
		var key string
		switch {
		case strings.Contains(clause, "!="):
			key, req.value, _ = strings.Cut(clause, "!=")
			req.negate = true
		case strings.Contains(clause, "=="):
			key, req.value, _ = strings.Cut(clause, "==")
		case strings.Contains(clause, "="):
			key, req.value, _ = strings.Cut(clause, "=")
		default:
			return f, errdefs.BadRequest("fieldSelector", "%q is not field=value or field!=value", clause)
		}
		key = strings.TrimSpace(key)
		if key == "" {
			return f, errdefs.BadRequest("fieldSelector", "%q has no field", clause)
		}
		req.path = strings.Split(key, ".")
		req.value = strings.TrimSpace(req.value)
		f.fields = append(f.fields, req)
	}
	return f, nil
}

func (f filter) empty() bool { return f.labels.Empty() && len(f.fields) == 0 }

func (f filter) matches(obj api.Object) bool {
	if !f.labels.Matches(obj.GetObjectMeta().Labels) {
		return false
	}
	var doc map[string]any
	for _, r := range f.fields {
		v, ok := knownField(obj, r.path)
		if !ok {
			if doc == nil {
				data, _ := json.Marshal(obj)
				_ = json.Unmarshal(data, &doc)
			}
			v = fieldValue(doc, r.path)
		}
		if (v == r.value) == r.negate {
			return false
		}
	}
	return true
}

// knownField reads the fields that watches select on most (a kubelet's
// pods, a runner's unfinished instances) without encoding the object:
// every event of a watch is matched.
func knownField(obj api.Object, path []string) (string, bool) {
	if len(path) != 2 {
		return "", false
	}
	switch path[0] + "." + path[1] {
	case "metadata.name":
		return obj.GetObjectMeta().Name, true
	case "metadata.namespace":
		return obj.GetObjectMeta().Namespace, true
	}
	switch o := obj.(type) {
	case *api.Pod:
		switch path[0] + "." + path[1] {
		case "spec.nodeName":
			return o.Spec.NodeName, true
		case "status.phase":
			return o.Status.Phase, true
		}
	case *api.FuncInstance:
		switch path[0] + "." + path[1] {
		case "spec.function":
			return o.Spec.Function, true
		case "spec.user":
			return o.Spec.User, true
		case "status.phase":
			return o.Status.Phase, true
		case "status.runner":
			return o.Status.Runner, true
		}
	}
	return "", false
}

// fieldValue reads a dotted path of a JSON document as a string; a missing
// field reads as "".
func fieldValue(doc map[string]any, path []string) string {
	var cur any = doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	switch v := cur.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}
