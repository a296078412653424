// Package stats samples the CPU and memory of a node and of its
// containers and keeps the last two samples of each, so that CPU use is a
// rate over the window between them: the kubelet's summary, which the
// apiserver's metrics API (kubectl top, the HPA) reads.
package stats

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/containerd"
)

// Source reads a running container's stats (a *containerd.Runtime is one).
type Source interface {
	ContainerStats(ctx context.Context, id string) (containerd.Stats, error)
}

var _ Source = (*containerd.Runtime)(nil)

// Sampler keeps the last two samples of each container it is asked about,
// and of the node.
type Sampler struct {
	src Source
	// procDir is /proc (tests give another).
	procDir string

	mu         sync.Mutex
	containers map[string][2]containerd.Stats // by container id: previous, last
	node       [2]nodeSample
}

type nodeSample struct {
	time              time.Time
	busy, total       uint64 // jiffies
	memUsed, memTotal uint64 // bytes
}

// New returns a sampler reading containers from src.
func New(src Source) *Sampler {
	return &Sampler{src: src, procDir: "/proc", containers: map[string][2]containerd.Stats{}}
}

// Sample reads the node and the containers ids (the running ones), and
// forgets the containers no longer among them.
func (s *Sampler) Sample(ctx context.Context, ids []string) {
	node, nodeErr := s.readNode()
	read := make(map[string]containerd.Stats, len(ids))
	for _, id := range ids {
		if st, err := s.src.ContainerStats(ctx, id); err == nil {
			read[id] = st
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if nodeErr == nil {
		s.node = [2]nodeSample{s.node[1], node}
	}
	next := make(map[string][2]containerd.Stats, len(read))
	for id, st := range read {
		next[id] = [2]containerd.Stats{s.containers[id][1], st}
	}
	s.containers = next
}

// Usage is a container's CPU use over its last window (nil until two
// samples) and its memory at the last sample.
func (s *Sampler) Usage(id string) (*api.CPUStats, *api.MemoryStats, bool) {
	s.mu.Lock()
	pair, ok := s.containers[id]
	s.mu.Unlock()
	if !ok {
		return nil, nil, false
	}
	prev, last := pair[0], pair[1]
	cpu := &api.CPUStats{Time: last.Time, UsageCoreNanoSeconds: &last.CPUUsageNanos}
	if !prev.Time.IsZero() && last.Time.After(prev.Time) && last.CPUUsageNanos >= prev.CPUUsageNanos {
		rate := uint64(float64(last.CPUUsageNanos-prev.CPUUsageNanos) / last.Time.Sub(prev.Time).Seconds())
		cpu.UsageNanoCores = &rate
	}
	mem := &api.MemoryStats{Time: last.Time, UsageBytes: &last.MemoryUsage, WorkingSetBytes: &last.MemoryWorkingSet}
	return cpu, mem, true
}

// Node is the node's CPU use over the last window and its memory in use.
func (s *Sampler) Node() (*api.CPUStats, *api.MemoryStats) {
	s.mu.Lock()
	prev, last := s.node[0], s.node[1]
	s.mu.Unlock()
	if last.time.IsZero() {
		return nil, nil
	}
	cpu := &api.CPUStats{Time: last.time}
	if !prev.time.IsZero() && last.total > prev.total {
		rate := uint64(float64(last.busy-prev.busy) / float64(last.total-prev.total) * float64(runtime.NumCPU()) * 1e9)
		cpu.UsageNanoCores = &rate
	}
	used := last.memUsed
	return cpu, &api.MemoryStats{Time: last.time, UsageBytes: &used, WorkingSetBytes: &used}
}

// readNode reads the machine's CPU times (/proc/stat) and memory in use
// (MemTotal less MemAvailable, /proc/meminfo).
func (s *Sampler) readNode() (nodeSample, error) {
	n := nodeSample{time: time.Now()}
	stat, err := os.ReadFile(s.procDir + "/stat")
	if err != nil {
		return n, err
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return n, fmt.Errorf("%s/stat: no cpu line", s.procDir)
	}
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		n.total += v
		if i != 3 && i != 4 { // idle, iowait
			n.busy += v
		}
	}
	mem, err := os.Open(s.procDir + "/meminfo")
	if err != nil {
		return n, err
	}
	defer mem.Close()
	var total, available uint64
	sc := bufio.NewScanner(mem)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "MemTotal:":
			total = v * 1024
		case "MemAvailable:":
			available = v * 1024
		}
	}
	n.memTotal, n.memUsed = total, total-min(available, total)
	return n, nil
}
