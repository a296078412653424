package etcd_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"minik8s/pkg/storage/etcd"
)

// startEtcd starts a bare embedded etcd for the store's tests.
func startEtcd(t testing.TB) *etcd.Store {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e, err := etcd.StartEmbedded(context.Background(), dir)
	if err != nil {
		t.Fatalf("embedded etcd: %v", err)
	}
	c, err := etcd.NewClient(e.Endpoints)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		e.Close()
	})
	return etcd.New(c)
}
