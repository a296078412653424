package apiserver

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

func TestDecodeFields(t *testing.T) {
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	fn := schema.GroupVersionKind{Group: "minik8s.io", Version: "v1", Kind: "Func"}
	const (
		typo       = `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","imgae":"x"}]}}`
		nfs        = `{"metadata":{"name":"p"},"spec":{"volumes":[{"name":"v","nfs":{"server":"s","path":"/"}}],"containers":[{"name":"c","image":"i"}]}}`
		emptyNFS   = `{"metadata":{"name":"p"},"spec":{"volumes":[{"name":"v","emptyDir":{},"nfs":null}],"containers":[{"name":"c","image":"i"}]}}`
		typoAndDup = `{"metadata":{"name":"p","name":"q"},"spec":{"foo":1,"containers":[{"name":"c","image":"i"}]}}`
		funcTypo   = `{"metadata":{"name":"f"},"spec":{"functon":"x"}}`
	)
	for _, tc := range []struct {
		name, body, mode string
		gvk              schema.GroupVersionKind
		warnings         []string
		class            error
		says             string
	}{
		{"a typo, strict", typo, validationStrict, pod, nil, errdefs.ErrBadRequest, `strict decoding error: unknown field "spec.containers[0].imgae"`},
		{"a typo, warned", typo, validationWarn, pod, []string{`unknown field "spec.containers[0].imgae"`}, nil, ""},
		{"a typo, ignored", typo, validationIgnore, pod, nil, nil, ""},
		{"a field minik8s does not serve", nfs, validationIgnore, pod, nil, errdefs.ErrInvalid, "spec.volumes[0].nfs: minik8s does not serve this field of Kubernetes' Pod"},
		{"... even warned", nfs, validationWarn, pod, nil, errdefs.ErrInvalid, "spec.volumes[0].nfs"},
		{"empty, dropped", emptyNFS, validationStrict, pod, nil, nil, ""},
		{"a duplicate beside a typo", typoAndDup, validationWarn, pod, []string{`duplicate field "metadata.name"`, `unknown field "spec.foo"`}, nil, ""},
		{"a function kind's typo, strict", funcTypo, validationStrict, fn, nil, errdefs.ErrBadRequest, `unknown field "spec.functon"`},
		{"a function kind's typo, warned", funcTypo, validationWarn, fn, []string{`unknown field "spec.functon"`}, nil, ""},
		{"malformed", `{"metadata":`, validationWarn, pod, nil, errdefs.ErrBadRequest, "malformed JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out api.Object = &api.Pod{}
			if tc.gvk.Kind == "Func" {
				out = &api.Func{}
			}
			warnings, err := decodeFields([]byte(tc.body), out, tc.gvk, tc.mode)
			if tc.class == nil {
				if err != nil {
					t.Fatal(err)
				}
				if out.GetObjectMeta().Name == "" {
					t.Errorf("decoded nothing: %+v", out)
				}
			} else if !strings.Contains(errorString(err), tc.says) || !errors.Is(err, tc.class) {
				t.Errorf("error %v, want %v saying %q", err, tc.class, tc.says)
			}
			if !reflect.DeepEqual(warnings, tc.warnings) {
				t.Errorf("warnings %q, want %q", warnings, tc.warnings)
			}
		})
	}
}

func errorString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestValueAt(t *testing.T) {
	doc := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"ports": []any{}}, map[string]any{"x": "y"}}}}
	for path, want := range map[string]any{
		"spec.containers[1].x":     "y",
		"spec.containers[2].x":     nil,
		"spec.nope":                nil,
		"spec.containers[0].ports": []any{},
	} {
		if got := valueAt(doc, path); !reflect.DeepEqual(got, want) {
			t.Errorf("valueAt %s = %v, want %v", path, got, want)
		}
	}
}
