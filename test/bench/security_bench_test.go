package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// BenchmarkPodStartSecurityContext measures pod start (bound to the node
// → Ready) with the default confinement every pod gets (seccomp's
// RuntimeDefault filter, the default capability set) side by side with
// the same pod unconfined (seccompProfile Unconfined, all capabilities):
// the pods alternate on one kubelet, at least 20 of each, and the ratio
// of their medians is the cost of the default.
func BenchmarkPodStartSecurityContext(b *testing.B) {
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportPythonRuntime(b)
	as := framework.StartAPIServer(b)
	framework.StartKubelet(b, as.URL, ctd, "sec-node", "127.0.0.30")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := as.Client.Pods("default")
	events := pods.Watch(ctx, client.ListOptions{})

	unconfined := &corev1.SecurityContext{
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
		Capabilities:   &corev1.Capabilities{Add: []corev1.Capability{"ALL"}},
	}
	n := max(b.N, 20)
	var confinedReady, unconfinedReady []time.Duration
	b.ResetTimer()
	for i := 0; i < 2*n; i++ {
		name := fmt.Sprintf("sec-%d-%d", b.N, i)
		var sc *corev1.SecurityContext
		if i%2 == 1 {
			sc = unconfined
		}
		grace := int64(1)
		p := &api.Pod{
			TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
			Spec: api.PodSpec{NodeName: "sec-node", TerminationGracePeriodSeconds: &grace,
				Containers: []api.Container{{Name: "c", Image: containerdtest.PythonRuntimeImage,
					Command: []string{"python3", "-c", "import time; time.sleep(600)"}, SecurityContext: sc}}},
		}
		_, ready := startPod(ctx, b, pods, events, p)
		if sc == nil {
			confinedReady = append(confinedReady, ready)
		} else {
			unconfinedReady = append(unconfinedReady, ready)
		}
		b.StopTimer()
		if _, err := pods.Delete(ctx, name, client.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	def, unc := percentile(confinedReady, 50), percentile(unconfinedReady, 50)
	b.ReportMetric(def, "default-ready-p50-ms")
	b.ReportMetric(unc, "unconfined-ready-p50-ms")
	b.ReportMetric(percentile(confinedReady, 90), "default-ready-p90-ms")
	b.ReportMetric(percentile(unconfinedReady, 90), "unconfined-ready-p90-ms")
	b.ReportMetric(def/unc, "default/unconfined")
}
