package funcserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/subprocess"
)

const (
	preRunFile = "preRun.sh"
	// preRunTailBytes of preRun's output go into the not-ready reason.
	preRunTailBytes = 2048
	// preRunOutputWait is how long output is still collected after bash
	// exits; a daemon started by preRun may keep the pipe open for good.
	preRunOutputWait = time.Second
)

// runPreRun runs CODE_DIR/preRun.sh once with bash in the code dir. A missing
// or blank script is no error. Its output goes to funcserver's stderr.
func runPreRun(ctx context.Context, bash, codeDir string) error {
	src, err := os.ReadFile(filepath.Join(codeDir, preRunFile))
	if errors.Is(err, os.ErrNotExist) || err == nil && strings.TrimSpace(string(src)) == "" {
		log.Info("no preRun.sh to run")
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", preRunFile, err)
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("preRun output pipe: %w", err)
	}
	cmd := exec.CommandContext(ctx, bash, preRunFile)
	cmd.Dir = codeDir
	cmd.Stdout = pw
	cmd.Stderr = pw
	cmd.SysProcAttr = childAttr()
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }

	log.WithField("bash", bash).Info("running preRun.sh")
	start := time.Now()
	wait, err := subprocess.Start(cmd)
	pw.Close()
	if err != nil {
		pr.Close()
		return fmt.Errorf("start %s %s: %w", bash, preRunFile, err)
	}
	tail := &tailBuffer{max: preRunTailBytes}
	copied := make(chan struct{})
	go func() {
		// Daemons preRun left behind keep writing here: to the pod log.
		defer close(copied)
		defer pr.Close()
		_, _ = io.Copy(io.MultiWriter(os.Stderr, tail), pr)
	}()
	err = wait()
	select {
	case <-copied:
	case <-time.After(preRunOutputWait):
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("preRun.sh interrupted: %w", ctx.Err())
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && exitErr.ExitCode() >= 0 {
			return fmt.Errorf("preRun.sh failed with exit code %d; output ends with: %s", exitErr.ExitCode(), tail.String())
		}
		return fmt.Errorf("preRun.sh failed (%v); output ends with: %s", err, tail.String())
	}
	log.WithField("duration", time.Since(start).Round(time.Millisecond)).Info("preRun.sh done")
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(t.buf), ""))
}
