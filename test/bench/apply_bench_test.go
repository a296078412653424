package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"minik8s/test/framework"
	"minik8s/test/harness"
)

// manifest is n objects in namespace ns: ConfigMaps, Services and
// Deployments in turn, as a chart's output mixes them.
func manifest(ns string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)
	for i := 1; i < n; i++ {
		b.WriteString("---\n")
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n  namespace: %s\n  labels: {app: a%d}\ndata:\n  key: value-%d\n  other: |\n    a longer\n    value\n", i, ns, i, i)
		case 1:
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata:\n  name: s%d\n  namespace: %s\nspec:\n  selector: {app: a%d}\n  ports:\n  - port: 80\n    targetPort: 8080\n", i, ns, i)
		case 2:
			fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d%d\n  namespace: %s\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: a%d}\n  template:\n    metadata:\n      labels: {app: a%d}\n    spec:\n      containers:\n      - name: c\n        image: minik8s/python-runtime:latest\n        env:\n        - {name: A, value: \"1\"}\n        ports:\n        - containerPort: 8080\n", i, ns, i, i)
		}
	}
	return b.String()
}

// BenchmarkApplyNoop measures `kubectl apply` of an unchanged 50-object
// manifest, server-side (--server-side: one apply patch per object, merged
// by the server's field manager) side by side with client-side (kubectl
// reads each object and, finding nothing changed, sends nothing): the real
// kubectl against one apiserver, the two alternating, at least 10 of
// each; the ratio of their medians is server-side apply's cost.
func BenchmarkApplyNoop(b *testing.B) {
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		harness.NeedE2E(b, "kubectl is not installed: %v", err)
	}
	s := framework.StartAPIServer(b)
	dir := b.TempDir()
	home := filepath.Join(dir, "home")
	kubectl := func(args ...string) time.Duration {
		b.Helper()
		cmd := exec.Command(bin, append([]string{"--server", s.URL}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return time.Since(start)
	}
	files := map[string]string{}
	for _, mode := range []string{"csa", "ssa"} {
		files[mode] = filepath.Join(dir, mode+".yaml")
		if err := os.WriteFile(files[mode], []byte(manifest(mode, 50)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	csa := []string{"apply", "-f", files["csa"]}
	ssa := []string{"apply", "--server-side", "-f", files["ssa"]}
	kubectl(csa...)
	kubectl(ssa...)
	n := max(b.N, 10)
	var csaTimes, ssaTimes []time.Duration
	b.ResetTimer()
	for i := 0; i < n; i++ {
		csaTimes = append(csaTimes, kubectl(csa...))
		ssaTimes = append(ssaTimes, kubectl(ssa...))
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	c, sv := med(csaTimes), med(ssaTimes)
	b.ReportMetric(c, "client-side-ms")
	b.ReportMetric(sv, "server-side-ms")
	b.ReportMetric(sv/c, "server/client")
}
