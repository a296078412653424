package funcserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkInvoke measures calls of a trivial function over HTTP, one at a
// time and from parallel clients, in calls/s.
func BenchmarkInvoke(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := Config{CodeDir: copyFixture(b, "plain"), Listener: ln, Workers: DefaultWorkers, Python: python(b)}
	go func() { done <- Run(ctx, cfg) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("Run: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: waitFor}
	waitReady(b, client, url)

	call := func() error {
		resp, err := client.Post(url+PathInvoke, "text/plain", strings.NewReader("bench"))
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result":"hello bench"`) {
			return fmt.Errorf("answer %d %s %v", resp.StatusCode, body, err)
		}
		return nil
	}
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
	b.Run("parallel", func(b *testing.B) {
		// More clients than workers: calls queue, as under load.
		b.SetParallelism(2)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
}

func waitReady(b *testing.B, client *http.Client, url string) {
	deadline := time.Now().Add(waitFor)
	for {
		resp, err := client.Get(url + PathReady)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("not ready after %s: %v", waitFor, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
