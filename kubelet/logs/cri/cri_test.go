package cri

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLogWritesRecords(t *testing.T) {
	var out bytes.Buffer
	long := strings.Repeat("x", MaxRecord+10)
	if err := Log(&out, strings.NewReader("one\n\nthree"), strings.NewReader(long+"\n")); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr []string
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		rec := Parse([]byte(line))
		if !rec.OK || time.Since(rec.Time) > time.Minute {
			t.Fatalf("not a record: %q", line)
		}
		tag := "F"
		if rec.Partial {
			tag = "P"
		}
		if strings.Contains(line, " stdout ") {
			stdout = append(stdout, tag+":"+string(rec.Content))
		} else {
			stderr = append(stderr, tag+":"+strings.TrimLeft(string(rec.Content), "x")+":"+string(rune('0'+len(rec.Content)/MaxRecord)))
		}
	}
	if got := strings.Join(stdout, "|"); got != "F:one|F:|P:three" {
		t.Errorf("stdout records: %s", got)
	}
	// The long line is cut at MaxRecord: a piece, then its end.
	if got := strings.Join(stderr, "|"); got != "P::1|F::0" {
		t.Errorf("stderr records: %s", got)
	}
}
