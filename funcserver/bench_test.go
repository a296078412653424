package funcserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/function"
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

// BenchmarkSpecialize measures a generic server's cold start: from the
// runner's specialise request to the first call's answer (the server
// started and ready as generic beforehand, as a warm pod is), beside
// starting a bare `python3 -c pass` in the same run.
func BenchmarkSpecialize(b *testing.B) {
	ca := newTestCA(b)
	// The runtime image's interpreter is Debian's; a python3 on PATH may
	// be a wrapper (pyenv's shim costs 150 ms a start).
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = python(b)
	}
	client := &http.Client{Timeout: waitFor}
	spec := &http.Client{Timeout: waitFor, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, Certificates: []tls.Certificate{ca.runner}}}}
	body, err := json.Marshal(plainSpec(plainCode))
	if err != nil {
		b.Fatal(err)
	}
	var cold, bare []time.Duration
	for b.Loop() {
		b.StopTimer()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		sln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		cfg := Config{CodeDir: b.TempDir(), Listener: ln, SpecializeListener: sln, Generic: true, CAPEM: ca.pem, Python: py}
		go func() { done <- Run(ctx, cfg) }()
		url := "http://" + ln.Addr().String()
		waitReady(b, client, url)
		time.Sleep(100 * time.Millisecond) // what a warm pod started before settles

		b.StartTimer()
		start := time.Now()
		resp, err := spec.Post("https://"+sln.Addr().String()+function.SpecializePath, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("specialise answered %d", resp.StatusCode)
		}
		resp, err = client.Post(url+PathInvoke, "text/plain", strings.NewReader("bench"))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		cold = append(cold, time.Since(start))
		b.StopTimer()

		t := time.Now()
		if err := exec.Command(py, "-c", "pass").Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t))
		cancel()
		<-done
		spec.CloseIdleConnections()
		b.StartTimer()
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	c, p := p50(cold), p50(bare)
	b.ReportMetric(c, "specialise-and-call-p50-ms")
	b.ReportMetric(p, "python-c-pass-p50-ms")
	b.ReportMetric(c/p, "ratio")
}
