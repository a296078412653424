package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"minik8s/pkg/api"
	"minik8s/pkg/quantity"
)

// resources is an amount of what the scheduler accounts for.
type resources struct {
	milliCPU int64
	memory   int64
}

func (r *resources) add(o resources) {
	r.milliCPU += o.milliCPU
	r.memory += o.memory
}

// atLeast is r raised to o where o is more.
func (r resources) atLeast(o resources) resources {
	return resources{milliCPU: max(r.milliCPU, o.milliCPU), memory: max(r.memory, o.memory)}
}

func (r *resources) sub(o resources) {
	r.milliCPU -= o.milliCPU
	r.memory -= o.memory
}

// Requests Kubernetes assumes, for scoring only, of a container that asks
// for nothing: without them every empty pod would land on one node.
const (
	defaultMilliCPURequest = 100
	defaultMemoryRequest   = 200 << 20
)

// hostPort is a port a pod takes on its node's network: a hostPort, a
// port of a hostNetwork pod, or (ifShared) a container port, which is a
// port of the node only where pods share its network.
type hostPort struct {
	protocol string
	port     int32
	ifShared bool
}

// podInfo is what scheduling needs of a pod, parsed once.
type podInfo struct {
	pod *api.Pod
	// req is the sum of the containers' requests (a limit stands in for a
	// missing request, as in Kubernetes); nonZero uses the defaults above
	// for what is not requested.
	req, nonZero resources
	ports        []hostPort
	// affinity is the pod's required node affinity, if it has one.
	affinity *nodeaffinity.LazyErrorNodeSelector
	// spread is the pod's topology spread, counted for one decision
	// (spread.go).
	spread []*spreadConstraint
	// terms are the pod's pod (anti-)affinity terms, nil if none.
	terms *podTerms
	// podAffinity is where required pod (anti-)affinity lets the pod go
	// and how pod (anti-)affinity weighs the nodes, found for one decision
	// (podaffinity.go); nil: anywhere, evenly.
	podAffinity *podAffinity
	// volumeNodes are the node affinities of the volumes bound to the
	// pod's claims, selectedNodes the nodes its claims are provisioned
	// on, delayed the claims to provision on the node chosen
	// (volumes.go).
	volumeNodes   []*nodeaffinity.LazyErrorNodeSelector
	selectedNodes []string
	delayed       []*api.PersistentVolumeClaim
}

func newPodInfo(pod *api.Pod) *podInfo {
	pi := &podInfo{pod: pod, terms: newPodTerms(pod)}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		pi.affinity = nodeaffinity.NewLazyErrorNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	for _, c := range pod.Spec.Containers {
		req, nonZero := containerRequests(c)
		pi.req.add(req)
		pi.nonZero.add(nonZero)
		for _, p := range c.Ports {
			if hp, ok := portOnHost(p, pod.Spec.HostNetwork); ok {
				pi.ports = append(pi.ports, hp)
			}
		}
	}
	// Init containers run one at a time before the others: the pod needs
	// the most any one of them asks, if that is more (Kubernetes' rule).
	for _, c := range pod.Spec.InitContainers {
		req, nonZero := containerRequests(c)
		pi.req = pi.req.atLeast(req)
		pi.nonZero = pi.nonZero.atLeast(nonZero)
		for _, p := range c.Ports {
			if hp, ok := portOnHost(p, pod.Spec.HostNetwork); ok {
				pi.ports = append(pi.ports, hp)
			}
		}
	}
	return pi
}

// containerRequests are c's requests, and with the defaults for what it
// does not request.
func containerRequests(c api.Container) (req, nonZero resources) {
	cpu := request(c.Resources, api.ResourceCPU, quantity.MilliCPU)
	mem := request(c.Resources, api.ResourceMemory, quantity.Bytes)
	req = resources{milliCPU: cpu, memory: mem}
	if cpu == 0 {
		cpu = defaultMilliCPURequest
	}
	if mem == 0 {
		mem = defaultMemoryRequest
	}
	return req, resources{milliCPU: cpu, memory: mem}
}

// portOnHost is the node port a container port takes. Where pods share
// the node's network a fixed container port is a port of the node; port 0
// asks the kubelet to allocate a free one and conflicts with nothing.
func portOnHost(p api.ContainerPort, hostNetwork bool) (hostPort, bool) {
	port, ifShared := p.HostPort, false
	if port == 0 {
		port, ifShared = p.ContainerPort, !hostNetwork
	}
	if port == 0 {
		return hostPort{}, false
	}
	proto := p.Protocol
	if proto == "" {
		proto = "TCP"
	}
	return hostPort{protocol: proto, port: port, ifShared: ifShared}, true
}

// request reads one resource of a container; quantities were validated by
// the apiserver, so one that does not parse counts as nothing.
func request(r api.ResourceRequirements, name string, parse func(string) (int64, error)) int64 {
	q, ok := r.Requests[name]
	if !ok {
		q, ok = r.Limits[name]
	}
	if !ok {
		return 0
	}
	v, err := parse(q)
	if err != nil {
		return 0
	}
	return v
}

// nodeAlloc is a node's allocatable as parsed at one resource version.
type nodeAlloc struct {
	resourceVersion string
	alloc           resources
	maxPods         int64
	// matchable is the node as Kubernetes' affinity matchers take it
	// (name and labels), made once per version of the node.
	matchable *corev1.Node
}

// allocatable is what a node offers pods: status.allocatable, or
// status.capacity where allocatable does not say. maxPods is 0 when the
// node sets no limit on the number of pods.
func allocatable(n *api.Node) (r resources, maxPods int64) {
	get := func(name string, parse func(string) (int64, error)) int64 {
		q, ok := n.Status.Allocatable[name]
		if !ok {
			q, ok = n.Status.Capacity[name]
		}
		if !ok {
			return 0
		}
		v, err := parse(q)
		if err != nil {
			return 0
		}
		return v
	}
	r.milliCPU = get(api.ResourceCPU, quantity.MilliCPU)
	r.memory = get(api.ResourceMemory, quantity.Bytes)
	maxPods = get(api.ResourcePods, quantity.Bytes)
	return r, maxPods
}

// terminated pods hold no resources.
func terminated(p *api.Pod) bool {
	return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
}
