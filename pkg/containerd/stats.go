package containerd

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "github.com/containerd/containerd/metrics/types/v1"
	v2 "github.com/containerd/containerd/metrics/types/v2"
	"google.golang.org/protobuf/proto"
)

// Stats are a container's resource readings at one time, from its
// cgroup through containerd's task metrics (cgroup v1 or v2).
type Stats struct {
	Time time.Time
	// CPUUsageNanos is the CPU time used since the container started.
	CPUUsageNanos uint64
	// MemoryUsage is all memory charged to the container; WorkingSet
	// leaves out the inactive file cache (what Kubernetes reports and
	// evicts by).
	MemoryUsage      uint64
	MemoryWorkingSet uint64
}

// ContainerStats reads the running container id's CPU and memory.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (Stats, error) {
	ctx = nsCtx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return Stats{}, wrap(err, "container %s", id)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return Stats{}, wrap(err, "task of %s", id)
	}
	m, err := task.Metrics(ctx)
	if err != nil {
		return Stats{}, wrap(err, "metrics of %s", id)
	}
	st := Stats{Time: m.Timestamp.AsTime()}
	if st.Time.IsZero() {
		st.Time = time.Now()
	}
	switch url := m.Data.GetTypeUrl(); {
	case strings.HasSuffix(url, "cgroups.v1.Metrics"):
		var v v1.Metrics
		if err := proto.Unmarshal(m.Data.GetValue(), &v); err != nil {
			return Stats{}, fmt.Errorf("metrics of %s: %w", id, err)
		}
		st.CPUUsageNanos = v.GetCPU().GetUsage().GetTotal()
		st.MemoryUsage = v.GetMemory().GetUsage().GetUsage()
		st.MemoryWorkingSet = workingSet(st.MemoryUsage, v.GetMemory().GetTotalInactiveFile())
	case strings.HasSuffix(url, "cgroups.v2.Metrics"):
		var v v2.Metrics
		if err := proto.Unmarshal(m.Data.GetValue(), &v); err != nil {
			return Stats{}, fmt.Errorf("metrics of %s: %w", id, err)
		}
		st.CPUUsageNanos = v.GetCPU().GetUsageUsec() * 1000
		st.MemoryUsage = v.GetMemory().GetUsage()
		st.MemoryWorkingSet = workingSet(st.MemoryUsage, v.GetMemory().GetInactiveFile())
	default:
		return Stats{}, fmt.Errorf("metrics of %s: unknown kind %q", id, url)
	}
	return st, nil
}

func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}
