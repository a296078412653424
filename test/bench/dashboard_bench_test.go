package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// dashboardCluster is an apiserver with nodes node-1…node-3 and pods
// pod-0…pod-(n-1) spread over them, Running: objects only, no kubelet,
// which is all the page reads.
func dashboardCluster(b *testing.B, pods int) *framework.APIServer {
	b.Helper()
	s := framework.StartAPIServer(b)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		n := &api.Node{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("node-%d", i)},
			Status: api.NodeStatus{Capacity: api.ResourceList{"cpu": "2", "memory": "4Gi"},
				Conditions: []api.NodeCondition{{Type: "Ready", Status: "True"}}}}
		if _, err := s.Client.Nodes().Create(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < pods; i++ {
		setPhase(b, s, i, api.PodRunning, true)
	}
	return s
}

// setPhase creates pod-i (when create) or moves it to phase.
func setPhase(b *testing.B, s *framework.APIServer, i int, phase string, create bool) {
	b.Helper()
	ctx := context.Background()
	pods := s.Client.Pods("default")
	name := fmt.Sprintf("pod-%d", i)
	var p *api.Pod
	var err error
	if create {
		p, err = pods.Create(ctx, &api.Pod{ObjectMeta: api.ObjectMeta{Name: name},
			Spec: api.PodSpec{NodeName: fmt.Sprintf("node-%d", 1+i%3), Containers: []api.Container{{Name: "main", Image: "web:1"}}}})
	} else {
		p, err = pods.Get(ctx, name)
	}
	if err != nil {
		b.Fatal(err)
	}
	p.Status.Phase = phase
	if _, err := pods.UpdateStatus(ctx, p); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDashboardFirstPaint loads /ui/ in headless Chromium, side by
// side with no pods and with 100: from the navigation's start until the
// page has drawn everything its first lists returned (its
// "minik8s-ready" mark), and until the browser's first contentful paint.
func BenchmarkDashboardFirstPaint(b *testing.B) {
	for _, pods := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			s := dashboardCluster(b, pods)
			br := framework.StartBrowser(b)
			var ready, fcp time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := br.Do(30*time.Second, chromedp.Navigate("about:blank"), chromedp.Navigate(s.URL+"/ui/"),
					chromedp.WaitVisible(`body[data-ready="true"]`)); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				t := framework.Eval[[]float64](b, br, `[performance.getEntriesByName('minik8s-ready')[0].startTime,
					(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: -1}).startTime,
					document.querySelectorAll('[data-pod]').length]`)
				if int(t[2]) != pods {
					b.Fatalf("the page drew %v pods at its mark, want %d", t[2], pods)
				}
				if t[1] < 0 {
					b.Fatal("the browser reported no first contentful paint")
				}
				ready += time.Duration(t[0] * float64(time.Millisecond))
				fcp += time.Duration(t[1] * float64(time.Millisecond))
				b.StartTimer()
			}
			b.ReportMetric(float64(ready.Milliseconds())/float64(b.N), "ms-to-ready")
			b.ReportMetric(float64(fcp.Milliseconds())/float64(b.N), "ms-to-first-paint")
			checkPage(b, br)
		})
	}
}

// BenchmarkDashboardPodChange moves a pod between Running and Succeeded
// with 100 pods on the page and measures, side by side, when a client's
// watch gets the change and when the page shows it (a MutationObserver
// in the page notes the time; one clock, this machine's).
func BenchmarkDashboardPodChange(b *testing.B) {
	const pods = 100
	s := dashboardCluster(b, pods)
	br := framework.StartBrowser(b)
	if err := br.Do(30*time.Second, chromedp.Navigate(s.URL+"/ui/"), chromedp.WaitVisible(`body[data-ready="true"]`)); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, rv, err := s.Client.Pods("default").List(ctx, client.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	events := s.Client.Pods("default").Watch(ctx, client.ListOptions{ResourceVersion: rv})
	var watchLat, pageLat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % pods
		phase := api.PodSucceeded
		if (i/pods)%2 == 1 {
			phase = api.PodRunning
		}
		sel := fmt.Sprintf(`[data-pod="default/pod-%d"] .phase`, k)
		framework.Eval[bool](b, br, fmt.Sprintf(`(window.__shown = new Promise(done => {
			const shown = () => { const e = document.querySelector(%q); return e && e.textContent.startsWith(%q); };
			new MutationObserver((_, o) => { if (shown()) { o.disconnect(); done(Date.now()); } })
				.observe(document.getElementById('nodes'), {childList: true, subtree: true, characterData: true});
		}), true)`, sel, phase))
		start := time.Now()
		setPhase(b, s, k, phase, false)
		for seen := false; !seen; {
			ev, ok := <-events
			if !ok {
				b.Fatal("the client's watch ended")
			}
			if ev.Object.Name == fmt.Sprintf("pod-%d", k) && ev.Object.Status.Phase == phase {
				watchLat = append(watchLat, time.Since(start))
				seen = true
			}
		}
		shown := framework.Eval[float64](b, br, `window.__shown`)
		pageLat = append(pageLat, time.UnixMilli(int64(shown)).Sub(start))
	}
	b.StopTimer()
	b.ReportMetric(percentile(watchLat, 50), "watch-p50-ms")
	b.ReportMetric(percentile(pageLat, 50), "page-p50-ms")
	b.ReportMetric(percentile(pageLat, 100), "page-max-ms")
	checkPage(b, br)
}

func checkPage(b *testing.B, br *framework.Browser) {
	for _, p := range br.Problems() {
		b.Errorf("the page reported: %s", p)
	}
}
