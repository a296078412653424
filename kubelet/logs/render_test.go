package logs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRender(t *testing.T) {
	since := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, line string
		opts       StreamOptions
		want       string
		shown      bool
	}{
		{"whole line", "2026-11-27T10:00:01.5Z stdout F hello", StreamOptions{}, "hello\n", true},
		{"piece", "2026-11-27T10:00:01.5Z stderr P hel", StreamOptions{}, "hel", true},
		{"empty line", "2026-11-27T10:00:01.5Z stdout F", StreamOptions{}, "\n", true},
		{"timestamps", "2026-11-27T10:00:01.5Z stdout F hello", StreamOptions{Timestamps: true}, "2026-11-27T10:00:01.5Z hello\n", true},
		{"after since", "2026-11-27T10:00:01Z stdout F new", StreamOptions{Since: since}, "new\n", true},
		{"before since", "2026-11-27T09:59:59Z stdout F old", StreamOptions{Since: since}, "", false},
		{"kept as written", "plain output", StreamOptions{Since: since, Timestamps: true}, "plain output\n", true},
		{"bad stream", "2026-11-27T10:00:01Z stdin F x", StreamOptions{}, "2026-11-27T10:00:01Z stdin F x\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := render([]byte(tc.line), tc.opts)
			if string(out) != tc.want || ok != tc.shown {
				t.Errorf("render(%q) = %q, %v; want %q, %v", tc.line, out, ok, tc.want, tc.shown)
			}
		})
	}
}

func TestStreamRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "main.log")
	data := "2026-11-27T09:59:00Z stdout F old\n" +
		"2026-11-27T10:00:01Z stdout F new one\n" +
		"2026-11-27T10:00:02Z stderr P new\n" +
		"2026-11-27T10:00:02Z stderr F  two\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		opts StreamOptions
		want string
	}{
		{"all", StreamOptions{TailLines: -1}, "old\nnew one\nnew two\n"},
		{"since", StreamOptions{TailLines: -1, Since: since}, "new one\nnew two\n"},
		{"tail", StreamOptions{TailLines: 1}, "new two\n"},
		{"timestamps and tail", StreamOptions{TailLines: 1, Timestamps: true}, "2026-11-27T10:00:02Z new2026-11-27T10:00:02Z  two\n"},
		{"since and tail beyond", StreamOptions{TailLines: 5, Since: since}, "new one\nnew two\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Stream(context.Background(), path, tc.opts, &out, nil, nil); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("Stream = %q, want %q", out.String(), tc.want)
			}
		})
	}
}
