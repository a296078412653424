package pod

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

func ptr[T any](v T) *T { return &v }

func secretRef(name, key string, optional *bool) *api.EnvVarSource {
	return &api.EnvVarSource{SecretKeyRef: &api.KeySelector{Name: name, Key: key, Optional: optional}}
}

func configMapRef(name, key string, optional *bool) *api.EnvVarSource {
	return &api.EnvVarSource{ConfigMapKeyRef: &api.KeySelector{Name: name, Key: key, Optional: optional}}
}

// envAPI has a Secret default/db, a ConfigMap default/settings and,
// with svc, the Service default/kubernetes.
func envAPI(svc bool) *fakeAPI {
	f := &fakeAPI{
		secrets:    map[string]*api.Secret{"default/db": {Data: map[string][]byte{"password": []byte("s3cret")}}},
		configMaps: map[string]*api.ConfigMap{"default/settings": {Data: map[string]string{"level": "debug"}, BinaryData: map[string][]byte{"raw": []byte("bin")}}},
		services:   map[string]*api.Service{},
	}
	if svc {
		f.services["default/kubernetes"] = &api.Service{Spec: api.ServiceSpec{ClusterIP: "127.1.0.1",
			Ports: []api.ServicePort{{Name: "metrics", Port: 9090}, {Name: "https", Port: 443}}}}
	}
	return f
}

func TestContainerEnv(t *testing.T) {
	tests := []struct {
		name    string
		svc     bool
		envFrom []corev1.EnvFromSource
		env     []api.EnvVar
		want    []string // present, in this order
		absent  []string // variable names not set
		errMsg  []string // a failure naming these
		errType error
	}{
		{name: "secret and configMap keys", env: []api.EnvVar{
			{Name: "PASSWORD", ValueFrom: secretRef("db", "password", nil)},
			{Name: "LEVEL", ValueFrom: configMapRef("settings", "level", nil)},
			{Name: "RAW", ValueFrom: configMapRef("settings", "raw", nil)},
			{Name: "PLAIN", Value: "v"},
		}, want: []string{"PASSWORD=s3cret", "LEVEL=debug", "RAW=bin", "PLAIN=v"}, absent: []string{"KUBERNETES_SERVICE_HOST"}},
		{name: "missing secret", env: []api.EnvVar{{Name: "PASSWORD", ValueFrom: secretRef("nope", "password", nil)}},
			errMsg: []string{"PASSWORD", "Secret default/nope", `"password"`}, errType: errdefs.ErrNotFound},
		{name: "missing secret key", env: []api.EnvVar{{Name: "PASSWORD", ValueFrom: secretRef("db", "pw", ptr(false))}},
			errMsg: []string{"PASSWORD", "Secret default/db", `key "pw"`}, errType: errdefs.ErrNotFound},
		{name: "missing configMap key", env: []api.EnvVar{{Name: "LEVEL", ValueFrom: configMapRef("settings", "lvl", nil)}},
			errMsg: []string{"LEVEL", "ConfigMap default/settings", `key "lvl"`}, errType: errdefs.ErrNotFound},
		{name: "missing configMap", env: []api.EnvVar{{Name: "LEVEL", ValueFrom: configMapRef("other", "level", nil)}},
			errMsg: []string{"LEVEL", "ConfigMap default/other", `"level"`}, errType: errdefs.ErrNotFound},
		{name: "optional ones left out", env: []api.EnvVar{
			{Name: "A", ValueFrom: secretRef("nope", "password", ptr(true))},
			{Name: "B", ValueFrom: secretRef("db", "pw", ptr(true))},
			{Name: "C", ValueFrom: configMapRef("other", "level", ptr(true))},
			{Name: "D", ValueFrom: configMapRef("settings", "lvl", ptr(true))},
		}, absent: []string{"A", "B", "C", "D"}},
		{name: "valueFrom naming nothing", env: []api.EnvVar{{Name: "X", ValueFrom: &api.EnvVarSource{}}},
			errMsg: []string{"spec.containers[0].env[0].valueFrom", "X"}, errType: errdefs.ErrInvalid},
		{name: "envFrom: every key, prefixed, env after it", envFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
			{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: ptr(true)}},
		}, env: []api.EnvVar{{Name: "level", Value: "info"}},
			want: []string{"level=debug", "raw=bin", "DB_password=s3cret", "level=info"}},
		{name: "envFrom a missing ConfigMap", envFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}}},
			errMsg: []string{"spec.containers[0].envFrom[0]", "ConfigMap default/other"}, errType: errdefs.ErrNotFound},
		{name: "downward API and $(VAR)", env: []api.EnvVar{
			{Name: "NAME", ValueFrom: &api.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "APP", ValueFrom: &api.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "IP", ValueFrom: &api.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "NODE", ValueFrom: &api.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "MEM", ValueFrom: &api.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPU", ValueFrom: &api.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "URL", Value: "http://$(IP):80/$(NAME)/$(UNSET)"},
		}, want: []string{"NAME=p", "APP=web", "IP=127.0.0.1", "NODE=n", "MEM=4096", "CPU=2", "URL=http://127.0.0.1:80/p/$(UNSET)"}},
		{name: "kubernetes service: the https port", svc: true,
			want: []string{"KUBERNETES_SERVICE_HOST=127.1.0.1", "KUBERNETES_SERVICE_PORT=443"}},
		{name: "explicit env wins", svc: true, env: []api.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "elsewhere"}},
			want: []string{"KUBERNETES_SERVICE_HOST=127.1.0.1", "KUBERNETES_SERVICE_HOST=elsewhere"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(nil)
			p.Labels = map[string]string{"app": "web"}
			p.Spec.Containers[0].Env = tt.env
			p.Spec.Containers[0].EnvFrom = tt.envFrom
			w, _, _ := newTestWorker(t, p)
			w.api = envAPI(tt.svc)
			w.cfg.Allocatable = api.ResourceList{"cpu": "2", "memory": "4Gi"}
			cs, err := w.containerSpec(context.Background(), p, 0, "id", 0)
			if tt.errMsg != nil {
				if err == nil || !errors.Is(err, tt.errType) {
					t.Fatalf("err = %v, want one of class %v", err, tt.errType)
				}
				for _, s := range tt.errMsg {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("err %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Wanted entries appear in order: a later one of a name wins.
			last := -1
			for _, want := range tt.want {
				i := slices.Index(cs.Env, want)
				if i <= last {
					t.Errorf("env %v: %q missing or out of order", cs.Env, want)
				}
				last = i
			}
			for _, name := range tt.absent {
				for _, e := range cs.Env {
					if strings.HasPrefix(e, name+"=") {
						t.Errorf("env has %q", e)
					}
				}
			}
		})
	}
}
