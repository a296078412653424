package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The test binary plays the logger when asked to (the shim's fds 3-5).
func TestMain(m *testing.M) {
	if os.Getenv("MINIK8S_LOGGER_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLoggerWritesAllBeforeItEnds: the shim sends SIGTERM when the task is
// deleted; what the container wrote must still reach the log, and the
// logger ends at the pipes' end.
func TestLoggerWritesAllBeforeItEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	outR, outW := pipe(t)
	errR, errW := pipe(t)
	readyR, readyW := pipe(t)
	cmd := exec.Command(os.Args[0], "path", path)
	cmd.Env = append(os.Environ(), "MINIK8S_LOGGER_TEST_MAIN=1")
	cmd.ExtraFiles = []*os.File{outR, errR, readyW}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outR.Close()
	errR.Close()
	readyW.Close()
	if _, err := readyR.Read(make([]byte, 1)); err == nil {
		t.Fatal("the ready pipe carried data; want it closed")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < 500; i++ {
		line := fmt.Sprintf("line %d of the container's output", i)
		want = append(want, line)
		fmt.Fprintln(outW, line)
	}
	fmt.Fprint(errW, "a last line without its end")
	outW.Close()
	errW.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("logger: %v (want it to end at the pipes' end, not at SIGTERM)", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		// TIME STREAM TAG CONTENT
		parts := strings.SplitN(rec, " ", 4)
		if len(parts) != 4 {
			t.Fatalf("record %q is not TIME STREAM TAG CONTENT", rec)
		}
		if parts[1] == "stderr" {
			if parts[2] != "P" || parts[3] != "a last line without its end" {
				t.Errorf("stderr record %q", rec)
			}
			continue
		}
		got = append(got, parts[3])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the log holds %d of %d stdout lines", len(got), len(want))
	}
	if !strings.Contains(string(data), " stderr P ") {
		t.Errorf("the unfinished stderr line is missing")
	}
}

func pipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}
