package authz

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
)

func TestPodReferences(t *testing.T) {
	ref := func(name string) *api.KeySelector { return &api.KeySelector{Name: name, Key: "k"} }
	spec := &api.PodSpec{
		Volumes: []api.Volume{
			{Name: "a", Secret: &api.SecretVolumeSource{SecretName: "vol-secret"}},
			{Name: "b", ConfigMap: &api.ConfigMapVolumeSource{Name: "vol-cm"}},
			{Name: "c", EmptyDir: &api.EmptyDirVolumeSource{}},
		},
		InitContainers: []api.Container{
			{Name: "init", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-secret"}}}},
				Env: []api.EnvVar{{Name: "I", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: ref("init-cm")}}}},
		},
		Containers: []api.Container{
			{Name: "zero", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "from-cm"}}}}},
			{Name: "one", Env: []api.EnvVar{{Name: "A", Value: "plain"}, {Name: "B", ValueFrom: &api.EnvVarSource{SecretKeyRef: ref("env-secret")}}}},
			{Name: "two", Env: []api.EnvVar{{Name: "C", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: ref("env-cm")}}}},
		},
	}
	secrets, cms := PodReferences(spec)
	if want := []string{"vol-secret", "init-secret", "env-secret"}; !reflect.DeepEqual(secrets, want) {
		t.Errorf("secrets %v, want %v", secrets, want)
	}
	if want := []string{"vol-cm", "init-cm", "from-cm", "env-cm"}; !reflect.DeepEqual(cms, want) {
		t.Errorf("configmaps %v, want %v", cms, want)
	}
	if s, c := PodReferences(&api.PodSpec{}); s != nil || c != nil {
		t.Errorf("an empty spec references %v %v", s, c)
	}
}
