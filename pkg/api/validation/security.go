package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
)

// Security fields minik8s reads but does not do, refused (422) rather than
// ignored: a pod that asks for a confinement (an SELinux label, an
// AppArmor or a node-local seccomp profile) or for a sharing (the node's
// PID or IPC namespace, one PID namespace for the pod, an unmasked /proc)
// would otherwise run without it, or with more than it asked, believing
// otherwise. Kubernetes' own validation judges the values of the rest.

// notDone is the reason every refusal gives.
const notDone = "minik8s's kubelet does not do this"

func podSecurity(path *field.Path, s *api.PodSpec) field.ErrorList {
	var errs field.ErrorList
	if s.HostPID {
		errs = append(errs, field.Forbidden(path.Child("hostPID"), notDone+": every container has its own PID namespace"))
	}
	if s.HostIPC {
		errs = append(errs, field.Forbidden(path.Child("hostIPC"), notDone+": every container has its own IPC namespace"))
	}
	if s.ShareProcessNamespace != nil && *s.ShareProcessNamespace {
		errs = append(errs, field.Forbidden(path.Child("shareProcessNamespace"), notDone+": every container has its own PID namespace"))
	}
	if sc := s.SecurityContext; sc != nil {
		p := path.Child("securityContext")
		errs = append(errs, confinement(p, sc.SELinuxOptions, sc.SeccompProfile, sc.AppArmorProfile, sc.WindowsOptions)...)
	}
	return errs
}

func containerSecurity(path *field.Path, sc *corev1.SecurityContext) field.ErrorList {
	if sc == nil {
		return nil
	}
	p := path.Child("securityContext")
	errs := confinement(p, sc.SELinuxOptions, sc.SeccompProfile, sc.AppArmorProfile, sc.WindowsOptions)
	if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
		errs = append(errs, field.NotSupported(p.Child("procMount"), *sc.ProcMount, []corev1.ProcMountType{corev1.DefaultProcMount}))
	}
	return errs
}

// confinement: the fields pod and container security contexts share.
func confinement(p *field.Path, se *corev1.SELinuxOptions, sec *corev1.SeccompProfile, aa *corev1.AppArmorProfile, win *corev1.WindowsSecurityContextOptions) field.ErrorList {
	var errs field.ErrorList
	if se != nil && *se != (corev1.SELinuxOptions{}) {
		errs = append(errs, field.Forbidden(p.Child("seLinuxOptions"), notDone+": nodes do not label containers for SELinux"))
	}
	if sec != nil && sec.Type != corev1.SeccompProfileTypeRuntimeDefault && sec.Type != corev1.SeccompProfileTypeUnconfined {
		errs = append(errs, field.NotSupported(p.Child("seccompProfile", "type"), sec.Type,
			[]corev1.SeccompProfileType{corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	if aa != nil && aa.Type != corev1.AppArmorProfileTypeUnconfined {
		errs = append(errs, field.NotSupported(p.Child("appArmorProfile", "type"), aa.Type,
			[]corev1.AppArmorProfileType{corev1.AppArmorProfileTypeUnconfined}))
	}
	if win != nil && win.HostProcess != nil && *win.HostProcess {
		errs = append(errs, field.Forbidden(p.Child("windowsOptions", "hostProcess"), notDone+": nodes run Linux"))
	}
	return errs
}
