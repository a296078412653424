package mkctl

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWaitIndicatorNotATerminal(t *testing.T) {
	var b lockedBuffer
	ind := newWaitIndicator(&b, time.Now().Add(-3*time.Second))
	if ind.tty {
		t.Fatal("a buffer taken for a terminal")
	}
	ind.interval = time.Millisecond
	ind.Start("waiting for a pod of cold (cold start)")
	ind.SetLabel("waiting for cold, step 2")
	time.Sleep(20 * time.Millisecond) // frames would be drawn by now
	ind.Stop()
	ind.Stop()
	if got := b.String(); got != "waiting for a pod of cold (cold start) 3s...\n" {
		t.Errorf("indicator wrote %q, want one line", got)
	}
}

func TestWaitIndicatorTerminal(t *testing.T) {
	var b lockedBuffer
	ind := newWaitIndicator(&b, time.Now().Add(-2*time.Second))
	ind.tty, ind.interval = true, time.Millisecond
	ind.Start("waiting for f")
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(b.String(), "\r") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no frames: %q", b.String())
		}
		time.Sleep(time.Millisecond)
	}
	ind.SetLabel("waiting for g, step 2")
	for !strings.Contains(b.String(), "waiting for g, step 2 ") {
		if time.Now().After(deadline) {
			t.Fatalf("label not redrawn: %q", b.String())
		}
		time.Sleep(time.Millisecond)
	}
	ind.Stop()
	out := b.String()
	if !strings.HasPrefix(out, "\r"+spinnerFrames[0]+" waiting for f 2s…\x1b[K") {
		t.Errorf("first frame: %q", out[:min(len(out), 60)])
	}
	if !strings.HasSuffix(out, "\r\x1b[K") || strings.Contains(out, "\n") {
		t.Errorf("the indicator is not erased at the end, or wrote a newline: %q", out[max(0, len(out)-60):])
	}
	// Nothing after Stop.
	n := len(b.String())
	time.Sleep(10 * time.Millisecond)
	if len(b.String()) != n {
		t.Error("frames drawn after Stop")
	}
}

func TestWaitIndicatorStopWithoutStart(t *testing.T) {
	var b lockedBuffer
	newWaitIndicator(&b, time.Now()).Stop()
	if b.String() != "" {
		t.Errorf("wrote %q", b.String())
	}
}

// lockedBuffer is a buffer the indicator's goroutine writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
