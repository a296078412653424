package apiserver

import (
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/errdefs"
)

// The options a request's query carries are decoded and validated as
// Kubernetes decodes them: apimachinery's parameter codec into metav1's
// ListOptions, GetOptions, CreateOptions, UpdateOptions, PatchOptions and
// DeleteOptions (core/v1's for a pod's log, exec and port-forward), and
// apimachinery's validation of them. A value that does not decode is 400
// naming the parameter; options that decode but do not hold together are
// 422, in Kubernetes' words. Parameters no route reads are ignored, as
// Kubernetes ignores them.

// queryKind is which options a request's query carries.
type queryKind int

const (
	queryNone queryKind = iota
	queryList
	queryGet
	queryCreate
	queryUpdate
	queryPatch
	queryDelete
	queryPodLog
	queryPodExec
	queryPodPortForward
)

// queryOptions are the decoded options of a request; the one its kind
// names is set.
type queryOptions struct {
	list        *metainternalversion.ListOptions
	get         *metav1.GetOptions
	create      *metav1.CreateOptions
	update      *metav1.UpdateOptions
	patch       *metav1.PatchOptions
	delete      *metav1.DeleteOptions
	log         *corev1.PodLogOptions
	exec        *corev1.PodExecOptions
	portForward *corev1.PodPortForwardOptions
}

// dryRun is the dryRun the options ask for.
func (o queryOptions) dryRun() []string {
	switch {
	case o.create != nil:
		return o.create.DryRun
	case o.update != nil:
		return o.update.DryRun
	case o.patch != nil:
		return o.patch.DryRun
	case o.delete != nil:
		return o.delete.DryRun
	}
	return nil
}

// write is a write's fieldManager and fieldValidation options.
func (o queryOptions) write() (manager, validation string) {
	switch {
	case o.create != nil:
		return o.create.FieldManager, o.create.FieldValidation
	case o.update != nil:
		return o.update.FieldManager, o.update.FieldValidation
	case o.patch != nil:
		return o.patch.FieldManager, o.patch.FieldValidation
	}
	return "", ""
}

// watching says whether the request is a watch.
func (o queryOptions) watching() bool { return o.list != nil && o.list.Watch }

// decodeQuery decodes and validates the options of kind from q. The
// options come back even with an error (empty where they did not decode),
// so that the request can still be authorized and then refused.
func decodeQuery(kind queryKind, q url.Values) (queryOptions, error) {
	var o queryOptions
	switch kind {
	case queryList:
		o.list = &metainternalversion.ListOptions{}
		if err := checkSelectorBytes(q); err != nil {
			o.list.Watch = rawWatch(q)
			return o, err
		}
		if err := decodeParams(q, o.list, metainternalversionscheme.ParameterCodec, metav1.SchemeGroupVersion); err != nil {
			o.list = &metainternalversion.ListOptions{Watch: rawWatch(q)}
			return o, err
		}
		return o, checkListOptions(o.list)
	case queryGet:
		o.get = &metav1.GetOptions{}
		return o, decodeMeta(q, o.get)
	case queryCreate:
		o.create = &metav1.CreateOptions{}
		if err := decodeMeta(q, o.create); err != nil {
			return o, err
		}
		return o, invalidOptions("CreateOptions", metav1validation.ValidateCreateOptions(o.create))
	case queryUpdate:
		o.update = &metav1.UpdateOptions{}
		if err := decodeMeta(q, o.update); err != nil {
			return o, err
		}
		return o, invalidOptions("UpdateOptions", metav1validation.ValidateUpdateOptions(o.update))
	case queryPatch:
		// The patch type is the body's: the handler validates the
		// options with it (validatePatchOptions).
		o.patch = &metav1.PatchOptions{}
		return o, decodeMeta(q, o.patch)
	case queryDelete:
		// A body, when there is one, replaces these (deleteOptions).
		o.delete = &metav1.DeleteOptions{}
		return o, decodeMeta(q, o.delete)
	case queryPodLog:
		o.log = &corev1.PodLogOptions{}
		if err := decodePodLogOptions(q, o.log); err != nil {
			return o, err
		}
		return o, checkPodLogOptions(o.log)
	case queryPodExec:
		o.exec = &corev1.PodExecOptions{}
		return o, decodePodExecOptions(q, o.exec)
	case queryPodPortForward:
		o.portForward = &corev1.PodPortForwardOptions{}
		return o, decodePodPortForwardOptions(q, o.portForward)
	}
	return o, nil
}

func decodeMeta(q url.Values, into runtime.Object) error {
	return decodeParams(q, into, metainternalversionscheme.ParameterCodec, metav1.SchemeGroupVersion)
}

// decodeParams decodes q into into with Kubernetes' parameter codec. Its
// error does not say which parameter failed: each is tried alone to name
// it.
func decodeParams(q url.Values, into runtime.Object, codec runtime.ParameterCodec, version schema.GroupVersion) error {
	if len(q) == 0 {
		return nil
	}
	err := codec.DecodeParameters(q, version, into)
	if err == nil {
		return nil
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		probe := into.DeepCopyObject()
		if perr := codec.DecodeParameters(url.Values{k: q[k]}, version, probe); perr != nil {
			return errdefs.BadRequest(k, "%q: %v", strings.Join(q[k], ","), perr)
		}
	}
	return errdefs.BadRequest("", "%v", err)
}

// checkListOptions validates list and watch options as Kubernetes does
// (the WatchList feature is on: sendInitialEvents is served).
func checkListOptions(o *metainternalversion.ListOptions) error {
	return invalidOptions("ListOptions", metainternalversionvalidation.ValidateListOptions(o, true))
}

// checkSelectorBytes refuses a selector holding a NUL byte:
// apimachinery's label selector lexer ends at one, so "app=a\x00,tier=db"
// would select on app alone, and "\x00" everything.
func checkSelectorBytes(q url.Values) error {
	for _, param := range []string{"labelSelector", "fieldSelector"} {
		for _, v := range q[param] {
			if i := strings.IndexByte(v, 0); i >= 0 {
				return errdefs.BadRequest(param, "%q: invalid selector: a NUL byte at %d", v, i)
			}
		}
	}
	return nil
}

// checkPodLogOptions validates a log's options as Kubernetes'
// ValidatePodLogOptions does (stream selection is not served).
func checkPodLogOptions(o *corev1.PodLogOptions) error {
	var errs field.ErrorList
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *o.TailLines, "must be greater than or equal to 0"))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *o.LimitBytes, "must be greater than 0"))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *o.SinceSeconds, "must be greater than 0"))
	}
	if o.Stream != nil {
		errs = append(errs, field.Forbidden(field.NewPath("stream"), "may not be specified"))
	}
	return invalidOptions("PodLogOptions", errs)
}

// validatePatchOptions validates a patch's options with its type, as
// Kubernetes does once it knows the type.
func validatePatchOptions(o *metav1.PatchOptions, patchType string) error {
	return invalidOptions("PatchOptions", metav1validation.ValidatePatchOptions(o, types.PatchType(patchType)))
}

// invalidOptions is Kubernetes' 422 for options that do not hold
// together: `ListOptions.meta.k8s.io "" is invalid: ...`.
func invalidOptions(kind string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	group := "meta.k8s.io"
	if kind == "PodLogOptions" {
		group = ""
	}
	qualified := kind
	if group != "" {
		qualified += "." + group
	}
	return errdefs.Invalid("", "%s %q is invalid: %v", qualified, "", errs.ToAggregate())
}

// timeoutParam reads ?timeout= as Kubernetes' request deadline does: a
// duration, 400 when it is not one.
func timeoutParam(q url.Values) (time.Duration, error) {
	v := q.Get("timeout")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errdefs.BadRequest("timeout", "invalid timeout specified in the request URL - %v", err)
	}
	return d, nil
}
