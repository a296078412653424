package pod

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"minik8s/pkg/api"
)

// Ports hands out free TCP ports on the node's address to containers that
// ask for one (a container port of 0, or none). Ports come from a range
// outside the kernel's ephemeral one, so that outgoing connections do not
// take them.
type Ports struct {
	ip       string
	min, max int32

	mu   sync.Mutex
	used map[int32]string // port -> pod uid
}

// DefaultPortRange is where allocated ports come from.
const (
	DefaultPortMin = 20000
	DefaultPortMax = 32767
)

// NewPorts allocates ports on ip within [min, max].
func NewPorts(ip string, min, max int32) *Ports {
	if min <= 0 || max < min {
		min, max = DefaultPortMin, DefaultPortMax
	}
	return &Ports{ip: ip, min: min, max: max, used: map[int32]string{}}
}

// Allocate finds a port that nobody has and that can be bound now.
func (p *Ports) Allocate(uid string) (int32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	span := int(p.max - p.min + 1)
	start := rand.IntN(span)
	for i := 0; i < span && i < 2000; i++ {
		port := p.min + int32((start+i)%span)
		if _, taken := p.used[port]; taken {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(p.ip, strconv.Itoa(int(port))))
		if err != nil {
			continue
		}
		l.Close()
		p.used[port] = uid
		return port, nil
	}
	return 0, fmt.Errorf("no free port on %s in %d-%d", p.ip, p.min, p.max)
}

// Reserve marks ports a pod already has (after a kubelet restart).
func (p *Ports) Reserve(uid string, ports []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, port := range ports {
		p.used[port] = uid
	}
}

// Release frees every port of a pod.
func (p *Ports) Release(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for port, owner := range p.used {
		if owner == uid {
			delete(p.used, port)
		}
	}
}

// portsFile keeps a pod's allocated ports across kubelet restarts.
func portsFile(podDir string) string { return filepath.Join(podDir, "ports.json") }

// assignPorts gives every container its ports: the ones the spec names,
// with a port allocated where it says 0, and one allocated port for a
// container that names none. The choice is saved in the pod dir and read
// back on later calls, so it never changes for a pod. A pod with its own
// network has its ports in its namespace: on the node only the host ports
// its spec asks for.
func assignPorts(pod *api.Pod, podDir string, alloc *Ports, ownNetwork bool) (map[string][]api.ContainerPort, error) {
	out := map[string][]api.ContainerPort{}
	if data, err := os.ReadFile(portsFile(podDir)); err == nil {
		if err := json.Unmarshal(data, &out); err == nil {
			var nums []int32
			for _, ps := range out {
				for _, p := range ps {
					nums = append(nums, p.ContainerPort)
				}
			}
			alloc.Reserve(pod.UID, nums)
			return out, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, c := range pod.Spec.Containers {
		var ports []api.ContainerPort
		if len(c.Ports) == 0 {
			n, err := alloc.Allocate(pod.UID)
			if err != nil {
				return nil, err
			}
			port := api.ContainerPort{ContainerPort: n, HostPort: n, Protocol: "TCP"}
			if ownNetwork {
				port.HostPort = 0
			}
			ports = append(ports, port)
		}
		for _, p := range c.Ports {
			if p.ContainerPort == 0 {
				n, err := alloc.Allocate(pod.UID)
				if err != nil {
					return nil, err
				}
				p.ContainerPort = n
			} else {
				alloc.Reserve(pod.UID, []int32{p.ContainerPort})
			}
			if !ownNetwork {
				p.HostPort = p.ContainerPort
			}
			if p.Protocol == "" {
				p.Protocol = "TCP"
			}
			ports = append(ports, p)
		}
		out[c.Name] = ports
	}
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		return nil, err
	}
	data, _ := json.Marshal(out)
	tmp := portsFile(podDir) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return nil, err
	}
	return out, os.Rename(tmp, portsFile(podDir))
}
