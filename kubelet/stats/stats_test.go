package stats

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"minik8s/pkg/containerd"
)

type fakeSource map[string]containerd.Stats

func (f fakeSource) ContainerStats(_ context.Context, id string) (containerd.Stats, error) {
	st, ok := f[id]
	if !ok {
		return containerd.Stats{}, os.ErrNotExist
	}
	return st, nil
}

func TestSamplerRates(t *testing.T) {
	proc := t.TempDir()
	write := func(busy, idle int) {
		if err := os.WriteFile(filepath.Join(proc, "stat"), []byte("cpu  "+itoa(busy)+" 0 0 "+itoa(idle)+" 0 0 0 0 0 0\ncpu0 1 2 3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, "meminfo"), []byte("MemTotal:  1000 kB\nMemFree: 100 kB\nMemAvailable:   400 kB\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	src := fakeSource{"a": {Time: t0, CPUUsageNanos: 1e9, MemoryWorkingSet: 5 << 20, MemoryUsage: 6 << 20}}
	s := New(src)
	s.procDir = proc
	write(100, 100)
	s.Sample(context.Background(), []string{"a", "gone"})
	if cpu, mem, ok := s.Usage("a"); !ok || cpu.UsageNanoCores != nil || *mem.WorkingSetBytes != 5<<20 {
		t.Fatalf("after one sample: %+v %+v %v", cpu, mem, ok)
	}
	if _, _, ok := s.Usage("gone"); ok {
		t.Errorf("a container that could not be read has usage")
	}
	// Half a core over two seconds.
	src["a"] = containerd.Stats{Time: t0.Add(2 * time.Second), CPUUsageNanos: 2e9, MemoryWorkingSet: 7 << 20}
	write(150, 150)
	s.Sample(context.Background(), []string{"a"})
	cpu, mem, _ := s.Usage("a")
	if cpu.UsageNanoCores == nil || *cpu.UsageNanoCores != 5e8 || *mem.WorkingSetBytes != 7<<20 {
		t.Errorf("after two samples: %v, %v", cpu.UsageNanoCores, *mem.WorkingSetBytes)
	}
	ncpu, nmem := s.Node()
	if ncpu.UsageNanoCores == nil || *nmem.WorkingSetBytes != 600*1024 {
		t.Errorf("node: %+v %+v", ncpu, nmem)
	}
	s.Sample(context.Background(), nil)
	if _, _, ok := s.Usage("a"); ok {
		t.Errorf("a container no longer running is still sampled")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
