package apiserver

import (
	"net/url"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s/pkg/errdefs"
)

// The options of a pod's log, exec and port-forward are read from the
// query as Kubernetes reads them (k8s.io/kubernetes' generated
// Convert_url_Values_To_v1_Pod*Options, which client-go's scheme does not
// carry): apimachinery's converter of each field, by its JSON name. A
// parameter of no field is ignored, as there.

// paramConverters convert the values of each parameter into a field.
type paramConverters map[string]func(values []string) error

// decode converts q's parameters, naming the one that does not convert.
func (p paramConverters) decode(q url.Values) error {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		conv, ok := p[k]
		if !ok || len(q[k]) == 0 {
			continue
		}
		if err := conv(q[k]); err != nil {
			return errdefs.BadRequest(k, "%q: %v", strings.Join(q[k], ","), err)
		}
	}
	return nil
}

func decodePodLogOptions(q url.Values, o *corev1.PodLogOptions) error {
	return paramConverters{
		"container":  func(v []string) error { return runtime.Convert_Slice_string_To_string(&v, &o.Container, nil) },
		"follow":     func(v []string) error { return runtime.Convert_Slice_string_To_bool(&v, &o.Follow, nil) },
		"previous":   func(v []string) error { return runtime.Convert_Slice_string_To_bool(&v, &o.Previous, nil) },
		"timestamps": func(v []string) error { return runtime.Convert_Slice_string_To_bool(&v, &o.Timestamps, nil) },
		"sinceSeconds": func(v []string) error {
			return runtime.Convert_Slice_string_To_Pointer_int64(&v, &o.SinceSeconds, nil)
		},
		"sinceTime": func(v []string) error { return metav1.Convert_Slice_string_To_Pointer_v1_Time(&v, &o.SinceTime, nil) },
		"tailLines": func(v []string) error { return runtime.Convert_Slice_string_To_Pointer_int64(&v, &o.TailLines, nil) },
		"limitBytes": func(v []string) error {
			return runtime.Convert_Slice_string_To_Pointer_int64(&v, &o.LimitBytes, nil)
		},
		"insecureSkipTLSVerifyBackend": func(v []string) error {
			return runtime.Convert_Slice_string_To_bool(&v, &o.InsecureSkipTLSVerifyBackend, nil)
		},
		"stream": func(v []string) error { s := v[0]; o.Stream = &s; return nil },
	}.decode(q)
}

func decodePodExecOptions(q url.Values, o *corev1.PodExecOptions) error {
	return paramConverters{
		"stdin":     func(v []string) error { return runtime.Convert_Slice_string_To_bool(&v, &o.Stdin, nil) },
		"stdout":    func(v []string) error { return runtime.Convert_Slice_string_To_bool(&v, &o.Stdout, nil) },
		"stderr":    func(v []string) error { return runtime.Convert_Slice_string_To_bool(&v, &o.Stderr, nil) },
		"tty":       func(v []string) error { return runtime.Convert_Slice_string_To_bool(&v, &o.TTY, nil) },
		"container": func(v []string) error { return runtime.Convert_Slice_string_To_string(&v, &o.Container, nil) },
		"command":   func(v []string) error { o.Command = append([]string(nil), v...); return nil },
	}.decode(q)
}

func decodePodPortForwardOptions(q url.Values, o *corev1.PodPortForwardOptions) error {
	return paramConverters{
		"ports": func(v []string) error { return metav1.Convert_Slice_string_To_Slice_int32(&v, &o.Ports, nil) },
	}.decode(q)
}
