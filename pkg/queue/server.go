// Package queue runs the NATS server with JetStream that queue triggers
// consume from, embedded in minik8s up (as the issue asks) and in tests.
package queue

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded NATS server with JetStream.
type Server struct {
	ns *server.Server
	// URL is where clients connect, e.g. nats://127.0.0.1:4222.
	URL string
}

// Start starts a NATS server with JetStream on host:port (port 0: a free
// one), keeping its streams in dir, and waits until it takes clients.
func Start(host string, port int, dir string) (*Server, error) {
	opts := &server.Options{
		ServerName: "minik8s", Host: host, Port: port,
		JetStream: true, StoreDir: dir,
		NoSigs: true, NoLog: true,
	}
	if port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("nats server on %s:%d did not start within 30s", host, port)
	}
	addr := ns.Addr().(*net.TCPAddr)
	return &Server{ns: ns, URL: "nats://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))}, nil
}

// Close stops the server and waits for it.
func (s *Server) Close() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}
