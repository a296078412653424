package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"minik8s/pkg/errdefs"
)

func TestWrapErr(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error // nil: no class, a server error (500)
	}{
		{"server request too large", rpctypes.ErrRequestTooLarge, errdefs.ErrTooLarge},
		{"grpc request too large", rpctypes.ErrGRPCRequestTooLarge, errdefs.ErrTooLarge},
		{"server recv limit", status.Error(codes.ResourceExhausted, "grpc: received message larger than max (9437184 vs. 8912896)"), errdefs.ErrTooLarge},
		{"client send limit", fmt.Errorf("rpc: %w", status.Error(codes.ResourceExhausted, "trying to send message larger than max")), errdefs.ErrTooLarge},
		// Out of space: 500 with etcd's message, as Kubernetes answers.
		{"quota is not size", rpctypes.ErrNoSpace, nil},
		{"grpc quota is not size", rpctypes.ErrGRPCNoSpace, nil},
		{"rate is not size", rpctypes.ErrGRPCRequestTooManyRequests, errdefs.ErrUnavailable},
		{"compacted", rpctypes.ErrCompacted, errdefs.ErrGone},
		{"deadline", context.DeadlineExceeded, errdefs.ErrUnavailable},
		{"other", errors.New("connection refused"), errdefs.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wrapErr(tc.err)
			if tc.want == nil {
				if code, _ := errdefs.HTTPStatus(got); code != 500 || !strings.Contains(got.Error(), "mvcc: database space exceeded") {
					t.Fatalf("wrapErr(%v) = %v (%d), want a 500 with etcd's message", tc.err, got, code)
				}
				return
			}
			if !errors.Is(got, tc.want) {
				t.Fatalf("wrapErr(%v) = %v, want class %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestRoomy(t *testing.T) {
	for _, tc := range []struct {
		size, quota int64
		want        bool
	}{
		{size: 1 << 20, quota: 16 << 20, want: true},
		{size: 15 << 20, quota: 16 << 20, want: false}, // disarmed, the next write would raise it again
		{size: 16 << 20, quota: 16 << 20, want: false},
		{size: 0, quota: 0, want: false}, // quota not read
	} {
		if got := roomy(tc.size, tc.quota); got != tc.want {
			t.Errorf("roomy(%d, %d) = %v, want %v", tc.size, tc.quota, got, tc.want)
		}
	}
}

func TestAlarmsString(t *testing.T) {
	a := Alarms{Names: []string{"CORRUPT", AlarmNoSpace}, DBSize: 100, Quota: 100}
	s := a.String()
	for _, want := range []string{"CORRUPT alarm", "NOSPACE alarm", "quota 100", "deleted"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q does not say %q", s, want)
		}
	}
}
