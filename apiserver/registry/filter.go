package registry

import (
	"encoding/json"
	"strings"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
	"minik8s/pkg/localpath"
)

// Filter selects objects by labelSelector and fieldSelector.
type Filter struct {
	Labels labels.Selector
	Fields []FieldRequirement
}

type FieldRequirement struct {
	Path   []string
	Value  string
	Negate bool
}

// ParseFilter reads a label and a field selector as a list's query
// carries them (filterOf).
func ParseFilter(labelSelector, fieldSelector string) (Filter, error) {
	var o metainternalversion.ListOptions
	var err error
	if o.LabelSelector, err = k8slabels.Parse(labelSelector); err != nil {
		return Filter{}, errdefs.BadRequest("labelSelector", "%v", err)
	}
	if o.FieldSelector, err = fields.ParseSelector(fieldSelector); err != nil {
		return Filter{}, errdefs.BadRequest("fieldSelector", "%v", err)
	}
	return FilterOf(&o)
}

// FilterOf is the filter of a list's or a watch's options, whose
// selectors apimachinery parsed (decodeQuery).
func FilterOf(o *metainternalversion.ListOptions) (Filter, error) {
	var f Filter
	if o == nil {
		return f, nil
	}
	if o.LabelSelector != nil {
		reqs, selectable := o.LabelSelector.Requirements()
		if !selectable {
			return f, errdefs.BadRequest("labelSelector", "%q selects nothing", o.LabelSelector.String())
		}
		f.Labels = labels.Selector(reqs)
	}
	if o.FieldSelector != nil {
		for _, r := range o.FieldSelector.Requirements() {
			f.Fields = append(f.Fields, FieldRequirement{Path: strings.Split(r.Field, "."), Value: r.Value,
				Negate: r.Operator == selection.NotEquals})
		}
	}
	return f, nil
}

func (f Filter) Empty() bool { return f.Labels.Empty() && len(f.Fields) == 0 }

// keep filters objs in place: the objects the filter matches.
func (f Filter) keep(objs []api.Object) []api.Object {
	out := objs[:0]
	for _, o := range objs {
		if f.Matches(o) {
			out = append(out, o)
		}
	}
	return out
}

func (f Filter) Matches(obj api.Object) bool {
	if !f.Labels.Matches(obj.GetObjectMeta().Labels) {
		return false
	}
	var doc map[string]any
	for _, r := range f.Fields {
		v, ok := knownField(obj, r.Path)
		if !ok {
			if doc == nil {
				data, _ := json.Marshal(obj)
				_ = json.Unmarshal(data, &doc)
			}
			v = fieldValue(doc, r.Path)
		}
		if (v == r.Value) == r.Negate {
			return false
		}
	}
	return true
}

// knownField reads the fields that watches select on most (a kubelet's
// pods, a runner's unfinished instances) without encoding the object:
// every event of a watch is matched.
func knownField(obj api.Object, path []string) (string, bool) {
	if pv, ok := obj.(*api.PersistentVolume); ok && strings.Join(path, ".") == api.FieldVolumeNode {
		return localpath.NodeOf(pv), true
	}
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
