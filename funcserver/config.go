package funcserver

import (
	"io"
	"net"
	"os"
	"time"

	"minik8s/pkg/errdefs"
)

// Defaults of Config.
const (
	DefaultCodeDir      = "/func"
	DefaultHost         = "127.0.0.1"
	DefaultWorkers      = 4
	DefaultTimeout      = 60 * time.Second
	DefaultPython       = "python3"
	DefaultBash         = "bash"
	DefaultMaxBodyBytes = 16 << 20
)

// Config of one funcserver.
type Config struct {
	// CodeDir holds function.py and maybe preRun.sh (the ConfigMap volume).
	CodeDir string
	Host    string
	// Port to listen on; 0 picks a free one.
	Port int
	// Listener, when set, is served instead of listening on Host:Port.
	Listener net.Listener
	// Workers is the most Python workers, hence concurrent calls; further
	// calls queue. One is started first, more as calls need them.
	Workers int
	// Timeout bounds a call from its arrival, queueing included, unless the
	// request's X-Func-Timeout-Seconds says otherwise.
	Timeout time.Duration
	Python  string
	Bash    string
	// MaxBodyBytes bounds a call's argument.
	MaxBodyBytes int64
	// FuncName is the function's name, in each call's context; default
	// $FUNC_NAME. A generic server is told it when specialised.
	FuncName string
	// Generic starts a server with no function: it serves the one it is
	// handed on SpecializeListener (or SpecializePort), over TLS, by a
	// function runner of the cluster CA in CAPEM (see specialize.go).
	// Once specialised it serves as any other, and after a restart it
	// serves the function it was handed (kept in CodeDir, which must be
	// writable and outlive the process: an emptyDir).
	Generic            bool
	SpecializePort     int
	SpecializeListener net.Listener
	CAPEM              []byte
	// PodName is reported in every answer; default $POD_NAME or the host name.
	PodName string
	// WorkerEnv is added to the workers' environment ("KEY=VALUE"): a pod
	// has it from its container's env; tests and benchmarks set it here.
	WorkerEnv []string
	// ExitOnFailure makes a failing preRun or import end Run with a
	// *StartError, as a pod's runtime does so that its pod says why.
	ExitOnFailure bool
	// WorkerLog is where workers write outside calls: the pod log,
	// os.Stderr unless set.
	WorkerLog io.Writer
}

func (c Config) withDefaults() Config {
	if c.CodeDir == "" {
		c.CodeDir = DefaultCodeDir
	}
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Python == "" {
		c.Python = DefaultPython
	}
	if c.Bash == "" {
		c.Bash = DefaultBash
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.PodName == "" {
		c.PodName = os.Getenv("POD_NAME")
	}
	if c.FuncName == "" {
		c.FuncName = os.Getenv("FUNC_NAME")
	}
	if c.PodName == "" {
		c.PodName, _ = os.Hostname()
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Workers < 1:
		return errdefs.Invalid("workers", "must be at least 1, got %d", c.Workers)
	case c.Timeout < 0:
		return errdefs.Invalid("timeout", "must be positive, got %s", c.Timeout)
	case c.Port < 0 || c.Port > 65535:
		return errdefs.Invalid("port", "must be in 0..65535, got %d", c.Port)
	case c.SpecializePort < 0 || c.SpecializePort > 65535:
		return errdefs.Invalid("specializePort", "must be in 0..65535, got %d", c.SpecializePort)
	case c.Generic && len(c.CAPEM) == 0:
		return errdefs.Invalid("caPEM", "a generic server needs the cluster CA: only the function runners it names may specialise it")
	case c.MaxBodyBytes < 0:
		return errdefs.Invalid("maxBodyBytes", "must be positive, got %d", c.MaxBodyBytes)
	}
	return nil
}
