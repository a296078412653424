package kubelet

import (
	"bufio"
	"context"
	"maps"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/wait"
)

// MaxPods is the number of pods a node advertises.
const MaxPods = 110

// nodeCapacity is what the node has: its CPUs, its memory, and MaxPods.
func nodeCapacity() api.ResourceList {
	capacity := api.ResourceList{
		api.ResourceCPU:  strconv.Itoa(goruntime.NumCPU()),
		api.ResourcePods: strconv.Itoa(MaxPods),
	}
	if kib := memTotalKiB(); kib > 0 {
		capacity[api.ResourceMemory] = strconv.FormatInt(kib, 10) + "Ki"
	}
	return capacity
}

// nodeStatus is the status the kubelet reports for its node.
func (k *Kubelet) nodeStatus(ctx context.Context, prev *api.NodeStatus) api.NodeStatus {
	capacity := nodeCapacity()
	allocatable := api.ResourceList{}
	for k, v := range capacity {
		allocatable[k] = v
	}
	hostname, _ := os.Hostname()
	runtimeVersion, _ := k.rt.Version(ctx)
	now := time.Now().UTC().Truncate(time.Second)
	ready := api.NodeCondition{Type: api.NodeReady, Status: api.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: &now, LastTransitionTime: &now}
	var conditions []api.NodeCondition
	if prev != nil {
		for _, c := range prev.Conditions {
			if c.Type == api.NodeReady {
				if c.Status == api.ConditionTrue && c.LastTransitionTime != nil {
					ready.LastTransitionTime = c.LastTransitionTime
				}
				continue
			}
			conditions = append(conditions, c)
		}
	}
	conditions = append(conditions, ready)
	return api.NodeStatus{
		Capacity:    capacity,
		Allocatable: allocatable,
		Conditions:  conditions,
		Addresses: []api.NodeAddress{
			{Type: api.NodeInternalIP, Address: k.cfg.NodeIP},
			{Type: api.NodeHostName, Address: hostname},
		},
		DaemonEndpoints: api.NodeDaemonEndpoints{KubeletEndpoint: api.DaemonEndpoint{Port: int32(k.port), Scheme: k.scheme()}},
		NodeInfo: api.NodeSystemInfo{
			KernelVersion:           kernelVersion(),
			OperatingSystem:         goruntime.GOOS,
			Architecture:            goruntime.GOARCH,
			ContainerRuntimeVersion: runtimeVersion,
			KubeletVersion:          "minik8s",
		},
	}
}

// register creates the node or takes it over, retrying until the
// apiserver answers.
func (k *Kubelet) register(ctx context.Context) error {
	for {
		err := k.postStatus(ctx)
		if err == nil {
			log.WithField("node", k.cfg.NodeName).Info("node registered")
			return nil
		}
		if errdefs.IsInvalid(err) {
			return err
		}
		log.WithError(err).Warn("registering node; retrying")
		if !wait.Sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// postStatus writes the node's status (creating the node if needed).
func (k *Kubelet) postStatus(ctx context.Context) error {
	nodes := k.client.Nodes()
	n, err := nodes.Get(ctx, k.cfg.NodeName)
	if errdefs.IsNotFound(err) {
		n = &api.Node{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: api.ObjectMeta{Name: k.cfg.NodeName, Labels: map[string]string{api.LabelPodNetwork: k.cfg.PodNetwork}}}
		n.Status = k.nodeStatus(ctx, nil)
		n, err = nodes.Create(ctx, n)
		if errdefs.IsAlreadyExists(err) {
			n, err = nodes.Get(ctx, k.cfg.NodeName)
		}
	}
	if err != nil {
		return err
	}
	if n.Labels[api.LabelPodNetwork] != k.cfg.PodNetwork || n.Annotations[api.AnnotationIngressPorts] != k.ingressPorts() ||
		n.Annotations[api.AnnotationLocalPathDir] != k.cfg.StorageDir {
		// A node registered before, or by a kubelet networking pods the
		// other way: the scheduler must know how ports are shared, the
		// ingress status controller where Ingresses are served, and the
		// local-path provisioner where volumes go.
		up := *n
		up.Labels, up.Annotations = maps.Clone(n.Labels), maps.Clone(n.Annotations)
		if up.Labels == nil {
			up.Labels = map[string]string{}
		}
		if up.Annotations == nil {
			up.Annotations = map[string]string{}
		}
		up.Labels[api.LabelPodNetwork] = k.cfg.PodNetwork
		up.Annotations[api.AnnotationLocalPathDir] = k.cfg.StorageDir
		if ports := k.ingressPorts(); ports != "" {
			up.Annotations[api.AnnotationIngressPorts] = ports
		} else {
			delete(up.Annotations, api.AnnotationIngressPorts)
		}
		if n, err = nodes.Update(ctx, &up); err != nil {
			return err
		}
	}
	out := *n
	out.ResourceVersion = ""
	out.Status = k.nodeStatus(ctx, &n.Status)
	_, err = nodes.UpdateStatus(ctx, &out)
	return err
}

// heartbeat renews the node's Ready condition until ctx ends.
func (k *Kubelet) heartbeat(ctx context.Context) {
	wait.Every(ctx, k.cfg.HeartbeatPeriod, func() {
		hctx, cancel := context.WithTimeout(ctx, k.cfg.HeartbeatPeriod*2)
		defer cancel()
		if err := k.postStatus(hctx); err != nil && ctx.Err() == nil {
			log.WithError(err).Warn("node heartbeat")
		}
	})
}

func memTotalKiB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			return n
		}
	}
	return 0
}

func kernelVersion() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// ingressPorts is the node's api.AnnotationIngressPorts ("" when it
// serves no Ingress).
func (k *Kubelet) ingressPorts() string {
	var ports []string
	if k.cfg.IngressHTTPPort > 0 {
		ports = append(ports, "http="+strconv.Itoa(k.cfg.IngressHTTPPort))
	}
	if k.cfg.IngressHTTPSPort > 0 {
		ports = append(ports, "https="+strconv.Itoa(k.cfg.IngressHTTPSPort))
	}
	return strings.Join(ports, ",")
}
