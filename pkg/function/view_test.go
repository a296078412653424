package function

import (
	"encoding/base64"
	"reflect"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestFuncViewRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, apiVersion, mode string
	}{
		{"pool", api.FuncAPIVersionV2, api.FuncModePool},
		{"fresh", api.FuncAPIVersionV1, api.FuncModeFresh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := &api.Func{TypeMeta: api.TypeMeta{APIVersion: tc.apiVersion, Kind: "Func"}, ObjectMeta: api.ObjectMeta{Name: "f"},
				Spec: api.FuncSpec{Name: "f", Function: b64("def run(arg):\n    return arg\n"), PreRun: b64("echo hi\n"),
					Files: map[string]string{"util.py": b64("X = 1\n")}}}
			view := ToView(stored)
			if view.APIVersion != api.FuncGroupVersion || view.Spec.Mode != tc.mode || view.Spec.Name != "" ||
				view.Spec.Function != "def run(arg):\n    return arg\n" || view.Spec.PreRun != "echo hi\n" || view.Spec.Files["util.py"] != "X = 1\n" {
				t.Fatalf("ToView: %+v", view)
			}
			if stored.Spec.Files["util.py"] != b64("X = 1\n") || stored.APIVersion != tc.apiVersion {
				t.Fatalf("ToView changed the stored object: %+v", stored)
			}
			if err := FromView(view); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(view, stored) {
				t.Errorf("FromView(ToView(f)) = %+v, want %+v", view, stored)
			}
		})
	}
}

func TestFuncFromViewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     api.Func
		field string
	}{
		{"reference apiVersion", api.Func{TypeMeta: api.TypeMeta{APIVersion: "v2"}}, "apiVersion"},
		{"unknown mode", api.Func{TypeMeta: api.TypeMeta{APIVersion: api.FuncGroupVersion}, Spec: api.FuncSpec{Mode: "warm"}}, "spec.mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := FromView(&tc.f)
			if err == nil || errdefs.Field(err) != tc.field {
				t.Errorf("FromView: %v, want an error naming %s", err, tc.field)
			}
		})
	}
}

func TestFuncFromViewDefaults(t *testing.T) {
	f := &api.Func{ObjectMeta: api.ObjectMeta{Name: "f"}, Spec: api.FuncSpec{Image: "example/fn:1"}}
	if err := FromView(f); err != nil {
		t.Fatal(err)
	}
	if f.APIVersion != api.FuncAPIVersionV2 || f.Spec.Name != "f" || f.Spec.Function != "" || f.Spec.Files != nil {
		t.Errorf("FromView of a bare image function: %+v", f)
	}
}
