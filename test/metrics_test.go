package test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// TestTopPodsAndNodes: the kubelet reads its containers' CPU and memory
// from their cgroups through containerd; the metrics API serves them and
// the node's; mkctl top and the real kubectl top show a CPU-burning pod
// burning, an idle one not, and the memory the burner holds.
func TestTopPodsAndNodes(t *testing.T) {
	cl := framework.StartCluster(t, controller.Config{}, "top", 1, 92)
	cl.Containerd.ImportPythonRuntime(t)
	s := cl.APIServer
	ctx := context.Background()
	burner := pythonPod("burner", "top-1", "block = bytearray(64 << 20)\nfor i in range(0, len(block), 4096):\n    block[i] = 1\nwhile True:\n    pass\n")
	idle := pythonPod("idle", "top-1", "import time\ntime.sleep(600)\n")
	for _, p := range []*api.Pod{burner, idle} {
		if _, err := s.Client.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	row := regexp.MustCompile(`(?m)^(\S+)\s+(\d+)m\s+(\d+)Mi\s*$`)
	usage := map[string][2]int{}
	waitUntil(t, 90*time.Second, "mkctl top pods showing the burner burning", func() bool {
		code, out, _ := mk(t, "--server", s.URL, "top", "pods")
		if code != 0 {
			return false
		}
		for _, m := range row.FindAllStringSubmatch(out, -1) {
			cpu, _ := strconv.Atoi(m[2])
			mem, _ := strconv.Atoi(m[3])
			usage[m[1]] = [2]int{cpu, mem}
		}
		return usage["burner"][0] >= 300 && usage["idle"] != [2]int{}
	})
	t.Logf("mkctl top pods: burner %dm %dMi, idle %dm %dMi", usage["burner"][0], usage["burner"][1], usage["idle"][0], usage["idle"][1])
	if b, i := usage["burner"], usage["idle"]; b[1] < 60 || i[0] >= 100 || i[0] >= b[0] {
		t.Errorf("burner uses %dm %dMi, idle %dm %dMi: want the burner's 64 MiB held and the idle pod near no CPU", b[0], b[1], i[0], i[1])
	}
	out := mustKubectl(t, s, "burner", "top", "pod")
	if !strings.Contains(out, "CPU(cores)") || !strings.Contains(out, "idle") {
		t.Errorf("kubectl top pod:\n%s", out)
	}
	if code, out, errOut := mk(t, "--server", s.URL, "top", "nodes"); code != 0 || !strings.Contains(out, "top-1") || !strings.Contains(out, "%") {
		t.Errorf("mkctl top nodes: %d\n%s%s", code, out, errOut)
	}
	mustKubectl(t, s, "top-1", "top", "node")
}
