package test

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// burnerDeployment is one pod requesting 100m of CPU that burns a whole
// core for burn seconds after it starts, then idles.
func burnerDeployment(burn int) *api.Deployment {
	one := int32(1)
	labels := map[string]string{"app": "burner"}
	script := fmt.Sprintf("import time\nend = time.time() + %d\nwhile time.time() < end:\n    pass\ntime.sleep(3600)\n", burn)
	return &api.Deployment{ObjectMeta: api.ObjectMeta{Name: "burner"},
		Spec: api.DeploymentSpec{Replicas: &one, Selector: &api.LabelSelector{MatchLabels: labels},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: labels}, Spec: api.PodSpec{Containers: []api.Container{{
				Name: "burn", Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", script},
				Resources: api.ResourceRequirements{Requests: api.ResourceList{"cpu": "100m", "memory": "32Mi"}},
			}}}}}}
}

// TestHPAScalesOnCPU: an HPA with a 50 % CPU target on a one-replica
// Deployment whose pods burn a core each (1000 % of their request) scales
// it to its maximum (the algorithm asks for ceil(1 × 1000/50) = 20) within
// 60 s, as fast as the rate limit lets it; once the burning stops it goes
// back to one after the stabilization window. The replica count over time
// is drawn as a PNG ($MINIK8S_ARTIFACTS, else the temp dir).
func TestHPAScalesOnCPU(t *testing.T) {
	cl := framework.StartCluster(t, controller.Config{HPASyncPeriod: 2 * time.Second}, "hpa", 1, 94)
	cl.Containerd.ImportPythonRuntime(t)
	s := cl.APIServer
	ctx := context.Background()
	if _, err := s.Client.Deployments("default").Create(ctx, burnerDeployment(20)); err != nil {
		t.Fatal(err)
	}
	one, fifty, window := int32(1), int32(50), int32(10)
	h := &api.HorizontalPodAutoscaler{ObjectMeta: api.ObjectMeta{Name: "burner"},
		Spec: api.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: api.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "burner"},
			MinReplicas:    &one, MaxReplicas: 4,
			Metrics: []api.MetricSpec{{Type: api.MetricSourceResource, Resource: &api.ResourceMetricSource{Name: "cpu",
				Target: api.MetricTarget{Type: api.MetricUtilization, AverageUtilization: &fifty}}}},
			Behavior: &api.HorizontalPodAutoscalerBehavior{ScaleDown: &api.HPAScalingRules{StabilizationWindowSeconds: &window}},
		}}
	if _, err := s.Client.HorizontalPodAutoscalers("default").Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// The replica count, once a second.
	var mu sync.Mutex
	var series []int32
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for rctx.Err() == nil {
			if d, err := s.Client.Deployments("default").Get(rctx, "burner"); err == nil {
				mu.Lock()
				series = append(series, *d.Spec.Replicas)
				mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	}()
	replicas := func() int32 {
		mu.Lock()
		defer mu.Unlock()
		if len(series) == 0 {
			return 0
		}
		return series[len(series)-1]
	}
	waitUntil(t, 60*time.Second, "the burner scaled to 4", func() bool { return replicas() == 4 })
	up := time.Since(start)
	out := mustKubectl(t, s, "burner", "get", "hpa")
	if !strings.Contains(out, "cpu: ") || !strings.Contains(out, "/50%") {
		t.Errorf("kubectl get hpa:\n%s", out)
	}
	waitUntil(t, 3*time.Minute, "the burner back to 1", func() bool { return replicas() == 1 })
	stop()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("scaled 1 → 4 in %v; back to 1 after %v; replicas each second: %v", up.Round(time.Second), time.Since(start).Round(time.Second), series)
	path := drawReplicas(t, series, 4)
	t.Logf("replica count over time: %s", path)
}

// drawReplicas draws a step chart of the replica counts, one a second.
func drawReplicas(t *testing.T, series []int32, most int32) string {
	const w, h, margin = 640, 240, 20
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	white, grey, blue := color.RGBA{255, 255, 255, 255}, color.RGBA{200, 200, 200, 255}, color.RGBA{30, 90, 200, 255}
	for x := 0; x < w; x++ {
		for y := 0; y < h; y++ {
			img.Set(x, y, white)
		}
	}
	yOf := func(n int32) int { return h - margin - int(n)*(h-2*margin)/int(most) }
	for n := int32(0); n <= most; n++ { // a grid line per replica
		for x := margin; x < w-margin; x++ {
			img.Set(x, yOf(n), grey)
		}
	}
	step := float64(w-2*margin) / float64(max(len(series)-1, 1))
	for i := 1; i < len(series); i++ {
		x0, x1 := margin+int(float64(i-1)*step), margin+int(float64(i)*step)
		for x := x0; x <= x1; x++ {
			for d := -1; d <= 1; d++ {
				img.Set(x, yOf(series[i-1])+d, blue)
			}
		}
		lo, hi := min(yOf(series[i-1]), yOf(series[i])), max(yOf(series[i-1]), yOf(series[i]))
		for y := lo; y <= hi; y++ {
			img.Set(x1, y, blue)
		}
	}
	dir := os.Getenv("MINIK8S_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, "hpa-replicas.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	return path
}
