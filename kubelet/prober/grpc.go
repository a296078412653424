package prober

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcCheck asks the gRPC health service at addr about service (the
// server's own health when empty), over plain text, as Kubernetes' gRPC
// probe does: SERVING passes.
func grpcCheck(ctx context.Context, addr, service string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("minik8s-probe"))
	if err != nil {
		return fmt.Errorf("gRPC probe of %s: %w", addr, err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return fmt.Errorf("gRPC probe of %s: %w", addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("gRPC probe of %s: service %q is %s", addr, service, resp.GetStatus())
	}
	return nil
}
