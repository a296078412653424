package kubelet

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/wait"
)

// sampleStats reads the node's and its running containers' CPU and memory
// every StatsPeriod.
func (k *Kubelet) sampleStats(ctx context.Context) {
	wait.Every(ctx, k.cfg.StatsPeriod, func() {
		var ids []string
		k.mu.Lock()
		for _, w := range k.workers {
			for _, id := range w.RunningContainers() {
				ids = append(ids, id)
			}
		}
		k.mu.Unlock()
		k.stats.Sample(ctx, ids)
	})
}

// summary is the node's and its pods' last readings.
func (k *Kubelet) summary() api.Summary {
	cpu, mem := k.stats.Node()
	s := api.Summary{Node: api.NodeStats{NodeName: k.cfg.NodeName, CPU: cpu, Memory: mem}, Pods: []api.PodStats{}}
	k.mu.Lock()
	workers := make([]podWorker, 0, len(k.workers))
	for _, w := range k.workers {
		workers = append(workers, w)
	}
	k.mu.Unlock()
	for _, w := range workers {
		p := w.Pod()
		ps := api.PodStats{PodRef: api.PodReference{Name: p.Name, Namespace: p.Namespace, UID: p.UID}}
		var podCPU, podMem uint64
		var at time.Time
		complete := true
		for name, id := range w.RunningContainers() {
			cpu, mem, ok := k.stats.Usage(id)
			if !ok {
				complete = false
				continue
			}
			ps.Containers = append(ps.Containers, api.ContainerStats{Name: name, CPU: cpu, Memory: mem})
			if cpu.UsageNanoCores == nil {
				complete = false
			} else {
				podCPU += *cpu.UsageNanoCores
			}
			podMem += *mem.WorkingSetBytes
			at = cpu.Time
		}
		if len(ps.Containers) == 0 {
			continue
		}
		if complete {
			ps.CPU = &api.CPUStats{Time: at, UsageNanoCores: &podCPU}
		}
		ps.Memory = &api.MemoryStats{Time: at, WorkingSetBytes: &podMem}
		s.Pods = append(s.Pods, ps)
	}
	return s
}

// podWorker is what the summary reads of a pod's worker.
type podWorker interface {
	Pod() *api.Pod
	RunningContainers() map[string]string
}

func (k *Kubelet) serveSummary(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(k.summary())
}
