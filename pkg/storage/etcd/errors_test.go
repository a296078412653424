package etcd

import (
	"context"
	"errors"
	"fmt"
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
		want error
	}{
		{"server request too large", rpctypes.ErrRequestTooLarge, errdefs.ErrTooLarge},
		{"grpc request too large", rpctypes.ErrGRPCRequestTooLarge, errdefs.ErrTooLarge},
		{"server recv limit", status.Error(codes.ResourceExhausted, "grpc: received message larger than max (9437184 vs. 8912896)"), errdefs.ErrTooLarge},
		{"client send limit", fmt.Errorf("rpc: %w", status.Error(codes.ResourceExhausted, "trying to send message larger than max")), errdefs.ErrTooLarge},
		{"quota is not size", rpctypes.ErrNoSpace, errdefs.ErrUnavailable},
		{"grpc quota is not size", rpctypes.ErrGRPCNoSpace, errdefs.ErrUnavailable},
		{"rate is not size", rpctypes.ErrGRPCRequestTooManyRequests, errdefs.ErrUnavailable},
		{"compacted", rpctypes.ErrCompacted, errdefs.ErrGone},
		{"deadline", context.DeadlineExceeded, errdefs.ErrUnavailable},
		{"other", errors.New("connection refused"), errdefs.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wrapErr(tc.err); !errors.Is(got, tc.want) {
				t.Fatalf("wrapErr(%v) = %v, want class %v", tc.err, got, tc.want)
			}
		})
	}
}
