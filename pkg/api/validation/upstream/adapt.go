package upstream

// Where minik8s's API means more than Kubernetes' by a value Kubernetes
// refuses, the copy Kubernetes judges says it in Kubernetes' terms; the
// validation package judges what minik8s means by it.

import (
	"net"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func adaptPod(obj runtime.Object) {
	adaptPodSpec(&obj.(*corev1.Pod).Spec)
}

func adaptTemplate(obj runtime.Object) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		adaptPodSpec(&o.Spec.Template.Spec)
	case *appsv1.ReplicaSet:
		adaptPodSpec(&o.Spec.Template.Spec)
	case *appsv1.DaemonSet:
		adaptPodSpec(&o.Spec.Template.Spec)
	case *appsv1.StatefulSet:
		adaptPodSpec(&o.Spec.Template.Spec)
	case *batchv1.Job:
		adaptPodSpec(&o.Spec.Template.Spec)
	case *batchv1.CronJob:
		adaptPodSpec(&o.Spec.JobTemplate.Spec.Template.Spec)
	}
}

// adaptPodSpec: containerPort 0 asks the kubelet for a free port (on a
// node whose pods share its network); Kubernetes requires a number. Each
// such port is judged as a port of its own that no other port of the pod
// uses (its host port, if it names one, as the kubelet makes them equal).
func adaptPodSpec(s *corev1.PodSpec) {
	used := map[int32]bool{}
	for _, c := range s.Containers {
		for _, p := range c.Ports {
			used[p.ContainerPort], used[p.HostPort] = true, true
		}
	}
	next := int32(65535)
	for i := range s.Containers {
		for j := range s.Containers[i].Ports {
			p := &s.Containers[i].Ports[j]
			if p.ContainerPort != 0 {
				continue
			}
			if p.HostPort != 0 {
				p.ContainerPort = p.HostPort
				continue
			}
			for used[next] && next > 1 {
				next--
			}
			p.ContainerPort = next
			used[next] = true
		}
	}
}

// adaptService does what Kubernetes' Service storage does before it
// validates (normalizeClusterIPs): minik8s's Services have one address,
// clusterIP, which Kubernetes also writes in clusterIPs.
func adaptService(obj runtime.Object) {
	s := obj.(*corev1.Service)
	if s.Spec.ClusterIP != "" && len(s.Spec.ClusterIPs) == 0 {
		s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
	}
}

// adaptEndpoints: Kubernetes refuses loopback addresses in Endpoints; in
// minik8s they are the addresses of nodes on the machine's loopback (the
// test clusters, --pod-network host), whose pods share them, and of the
// apiserver itself. The apiserver judges them against the nodes (admitEndpoints).
func adaptEndpoints(obj runtime.Object) {
	for i := range obj.(*corev1.Endpoints).Subsets {
		s := &obj.(*corev1.Endpoints).Subsets[i]
		for _, as := range [][]corev1.EndpointAddress{s.Addresses, s.NotReadyAddresses} {
			for j := range as {
				if ip := net.ParseIP(as[j].IP); ip != nil && ip.IsLoopback() {
					as[j].IP = loopbackStandIn
				}
			}
		}
	}
}

// loopbackStandIn is an address of TEST-NET-1 (RFC 5737), which nothing
// routes, judged in a loopback address's place.
const loopbackStandIn = "192.0.2.1"
