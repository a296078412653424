package validation

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	imageref "github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s/pkg/api"
	"minik8s/pkg/quantity"
)

// Func names follow the reference design, which uses names like append_world.
var funcName = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

func parseIP(s string) net.IP { return net.ParseIP(s) }

// podSpec: what the kubelet and containerd can run, where Kubernetes
// would take more: images containerd can pull, TCP ports, IPv4 host
// addresses, absolute paths, probes on ports the container has, and
// quantities the scheduler can count.
func podSpec(path *field.Path, s *api.PodSpec) field.ErrorList {
	return podSpecOf(path, s, false)
}

// templateSpec is podSpec for a pod template, where Kubernetes leaves some
// of a pod's rules to the pods made from it, which minik8s's controllers
// would then fail to make: an image padded with white space.
func templateSpec(path *field.Path, s *api.PodSpec) field.ErrorList {
	return podSpecOf(path, s, true)
}

func podSpecOf(path *field.Path, s *api.PodSpec, template bool) field.ErrorList {
	errs := podSecurity(path, s)
	errs = append(errs, podSpecNotDone(path, s)...)
	for i, v := range s.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumDefault && v.EmptyDir.Medium != corev1.StorageMediumMemory {
			errs = append(errs, field.NotSupported(path.Child("volumes").Index(i).Child("emptyDir", "medium"), v.EmptyDir.Medium,
				[]corev1.StorageMedium{corev1.StorageMediumDefault, corev1.StorageMediumMemory}))
		}
		if v.Projected != nil {
			for j, src := range v.Projected.Sources {
				p := path.Child("volumes").Index(i).Child("projected", "sources").Index(j)
				if src.ClusterTrustBundle != nil {
					errs = append(errs, field.Forbidden(p.Child("clusterTrustBundle"), notDonePod+": there are no ClusterTrustBundles"))
				}
				if src.PodCertificate != nil {
					errs = append(errs, field.Forbidden(p.Child("podCertificate"), notDonePod+": pods are not issued certificates"))
				}
			}
		}
		if v.HostPath != nil && v.HostPath.Path != "" && !strings.HasPrefix(v.HostPath.Path, "/") {
			errs = append(errs, field.Invalid(path.Child("volumes").Index(i).Child("hostPath", "path"), v.HostPath.Path, "must be an absolute path"))
		}
	}
	for i := range s.InitContainers {
		errs = append(errs, container(path.Child("initContainers").Index(i), &s.InitContainers[i], template)...)
	}
	for i := range s.Containers {
		errs = append(errs, container(path.Child("containers").Index(i), &s.Containers[i], template)...)
	}
	return errs
}

func container(path *field.Path, c *api.Container, template bool) field.ErrorList {
	var errs field.ErrorList
	padded := c.Image != strings.TrimSpace(c.Image)
	if padded && template {
		errs = append(errs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	// An empty image, or a padded one in a pod, is Kubernetes' to refuse.
	if c.Image != "" && !padded {
		if _, err := imageref.ParseReference(c.Image); err != nil {
			errs = append(errs, field.Invalid(path.Child("image"), c.Image, fmt.Sprintf("is not an image reference containerd can pull: %v", err)))
		}
	}
	errs = append(errs, containerSecurity(path, c.SecurityContext)...)
	errs = append(errs, containerNotDone(path, c)...)
	for j, p := range c.Ports {
		pp := path.Child("ports").Index(j)
		if p.Protocol != "" && p.Protocol != "TCP" {
			errs = append(errs, field.NotSupported(pp.Child("protocol"), p.Protocol, []string{"TCP"}))
		}
		if ip := parseIP(p.HostIP); ip != nil && ip.To4() == nil {
			errs = append(errs, field.Invalid(pp.Child("hostIP"), p.HostIP, "must be an IPv4 address: nodes' addresses are IPv4"))
		}
	}
	errs = append(errs, resourceList(path.Child("resources", "limits"), c.Resources.Limits)...)
	errs = append(errs, resourceList(path.Child("resources", "requests"), c.Resources.Requests)...)
	for j, m := range c.VolumeMounts {
		if m.MountPath != "" && !strings.HasPrefix(m.MountPath, "/") {
			errs = append(errs, field.Invalid(path.Child("volumeMounts").Index(j).Child("mountPath"), m.MountPath, "must be an absolute path"))
		}
	}
	for _, pr := range []struct {
		name string
		p    *api.Probe
	}{{"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}, {"startupProbe", c.StartupProbe}} {
		if pr.p == nil {
			continue
		}
		if pr.p.HTTPGet != nil {
			errs = append(errs, probePort(path.Child(pr.name, "httpGet", "port"), string(pr.p.HTTPGet.Port), c.Ports)...)
		}
		if pr.p.TCPSocket != nil {
			errs = append(errs, probePort(path.Child(pr.name, "tcpSocket", "port"), string(pr.p.TCPSocket.Port), c.Ports)...)
		}
	}
	return errs
}

// probePort: a port named in a probe is one of the container's, or the
// kubelet has nothing to probe.
func probePort(path *field.Path, port string, ports []api.ContainerPort) field.ErrorList {
	if _, err := strconv.Atoi(port); err == nil || port == "" {
		return nil // numbers and emptiness are Kubernetes' to judge
	}
	for _, p := range ports {
		if p.Name == port {
			return nil
		}
	}
	return field.ErrorList{field.NotFound(path, port)}
}

// resourceList: quantities that parse, and that the scheduler and the
// kubelet can count in an int64 (millicores, bytes). A negative one is
// Kubernetes' to refuse.
func resourceList(path *field.Path, rl api.ResourceList) field.ErrorList {
	var errs field.ErrorList
	for name, q := range rl {
		p := path.Key(name)
		v, err := resource.ParseQuantity(strings.TrimSpace(q))
		if err != nil {
			errs = append(errs, field.Invalid(p, q, "must be a quantity: a number with an optional suffix such as 500m, 64Mi, 1G"))
			continue
		}
		if v.Sign() < 0 {
			continue
		}
		switch name {
		case api.ResourceCPU:
			// A fraction of a millicore rounds up to 1m, as in Kubernetes.
			_, err = quantity.MilliCPU(q)
		case api.ResourceMemory, api.ResourcePods:
			_, err = quantity.Bytes(q)
		default:
			_, err = quantity.Parse(q)
		}
		if err != nil {
			errs = append(errs, field.Invalid(p, q, err.Error()))
		}
	}
	return errs
}
