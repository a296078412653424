package test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/client"
)

// serviceProber sends a request to a Service every 100 ms while a node
// dies, recording when each was sent and how it ended.
type serviceProber struct {
	mu     sync.Mutex
	probes []serviceProbe
	stop   chan struct{}
	wg     sync.WaitGroup
}

type serviceProbe struct {
	at  time.Time // when the request was sent
	ok  bool
	err string // why it failed
}

// startServiceProber waits until the Service answers at url, then probes it.
func startServiceProber(t *testing.T, hc *http.Client, url string) *serviceProber {
	t.Helper()
	waitFor(t, "the service to answer", 30*time.Second, func() bool {
		resp, err := hc.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	p := &serviceProber{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			at := time.Now()
			resp, err := hc.Get(url)
			pr := serviceProbe{at: at, ok: err == nil && resp.StatusCode == 200}
			if err != nil {
				pr.err = err.Error()
			} else {
				pr.err = resp.Status
				resp.Body.Close()
			}
			p.mu.Lock()
			p.probes = append(p.probes, pr)
			p.mu.Unlock()
		}
	}()
	return p
}

// finish waits for 30 requests sent after moved, stops, and fails the
// test for every one of those that was not answered.
func (p *serviceProber) finish(t *testing.T, moved time.Time) {
	t.Helper()
	waitFor(t, "30 service requests after the pods moved", 60*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		after := 0
		for _, pr := range p.probes {
			if pr.at.After(moved) {
				after++
			}
		}
		return after >= 30
	})
	close(p.stop)
	p.wg.Wait()
	var failedAfter []string
	failedBefore, after := 0, 0
	for _, pr := range p.probes {
		switch {
		case !pr.at.After(moved) && !pr.ok:
			failedBefore++
		case pr.at.After(moved):
			after++
			if !pr.ok {
				failedAfter = append(failedAfter, pr.at.Format("15:04:05.000")+" "+pr.err)
			}
		}
	}
	t.Logf("%d requests failed while the node was dying, none may after its pods moved (%d sent since)", failedBefore, after)
	if len(failedAfter) > 0 {
		t.Errorf("%d of %d service requests failed after the pods had moved: %v", len(failedAfter), after, failedAfter)
	}
}

// waitMovedOff waits until the six web pods run ready on node-2 and node-3
// and the web Endpoints list exactly them: none of node-1's (nor any at
// node-1's address deadIP, when pods share their node's).
func waitMovedOff(t *testing.T, ctx context.Context, c *client.Client, deadIP string) {
	t.Helper()
	waitFor(t, "node-1's pods to run on node-2 and node-3", 120*time.Second, func() bool {
		m := readyPodsByNode(t, c)
		return m["node-2"]+m["node-3"] == 6
	})
	waitFor(t, "the web Endpoints to list no pod of node-1", 60*time.Second, func() bool {
		ep, ok := endpointsOf(t, ctx, c, "web")
		if !ok {
			return false
		}
		n := 0
		for _, sub := range ep.Subsets {
			for _, a := range sub.Addresses {
				if a.NodeName == "node-1" || deadIP != "" && a.IP == deadIP {
					return false
				}
				n++
			}
		}
		return n == 6
	})
}
