package pod

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
)

func TestSecurityMergesPodAndContainer(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	yes, no := true, false
	strict := corev1.SupplementalGroupsPolicyStrict
	for _, tc := range []struct {
		name      string
		pod       *corev1.PodSecurityContext
		container *corev1.SecurityContext
		want      containerd.Security
	}{
		{"none: the image's user and groups, seccomp's default", nil, nil, containerd.Security{ImageGroups: true}},
		{"the pod's, the container's over them",
			&corev1.PodSecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(1000), RunAsNonRoot: &yes, FSGroup: i64(2000),
				SupplementalGroups: []int64{3000}, Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ping_group_range", Value: "0 0"}}},
			&corev1.SecurityContext{RunAsUser: i64(1001), ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}},
			containerd.Security{UID: i64(1001), GID: i64(1000), SupplementalGroups: []int64{3000, 2000}, ImageGroups: true,
				CapAdd: []string{"NET_BIND_SERVICE"}, CapDrop: []string{"ALL"}, NoNewPrivileges: true, ReadOnlyRootfs: true,
				Sysctls: map[string]string{"net.ipv4.ping_group_range": "0 0"}, RunAsNonRoot: true}},
		{"Strict groups, seccomp Unconfined from the pod",
			&corev1.PodSecurityContext{SupplementalGroupsPolicy: &strict, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			nil, containerd.Security{Unconfined: true}},
		{"the container's RuntimeDefault over the pod's Unconfined",
			&corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			&corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			containerd.Security{ImageGroups: true}},
		{"privileged escalates whatever else it says",
			nil, &corev1.SecurityContext{Privileged: &yes, AllowPrivilegeEscalation: &no},
			containerd.Security{ImageGroups: true, Privileged: true}},
	} {
		p := &api.Pod{Spec: api.PodSpec{SecurityContext: tc.pod, Containers: []api.Container{{Name: "c", SecurityContext: tc.container}}}}
		if got := security(p, &p.Spec.Containers[0]); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
