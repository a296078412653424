package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// get answers a GET of url: status and body.
func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestEtcdFullRecovers: with the embedded etcd's quota reached, writes
// answer etcd's "database space exceeded" (500, as Kubernetes answers it),
// /readyz fails naming the NOSPACE alarm while /healthz stays ok, and once
// the objects are deleted the apiserver compacts, defragments and disarms
// the alarm on its own: writes come back within a minute.
func TestEtcdFullRecovers(t *testing.T) {
	t.Parallel()
	const quota = 16 << 20
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) { c.EtcdQuotaBytes = quota })
	ctx := context.Background()
	cms := s.Client.ConfigMaps("default")
	value := strings.Repeat("x", 900<<10)
	var names []string
	var full []byte
	for i := 0; full == nil; i++ {
		if i > 2*quota/len(value) {
			t.Fatalf("%d ConfigMaps of %d bytes stored under a quota of %d: the quota does not hold", i, len(value), quota)
		}
		name := fmt.Sprintf("fill-%d", i)
		body, _ := json.Marshal(&api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name}, Data: map[string]string{"v": value}})
		code, data := httpDo(t, "POST", s.URL+"/api/v1/namespaces/default/configmaps", "application/json", body)
		switch code {
		case http.StatusCreated:
			names = append(names, name)
		case http.StatusInternalServerError:
			full = data
		default:
			t.Fatalf("create %s: %d %s", name, code, data)
		}
	}
	if !bytes.Contains(full, []byte("mvcc: database space exceeded")) {
		t.Fatalf("write into a full etcd: %s, want etcd's \"database space exceeded\"", full)
	}
	t.Logf("etcd full after %d ConfigMaps of %d bytes", len(names), len(value))

	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := getBody(t, s.URL+"/readyz")
		if code == http.StatusServiceUnavailable && strings.Contains(body, "NOSPACE") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with etcd full: %d %q, want 503 naming the NOSPACE alarm", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, body := getBody(t, s.URL+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz with etcd full: %d %q, want ok (reads are served; a restart frees nothing)", code, body)
	}

	for _, name := range names {
		if _, err := cms.Delete(ctx, name, client.DeleteOptions{}); err != nil {
			t.Fatalf("delete %s with etcd full: %v", name, err)
		}
	}
	deadline = time.Now().Add(time.Minute)
	for {
		_, err := cms.Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "after"}, Data: map[string]string{"v": "1"}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused a minute after the objects were deleted: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if code, body := getBody(t, s.URL+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz once writes came back: %d %q", code, body)
	}
}

// TestFuncBacklogByteBound: past --max-pending-call-bytes of arguments in
// asynchronous calls not ended, a call gets 429 with Retry-After, naming
// the bound, and nothing is stored; once a pending call is gone, calls
// are taken again.
func TestFuncBacklogByteBound(t *testing.T) {
	const bound = 1 << 20
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) { c.MaxPendingCallBytes = bound })
	funcTemplate(t, s, "stuck", "def run(arg):\n    return arg\n", "RETURN", "RETURN", nil) // no runner: calls wait
	arg := strings.Repeat("a", 200<<10)                                                     // held twice: 400 KiB a call
	post := func() (*http.Response, []byte) {
		resp, err := http.Post(s.URL+"/api/funcs/stuck", "text/plain", strings.NewReader(arg))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, data
	}
	for i := range 2 {
		if resp, data := post(); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("call %d, within the bound: %d %s", i, resp.StatusCode, data)
		}
	}
	resp, data := post()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(data), "--max-pending-call-bytes 1048576") {
		t.Fatalf("call past the bound: %d %v %s, want 429 with Retry-After naming the bound", resp.StatusCode, resp.Header, data)
	}
	ctx := context.Background()
	items, _, err := s.Client.FuncInstances("default").List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("%d instances stored after 2 calls taken and 1 refused", len(items))
	}
	if _, err := s.Client.FuncInstances("default").Delete(ctx, items[0].Name, client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, data := post()
		if resp.StatusCode == http.StatusAccepted {
			return
		}
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("call once a pending call is gone: %d %s", resp.StatusCode, data)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
