package funcinstancegc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// startAPIServer runs a real apiserver on embedded etcd (test/framework
// cannot be imported here: it imports the controller manager).
func startAPIServer(t *testing.T) *client.Client {
	t.Helper()
	store := etcdtest.Start(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := apiserver.Config{AuditLogPath: filepath.Join(t.TempDir(), "audit.log")}
	go func() { done <- apiserver.New(cfg, store).Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("apiserver: %v", err)
		}
	})
	return client.New("http://" + l.Addr().String())
}

// Through a real apiserver: instances made by calling a function and ended
// as a runner ends them; the GC deletes the oldest finished beyond the
// budget and keeps the others and the unfinished one.
func TestCollectsThroughTheAPIServer(t *testing.T) {
	c := startAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: api.FuncAPIVersionV2}, ObjectMeta: api.ObjectMeta{Name: "fn"},
		Spec: api.FuncSpec{Name: "fn", Function: base64.StdEncoding.EncodeToString([]byte("def run(arg):\n    return arg\n"))}}
	if _, err := c.Funcs("default").Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 4)
	for i := range ids {
		resp, err := http.Post(c.Server()+"/api/funcs/fn", "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			InstanceID string `json:"instanceId"`
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("async call: %d %v", resp.StatusCode, err)
		}
		ids[i] = out.InstanceID
	}
	// The first three end, in the order 2, 0, 1; the last runs on.
	base := time.Now().UTC().Add(-time.Hour)
	for i, order := range map[int]int{2: 0, 0: 1, 1: 2} {
		fi, err := c.FuncInstances("default").Get(ctx, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		done := base.Add(time.Duration(order) * time.Minute)
		fi.Status.Phase, fi.Status.Runner, fi.Status.Result, fi.Status.CompletionTime = api.InstanceSucceeded, "test", "x", &done
		fi.Status.Next = nil
		if _, err := c.FuncInstances("default").UpdateStatus(ctx, fi); err != nil {
			t.Fatal(err)
		}
	}

	gc := New(c, 1)
	runDone := make(chan struct{})
	go func() { defer close(runDone); gc.Run(ctx, 2) }()
	defer func() { cancel(); <-runDone }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		items, _, err := c.FuncInstances("default").List(ctx, client.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		left := map[string]bool{}
		for _, fi := range items {
			left[fi.Name] = true
		}
		if len(items) == 2 && left[ids[1]] && left[ids[3]] {
			break // the newest finished and the one running
		}
		if time.Now().After(deadline) {
			t.Fatalf("left %v; want only %s (newest finished) and %s (running)", left, ids[1], ids[3])
		}
		time.Sleep(20 * time.Millisecond)
	}
	// What the GC caches is slim.
	if fi, ok := gc.instances.Lister().Get("default", ids[1]); !ok || fi.Spec.Arg != "" || fi.Status.Result != "" {
		t.Errorf("cached instance %+v (%v), want one without argument and result", fi, ok)
	}
}
