package apiserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Field validation (?fieldValidation=), as Kubernetes answers it: a field
// Kubernetes' kind does not have, or one given twice, is refused under
// Strict (400: what kubectl sends unless told --validate=warn or false),
// dropped with a Warning header under Warn (the default, as in
// Kubernetes), and dropped silently under Ignore. A field Kubernetes' kind
// has and minik8s's does not (tolerations, say) is another matter:
// dropping it would run something other than the manifest asks, so
// whatever the mode it is refused with 422, named, unless its value is
// empty (`tolerations: []`, as charts render an unset value), which
// dropping does not change.

const (
	validationStrict = "Strict"
	validationWarn   = "Warn"
	validationIgnore = "Ignore"
)

// fieldValidationOf is the request's mode (its options were validated:
// one of the three, or none).
func fieldValidationOf(c *gin.Context) string {
	_, v := requestOf(c).query.write()
	if v == "" {
		return validationWarn
	}
	return v
}

// decodeFields decodes data (JSON) into out, a pointer to an object of
// kind gvk, as mode says; under Warn it returns the warnings to send.
// Duplicate fields are found only beside an unknown one: a body without
// any is read as encoding/json reads it, the last of a duplicate winning.
func decodeFields(data []byte, out any, gvk schema.GroupVersionKind, mode string) ([]string, error) {
	// Bodies are read once, as before, unless they hold a field out has
	// not: only then is every such field found (and duplicates with them).
	err := strictJSON(data, out)
	if err == nil || !strings.HasPrefix(err.Error(), "json: unknown field ") {
		return nil, jsonError(err)
	}
	v := reflect.ValueOf(out).Elem()
	v.Set(reflect.Zero(v.Type()))
	strict, err := sigsjson.UnmarshalStrict(data, out)
	if err != nil {
		return nil, jsonError(err)
	}
	// What Kubernetes' own type says of the same body.
	var kubernetes map[string]bool
	if obj, err := scheme.Scheme.New(gvk); err == nil {
		kubernetes = map[string]bool{}
		errs, _ := sigsjson.UnmarshalStrict(data, obj)
		for _, e := range errs {
			kubernetes[e.Error()] = true
		}
	}
	var doc any
	_ = json.Unmarshal(data, &doc)
	var msgs []string
	for _, e := range strict {
		msg := e.Error()
		field := strictField(msg)
		if kubernetes != nil && !kubernetes[msg] {
			if empty(valueAt(doc, field)) {
				continue
			}
			return nil, errdefs.Invalid(field, "minik8s does not serve this field of Kubernetes' %s (the README lists what it does not do): it would be ignored, so it is refused", gvk.Kind)
		}
		msgs = append(msgs, msg)
	}
	switch {
	case len(msgs) == 0 || mode == validationIgnore:
		return nil, nil
	case mode == validationStrict:
		return nil, errdefs.BadRequest(strictField(msgs[0]), "strict decoding error: %s", strings.Join(msgs, ", "))
	}
	return msgs, nil
}

// customFields is field validation of a custom resource's object, as
// Kubernetes does it: the fields its schema does not declare (those
// pruning drops) are refused under Strict, warned of under Warn. A kind
// without a schema (a built-in one) has none.
func (h *handlers) customFields(obj any, mode string) ([]string, error) {
	o, ok := obj.(api.Object)
	if !ok || h.reg == nil || h.reg.Schema == nil || mode == validationIgnore {
		return nil, nil
	}
	unknown := h.reg.Schema.Unknown(o)
	var msgs []string
	for _, f := range unknown {
		msgs = append(msgs, fmt.Sprintf("unknown field %q", f))
	}
	if len(msgs) > 0 && mode == validationStrict {
		return nil, errdefs.BadRequest(unknown[0], "strict decoding error: %s", strings.Join(msgs, ", "))
	}
	return msgs, nil
}

// strictField is the field a strict decoding error names (`unknown field
// "spec.foo"`).
func strictField(msg string) string {
	if i := strings.IndexByte(msg, '"'); i >= 0 {
		if s, err := strconv.Unquote(msg[i:]); err == nil {
			return s
		}
	}
	return ""
}

// warn sends warnings as Kubernetes does: kubectl prints each
// ("Warning: unknown field ...").
// A patch retried on a conflict warns once.
func warn(c *gin.Context, warnings []string) {
	h := c.Writer.Header()
	for _, w := range warnings {
		v := fmt.Sprintf("299 - %s", strconv.Quote(w))
		if !slices.Contains(h.Values("Warning"), v) {
			h.Add("Warning", v)
		}
	}
}

// valueAt is the value at path ("spec.containers[0].foo") in doc.
func valueAt(doc any, path string) any {
	for _, seg := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(seg, "[")
		m, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		doc = m[name]
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			rest = strings.TrimPrefix(after, "[")
			l, ok := doc.([]any)
			i, err := strconv.Atoi(idx)
			if !ok || err != nil || i < 0 || i >= len(l) {
				return nil
			}
			doc = l[i]
		}
	}
	return doc
}

// empty says whether v is JSON's null, an empty list, object or string,
// zero or false.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	case string:
		return x == ""
	case float64:
		return x == 0
	case bool:
		return !x
	}
	return false
}
