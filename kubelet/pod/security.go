package pod

import (
	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
)

// security is container c's confinement: its own security context over
// the pod's, as Kubernetes' kubelet merges them, with seccomp's runtime
// default profile unless the pod or container asks Unconfined (Kubernetes'
// SeccompDefault, as k3s's hardening guide turns it on).
func security(p *api.Pod, c *api.Container) containerd.Security {
	ps := p.Spec.SecurityContext
	if ps == nil {
		ps = &corev1.PodSecurityContext{}
	}
	cs := c.SecurityContext
	if cs == nil {
		cs = &corev1.SecurityContext{}
	}
	s := containerd.Security{
		UID:                either(cs.RunAsUser, ps.RunAsUser),
		GID:                either(cs.RunAsGroup, ps.RunAsGroup),
		SupplementalGroups: append([]int64(nil), ps.SupplementalGroups...),
		ImageGroups:        ps.SupplementalGroupsPolicy == nil || *ps.SupplementalGroupsPolicy != corev1.SupplementalGroupsPolicyStrict,
		Privileged:         isTrue(cs.Privileged),
		NoNewPrivileges:    cs.AllowPrivilegeEscalation != nil && !*cs.AllowPrivilegeEscalation && !isTrue(cs.Privileged),
		ReadOnlyRootfs:     isTrue(cs.ReadOnlyRootFilesystem),
		RunAsNonRoot:       isTrue(either(cs.RunAsNonRoot, ps.RunAsNonRoot)),
	}
	if ps.FSGroup != nil {
		s.SupplementalGroups = append(s.SupplementalGroups, *ps.FSGroup)
	}
	if caps := cs.Capabilities; caps != nil {
		for _, c := range caps.Add {
			s.CapAdd = append(s.CapAdd, string(c))
		}
		for _, c := range caps.Drop {
			s.CapDrop = append(s.CapDrop, string(c))
		}
	}
	seccomp := either(cs.SeccompProfile, ps.SeccompProfile)
	s.Unconfined = seccomp != nil && seccomp.Type == corev1.SeccompProfileTypeUnconfined
	if len(ps.Sysctls) > 0 {
		s.Sysctls = map[string]string{}
		for _, sc := range ps.Sysctls {
			s.Sysctls[sc.Name] = sc.Value
		}
	}
	return s
}

// either is the container's setting if it has one, else the pod's.
func either[T any](container, pod *T) *T {
	if container != nil {
		return container
	}
	return pod
}

func isTrue(b *bool) bool { return b != nil && *b }
