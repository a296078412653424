package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// BenchmarkAPIServerCreate measures object creates per second through the
// HTTP API into embedded etcd, with concurrent clients.
func BenchmarkAPIServerCreate(b *testing.B) {
	s := framework.StartAPIServer(b)
	cms := s.Client.ConfigMaps("default")
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			name := fmt.Sprintf("cm-%d", n.Add(1))
			if _, err := cms.Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
}

// BenchmarkWatchLatency measures the time from a create's request to the
// watcher receiving its ADDED event.
func BenchmarkWatchLatency(b *testing.B) {
	s := framework.StartAPIServer(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cms := s.Client.ConfigMaps("default")
	events := cms.Watch(ctx, client.ListOptions{})
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("w-%d", i)
		t0 := time.Now()
		if _, err := cms.Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name}}); err != nil {
			b.Fatal(err)
		}
		for ev := range events {
			if ev.Type == api.Added && ev.Object.Name == name {
				lat = append(lat, time.Since(t0))
				break
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(percentile(lat, 50), "p50-ms")
	b.ReportMetric(percentile(lat, 99), "p99-ms")
}
