package apiserver

import (
	"net"
	"reflect"
	"testing"

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
		Containers: []api.Container{
			{Name: "one", Env: []api.EnvVar{{Name: "A", Value: "plain"}, {Name: "B", ValueFrom: &api.EnvVarSource{SecretKeyRef: ref("env-secret")}}}},
			{Name: "two", Env: []api.EnvVar{{Name: "C", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: ref("env-cm")}}}},
		},
	}
	secrets, cms := podReferences(spec)
	if want := []string{"vol-secret", "env-secret"}; !reflect.DeepEqual(secrets, want) {
		t.Errorf("secrets %v, want %v", secrets, want)
	}
	if want := []string{"vol-cm", "env-cm"}; !reflect.DeepEqual(cms, want) {
		t.Errorf("configmaps %v, want %v", cms, want)
	}
	if s, c := podReferences(&api.PodSpec{}); s != nil || c != nil {
		t.Errorf("an empty spec references %v %v", s, c)
	}
}

func TestSpecialAddress(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1": "loopback", "127.0.0.71": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"0.0.0.0": "unspecified", "::": "unspecified",
		"169.254.169.254": "link-local", "fe80::1": "link-local", "224.0.0.1": "link-local", "ff02::1": "link-local",
		"239.1.2.3": "multicast", "ff05::2": "multicast",
		"255.255.255.255": "broadcast",
		"192.0.2.7":       "", "198.51.100.5": "", "2001:db8::5": "", // ordinary node addresses (documentation ranges)
	} {
		if got := specialAddress(net.ParseIP(addr)); got != want {
			t.Errorf("specialAddress(%s) = %q, want %q", addr, got, want)
		}
	}
}
