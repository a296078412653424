package function

import (
	"encoding/base64"
	"maps"
	"unicode/utf8"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// The minik8s.io/v1 view of a Func (what kubectl and client-go read and
// write) differs from the reference form stored and served on the reference
// routes in three ways: apiVersion minik8s.io/v1, the mode in spec.mode
// instead of apiVersion v1|v2, and the source (function, preRun, files) as
// plain text instead of base64. spec.name, which must equal metadata.name,
// is left out.

// ToView returns a copy of the stored Func f in the minik8s.io/v1 view.
func ToView(f *api.Func) *api.Func {
	v := *f
	v.Spec.Files = maps.Clone(f.Spec.Files)
	v.APIVersion = api.FuncGroupVersion
	v.Spec.Mode = api.FuncModePool
	if f.APIVersion == api.FuncAPIVersionV1 {
		v.Spec.Mode = api.FuncModeFresh
	}
	v.Spec.Name = ""
	v.Spec.Function = decodeText(f.Spec.Function)
	v.Spec.PreRun = decodeText(f.Spec.PreRun)
	for k, b64 := range v.Spec.Files {
		v.Spec.Files[k] = decodeText(b64)
	}
	return &v
}

// RevisionToView returns a copy of the stored revision r in the
// minik8s.io/v1 view: its template's source as text, as a Func's.
func RevisionToView(r *api.FuncRevision) *api.FuncRevision {
	v := *r
	v.APIVersion = api.FuncGroupVersion
	t := ToView(&api.Func{Spec: r.Spec.Template})
	v.Spec.Template = t.Spec
	v.Spec.Template.Mode = ""
	return &v
}

// FromView turns a Func written in the minik8s.io/v1 view into its stored
// form, in place.
func FromView(f *api.Func) error {
	if f.APIVersion != "" && f.APIVersion != api.FuncGroupVersion {
		return errdefs.BadRequest("apiVersion", "%q is not %s, the version of this route (the reference routes /api/funcs take v1 and v2)", f.APIVersion, api.FuncGroupVersion)
	}
	switch f.Spec.Mode {
	case "", api.FuncModePool:
		f.APIVersion = api.FuncAPIVersionV2
	case api.FuncModeFresh:
		f.APIVersion = api.FuncAPIVersionV1
	default:
		return errdefs.Invalid("spec.mode", "%q is not %s (a warm pool of pods) or %s (a fresh pod per call step)", f.Spec.Mode, api.FuncModePool, api.FuncModeFresh)
	}
	f.Spec.Mode = ""
	if f.Spec.Name == "" {
		f.Spec.Name = f.Name
	}
	f.Spec.Function = encodeText(f.Spec.Function)
	f.Spec.PreRun = encodeText(f.Spec.PreRun)
	if f.Spec.Files != nil {
		files := make(map[string]string, len(f.Spec.Files))
		for k, text := range f.Spec.Files {
			files[k] = encodeText(text)
		}
		f.Spec.Files = files
	}
	return nil
}

func encodeText(s string) string {
	if s == "" {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// decodeText is stored base64 as text; what is not valid base64 of UTF-8
// text (never stored: validation refuses the first, sources are text)
// stays as it is rather than be mangled into JSON.
func decodeText(b64 string) string {
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || !utf8.Valid(data) {
		return b64
	}
	return string(data)
}
