// Package etcdtest starts a private embedded etcd for a test, as
// net/http/httptest starts a server: in the test's own directory, on
// loopback, stopped when the test ends.
package etcdtest

import (
	"context"
	"path/filepath"
	"testing"

	"minik8s/pkg/storage/etcd"
)

// Start starts an embedded etcd and returns the store on it; both close
// when t ends (after the cleanups registered later, such as an apiserver
// serving from the store).
func Start(t testing.TB) *etcd.Store {
	t.Helper()
	return start(t, false)
}

// StartInProcess is Start with the store's reads and writes calling the
// etcd in this process, as an apiserver with its own etcd does.
func StartInProcess(t testing.TB) *etcd.Store {
	t.Helper()
	return start(t, true)
}

func start(t testing.TB, inProcess bool) *etcd.Store {
	t.Helper()
	e, err := etcd.StartEmbedded(context.Background(), filepath.Join(t.TempDir(), "etcd"))
	if err != nil {
		t.Fatalf("embedded etcd: %v", err)
	}
	c, err := etcd.NewClient(e.Endpoints)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	s := etcd.New(c)
	if inProcess {
		s = etcd.NewInProcess(c, e.Client())
	}
	t.Cleanup(func() {
		s.Close()
		e.Close()
	})
	return s
}
