package validation

import (
	"encoding/base64"
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"strings"

	imageref "github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/api/resource"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
	"minik8s/pkg/egress"
)

// Func validates a function template's spec (its name is judged with its
// metadata, by NameFunc).
func Func(f *api.Func) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	switch f.APIVersion {
	case api.FuncAPIVersionV1, api.FuncAPIVersionV2:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), f.APIVersion,
			[]string{api.FuncAPIVersionV1 + " (a fresh pod per call)", api.FuncAPIVersionV2 + " (a warm pool)"}))
	}
	if f.Spec.Name != f.Name {
		errs = append(errs, field.Invalid(spec.Child("name"), f.Spec.Name, fmt.Sprintf("must equal metadata.name %q", f.Name)))
	}
	if f.Spec.Mode != "" {
		errs = append(errs, field.Forbidden(spec.Child("mode"), fmt.Sprintf("is written in the %s view (/apis/%s); here apiVersion v1 or v2 selects the mode", api.FuncGroupVersion, api.FuncGroupVersion)))
	}
	errs = append(errs, funcCode(spec, &f.Spec)...)
	errs = append(errs, funcPlugins(spec, &f.Spec)...)
	for _, b := range []struct{ field, name string }{{"left", f.Spec.Left}, {"right", f.Spec.Right}} {
		if b.name != "" && b.name != api.FuncReturn {
			errs = append(errs, funcNameErrs(spec.Child(b.field), b.name)...)
		}
	}
	if a := f.Spec.ServiceAddress; a != "" {
		if ip := net.ParseIP(a); ip == nil || ip.To4() == nil {
			errs = append(errs, field.Invalid(spec.Child("serviceAddress"), a, "must be an IPv4 address"))
		}
	}
	errs = append(errs, funcTraffic(spec.Child("traffic"), f)...)
	return append(errs, funcInstances(spec, &f.Spec)...)
}

// MaxTrafficTargets bounds a function's traffic split.
const MaxTrafficTargets = 16

// funcTraffic checks a traffic split: each target names one revision (a
// number, or latest), none twice, with a share of 0-100, and the shares
// add up to 100. Whether the numbered revisions exist is the apiserver's
// to check (it sees them).
func funcTraffic(path *field.Path, f *api.Func) field.ErrorList {
	ts := f.Spec.Traffic
	if len(ts) == 0 {
		return nil
	}
	if f.APIVersion == api.FuncAPIVersionV1 {
		return field.ErrorList{field.Forbidden(path, "a function of fresh pods (apiVersion v1) serves its latest revision only")}
	}
	if len(ts) > MaxTrafficTargets {
		return field.ErrorList{field.TooMany(path, len(ts), MaxTrafficTargets)}
	}
	var errs field.ErrorList
	seen := map[int64]bool{}
	latest, sum := false, 0
	for i, t := range ts {
		p := path.Index(i)
		switch {
		case t.Latest && t.Revision != 0:
			errs = append(errs, field.Invalid(p, t.Revision, "must have either revision or latest: true, not both"))
		case t.Latest && latest:
			errs = append(errs, field.Duplicate(p.Child("latest"), true))
		case t.Latest:
			latest = true
		case t.Revision < 1:
			errs = append(errs, field.Required(p.Child("revision"), "a revision number (from 1), or latest: true"))
		case seen[t.Revision]:
			errs = append(errs, field.Duplicate(p.Child("revision"), t.Revision))
		default:
			seen[t.Revision] = true
		}
		if t.Percent < 0 || t.Percent > 100 {
			errs = append(errs, field.Invalid(p.Child("percent"), t.Percent, utilvalidation.InclusiveRangeError(0, 100)))
		}
		sum += t.Percent
	}
	if len(errs) == 0 && sum != 100 {
		errs = append(errs, field.Invalid(path, sum, "the percents must add up to 100"))
	}
	return errs
}

// funcInstances: the instance counts and the limits of a call.
func funcInstances(spec *field.Path, s *api.FuncSpec) field.ErrorList {
	var errs field.ErrorList
	counts := []struct {
		field string
		v     *int
	}{{"initInstanceNum", s.InitInstanceNum}, {"maxInstanceNum", s.MaxInstanceNum}, {"minInstanceNum", s.MinInstanceNum}}
	for _, n := range counts {
		// Kubernetes counts replicas in an int32; so do the ReplicaSets a
		// function's instances become.
		if n.v != nil && (*n.v < 0 || *n.v > math.MaxInt32) {
			errs = append(errs, field.Invalid(spec.Child(n.field), *n.v, utilvalidation.InclusiveRangeError(0, math.MaxInt32)))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	lo, initial, hi := FuncBounds(s)
	switch {
	case hi < 1:
		errs = append(errs, field.Invalid(spec.Child("maxInstanceNum"), hi, "must be at least 1"))
	case lo > hi:
		errs = append(errs, field.Invalid(spec.Child("minInstanceNum"), lo, fmt.Sprintf("must not be more than maxInstanceNum %d", hi)))
	case initial < lo || initial > hi:
		errs = append(errs, field.Invalid(spec.Child("initInstanceNum"), initial, fmt.Sprintf("must be between minInstanceNum %d and maxInstanceNum %d", lo, hi)))
	}
	if t := s.TimeoutSeconds; t != nil && (*t < 1 || *t > 3600) {
		errs = append(errs, field.Invalid(spec.Child("timeoutSeconds"), *t, utilvalidation.InclusiveRangeError(1, 3600)))
	}
	if c := s.ContainerConcurrency; c != nil && (*c < 1 || *c > api.MaxContainerConcurrency) {
		errs = append(errs, field.Invalid(spec.Child("containerConcurrency"), *c, utilvalidation.InclusiveRangeError(1, api.MaxContainerConcurrency)))
	}
	if t := s.IdleTimeoutSeconds; t != nil && (*t < 1 || *t > MaxIdleTimeoutSeconds) {
		errs = append(errs, field.Invalid(spec.Child("idleTimeoutSeconds"), *t, utilvalidation.InclusiveRangeError(1, MaxIdleTimeoutSeconds)))
	}
	errs = append(errs, configKeys(spec.Child("config"), s.Config)...)
	errs = append(errs, funcOutputs(spec.Child("outputs"), s.Outputs)...)
	return append(errs, funcResources(spec.Child("resources"), s.Resources)...)
}

// MaxFuncOutputs bounds a function's outputs.
const MaxFuncOutputs = 16

// funcOutputs checks a function's outputs: unique names, and exactly one
// target each (a function, a NATS subject, or an http(s) URL, whose host
// the runner judges when it sends, as a callback's).
func funcOutputs(path *field.Path, outs []api.FuncOutput) field.ErrorList {
	var errs field.ErrorList
	if len(outs) > MaxFuncOutputs {
		return field.ErrorList{field.TooMany(path, len(outs), MaxFuncOutputs)}
	}
	seen := map[string]bool{}
	for i, o := range outs {
		p := path.Index(i)
		for _, msg := range utilvalidation.IsDNS1123Label(o.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), o.Name, msg))
		}
		if seen[o.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), o.Name))
		}
		seen[o.Name] = true
		n := 0
		if o.Function != "" {
			n++
			errs = append(errs, funcNameErrs(p.Child("function"), o.Function)...)
		}
		if o.Subject != "" {
			n++
			errs = append(errs, natsSubject(p.Child("subject"), o.Subject, literal)...)
		}
		if o.URL != "" {
			n++
			if _, err := egress.ParseURL(o.URL); err != nil {
				errs = append(errs, field.Invalid(p.Child("url"), o.URL, err.Error()))
			}
		}
		if n != 1 {
			errs = append(errs, field.Invalid(p, o.Name, "must have exactly one of function, subject and url"))
		}
	}
	return errs
}

// MaxIdleTimeoutSeconds is the longest idle timeout a function may ask
// for: a week (minInstanceNum keeps pods for ever).
const MaxIdleTimeoutSeconds = 7 * 24 * 3600

// funcResources checks a function's requests and limits: cpu and memory
// only (its pods have one container, and nothing else is counted), each a
// quantity, no request above its limit.
func funcResources(path *field.Path, r *api.ResourceRequirements) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if len(r.Claims) > 0 {
		errs = append(errs, field.Forbidden(path.Child("claims"), "there is no dynamic resource allocation"))
	}
	supported := []string{api.ResourceCPU, api.ResourceMemory}
	for _, l := range []struct {
		name string
		rl   api.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, k := range sortedKeys(l.rl) {
			if !slices.Contains(supported, k) {
				errs = append(errs, field.NotSupported(path.Child(l.name).Key(k), k, supported))
			}
		}
		errs = append(errs, resourceList(path.Child(l.name), l.rl)...)
		for _, k := range sortedKeys(l.rl) {
			// Pods have Kubernetes' validation say this; functions have none.
			if q, err := resource.ParseQuantity(strings.TrimSpace(l.rl[k])); err == nil && q.Sign() < 0 {
				errs = append(errs, field.Invalid(path.Child(l.name).Key(k), l.rl[k], "must be greater than or equal to 0"))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	for _, k := range supported {
		req, hasReq := r.Requests[k]
		lim, hasLim := r.Limits[k]
		if !hasReq || !hasLim {
			continue
		}
		rq, lq := resource.MustParse(strings.TrimSpace(req)), resource.MustParse(strings.TrimSpace(lim))
		if rq.Cmp(lq) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(k), req, fmt.Sprintf("must be less than or equal to %s limit of %s", k, lim)))
		}
	}
	return errs
}

// funcCode checks what a function runs: Python source (spec.function, with
// spec.preRun and spec.runtime around it), or an image of its own
// (spec.image) that serves the runtime's HTTP contract. The Python fields
// mean nothing to an image, so they are refused rather than ignored.
func funcCode(spec *field.Path, s *api.FuncSpec) field.ErrorList {
	var errs field.ErrorList
	if s.Image != "" {
		if s.Function != "" {
			errs = append(errs, field.Forbidden(spec.Child("image"), "give either spec.function (Python source) or spec.image, not both"))
		}
		if s.PreRun != "" {
			errs = append(errs, field.Forbidden(spec.Child("preRun"), "an image function has no preRun: its image sets itself up"))
		}
		if s.Runtime != "" {
			errs = append(errs, field.Forbidden(spec.Child("runtime"), "an image function runs its own image, not a runtime"))
		}
		if _, err := imageref.ParseReference(s.Image); err != nil {
			errs = append(errs, field.Invalid(spec.Child("image"), s.Image, fmt.Sprintf("is not an image reference: %v", err)))
		}
		return errs
	}
	if s.Function == "" {
		return field.ErrorList{field.Required(spec.Child("function"), "the function's Python source (base64) or spec.image")}
	}
	if _, err := base64.StdEncoding.DecodeString(s.Function); err != nil {
		errs = append(errs, field.Invalid(spec.Child("function"), "", fmt.Sprintf("not valid base64: %v", err)))
	}
	if _, err := base64.StdEncoding.DecodeString(s.PreRun); err != nil {
		errs = append(errs, field.Invalid(spec.Child("preRun"), "", fmt.Sprintf("not valid base64: %v", err)))
	}
	return errs
}

// ContainerConcurrency is the most calls one pod of s serves at once: the
// runtime's worker count unless the spec says otherwise.
func ContainerConcurrency(s *api.FuncSpec) int {
	if s.ContainerConcurrency != nil {
		return *s.ContainerConcurrency
	}
	return api.DefaultContainerConcurrency
}

// FuncBounds returns min, init and max instance counts with defaults: min 0,
// max 10 (or init, if larger), init 1 clamped into [min, max].
func FuncBounds(s *api.FuncSpec) (lo, initial, hi int) {
	hi = api.DefaultFuncMaxInstances
	if s.MinInstanceNum != nil {
		lo = *s.MinInstanceNum
	}
	if s.MaxInstanceNum != nil {
		hi = *s.MaxInstanceNum
	} else {
		if s.InitInstanceNum != nil {
			hi = max(hi, *s.InitInstanceNum)
		}
		hi = max(hi, lo)
	}
	if s.InitInstanceNum != nil {
		return lo, *s.InitInstanceNum, hi
	}
	return lo, min(max(1, lo), hi), hi
}

// BuiltinPlugins are the plugins every Python runtime has (seed 000).
var BuiltinPlugins = []string{"tracing", "metrics", "log-context"}

var pluginModule = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// funcPlugins checks a function's plugins and extra files: a plugin is a
// built-in or a module NAME.py of spec.files; the files are base64, named
// as ConfigMap keys, beside function.py and preRun.sh, not over them.
func funcPlugins(spec *field.Path, s *api.FuncSpec) field.ErrorList {
	var errs field.ErrorList
	if len(s.Files) > 0 && s.Image != "" {
		errs = append(errs, field.Forbidden(spec.Child("files"), "an image function brings its files in its image"))
	}
	for _, name := range sortedKeys(s.Files) {
		p := spec.Child("files").Key(name)
		for _, msg := range utilvalidation.IsConfigMapKey(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if name == "function.py" || name == "preRun.sh" {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("%q is spec.function's or spec.preRun's", name)))
		}
		if _, err := base64.StdEncoding.DecodeString(s.Files[name]); err != nil {
			errs = append(errs, field.Invalid(p, "", fmt.Sprintf("not valid base64: %v", err)))
		}
	}
	pl := s.Plugins
	if pl == nil {
		return errs
	}
	if s.Image != "" && len(pl.Pre)+len(pl.Post) > 0 {
		return append(errs, field.Forbidden(spec.Child("plugins"), "plugins run in the Python runtime; an image function runs its own"))
	}
	builtins := strings.Join(BuiltinPlugins, ", ")
	for _, list := range []struct {
		field string
		names []string
	}{{"pre", pl.Pre}, {"post", pl.Post}} {
		seen := map[string]bool{}
		for i, name := range list.names {
			p := spec.Child("plugins", list.field).Index(i)
			switch {
			case seen[name]:
				errs = append(errs, field.Duplicate(p, name))
			case slices.Contains(BuiltinPlugins, name):
			case !pluginModule.MatchString(name):
				errs = append(errs, field.Invalid(p, name, fmt.Sprintf("is neither a built-in plugin (%s) nor a Python module name", builtins)))
			case s.Files[name+".py"] == "":
				errs = append(errs, field.Invalid(p, name, fmt.Sprintf("is not built in (%s) and spec.files has no %s.py", builtins, name)))
			}
			seen[name] = true
		}
	}
	return errs
}

// configKeys checks the keys of an app's or a trigger's config, which a
// function reads as context["config"].
func configKeys(path *field.Path, cfg map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(cfg) {
		for _, msg := range utilvalidation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
	}
	return errs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
