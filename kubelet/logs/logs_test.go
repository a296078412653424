package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/pkg/errdefs"
)

func TestRotateCapsTheFile(t *testing.T) {
	path := Path(t.TempDir(), "c")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(strings.Repeat("a", 100))
	if err := Rotate(path, 50); err != nil {
		t.Fatal(err)
	}
	// The writer keeps its descriptor, as containerd's shim does.
	f.WriteString("after")
	cur, _ := os.ReadFile(path)
	old, _ := os.ReadFile(path + ".1")
	if string(cur) != "after" || len(old) != 100 {
		t.Errorf("after rotation: current %q, rotated %d bytes", cur, len(old))
	}
	if err := Rotate(path, 50); err != nil {
		t.Fatal(err)
	}
	if cur, _ := os.ReadFile(path); string(cur) != "after" {
		t.Errorf("a small file was rotated: %q", cur)
	}
	var buf bytes.Buffer
	if err := Stream(context.Background(), path, StreamOptions{TailLines: -1}, &buf, nil, nil); err != nil {
		t.Fatal(err)
	}
	if buf.String() != strings.Repeat("a", 100)+"after" {
		t.Errorf("Stream = %q", buf.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStreamFollowsUntilDone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	if err := os.WriteFile(path, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	finished := false
	out := &syncBuffer{}
	errc := make(chan error, 1)
	go func() {
		errc <- Stream(context.Background(), path, StreamOptions{Follow: true, TailLines: -1}, out, nil, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return finished
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "one") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("two\n")
	f.Close()
	mu.Lock()
	finished = true
	mu.Unlock()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stream did not end after done")
	}
	if out.String() != "one\ntwo\n" {
		t.Errorf("followed %q, want both lines", out.String())
	}
}

func TestStreamMissingLog(t *testing.T) {
	err := Stream(context.Background(), filepath.Join(t.TempDir(), "none.log"), StreamOptions{TailLines: -1}, &bytes.Buffer{}, nil, nil)
	if !errdefs.IsNotFound(err) {
		t.Errorf("err = %v, want NotFound", err)
	}
}

// TestStreamTail: --tail takes the last lines across the rotated part and
// the current file; a last line without its newline counts.
func TestStreamTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.log")
	if err := os.WriteFile(path+".1", []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		current string
		n       int
		want    string
	}{
		{"three\nfour\n", 3, "two\nthree\nfour\n"},
		{"three\nfour\n", 0, ""},
		{"three\nfour\n", 10, "one\ntwo\nthree\nfour\n"},
		{"three\nfour", 1, "four"},
		{"three\nfour", 2, "three\nfour"},
		{"", 1, "two\n"},
	} {
		if err := os.WriteFile(path, []byte(tc.current), 0o644); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Stream(context.Background(), path, StreamOptions{TailLines: tc.n}, &buf, nil, nil); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tc.want {
			t.Errorf("tail %d of %q: %q, want %q", tc.n, tc.current, buf.String(), tc.want)
		}
	}
}
