package etcd_test

import (
	"context"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage/etcd"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// TestSizeLimits: a value is stored as sent whatever it contains, and what
// etcd refuses for its size is ErrTooLarge (413), naming the size, whether
// the server or the client's gRPC limit refuses it; the same with a
// client in etcd's process, where no gRPC limit is on the way.
func TestSizeLimits(t *testing.T) {
	t.Run("network", func(t *testing.T) { testSizeLimits(t, etcdtest.Start(t)) })
	t.Run("in-process", func(t *testing.T) { testSizeLimits(t, etcdtest.StartInProcess(t)) })
}

func testSizeLimits(t *testing.T, store *etcd.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		value   string
		tooBig  bool
		wantMsg string
	}{
		// HTML-escaped, 2 MiB of < would take 12 MiB.
		{name: "html-chars", value: strings.Repeat("<>&", 2<<20/3)},
		{name: "above-server-limit", value: strings.Repeat("a", etcd.MaxRequestBytes+256<<10), tooBig: true, wantMsg: "bytes once encoded"},
		{name: "above-client-limit", value: strings.Repeat("a", etcd.MaxRequestBytes+2<<20), tooBig: true, wantMsg: "bytes once encoded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "/registry/configmaps/default/" + tc.name
			cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: tc.name, Namespace: "default"}, Data: map[string]string{"v": tc.value}}
			err := store.Create(ctx, key, cm, 0)
			if tc.tooBig {
				if !errdefs.IsTooLarge(err) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("create of %d bytes: %v, want too large naming the size", len(tc.value), err)
				}
				if code, _ := errdefs.HTTPStatus(err); code != 413 {
					t.Fatalf("create of %d bytes: status %d, want 413", len(tc.value), code)
				}
				return
			}
			if err != nil {
				t.Fatalf("create of %d bytes: %v", len(tc.value), err)
			}
			got := &api.ConfigMap{}
			if err := store.Get(ctx, key, got); err != nil {
				t.Fatal(err)
			}
			if got.Data["v"] != tc.value {
				t.Fatalf("read back %d bytes, stored %d", len(got.Data["v"]), len(tc.value))
			}
			// An update of the same size goes through as well.
			got.Data["v"] = tc.value + "<"
			if err := store.Update(ctx, key, got); err != nil {
				t.Fatalf("update: %v", err)
			}
		})
	}
}
