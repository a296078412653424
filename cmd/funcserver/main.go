// Command funcserver is the runtime inside every function pod: it serves the
// Python function in its code dir over HTTP (see package funcserver).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"minik8s/funcserver"
	"minik8s/pkg/cli/flags"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "funcserver:", err)
		os.Exit(1)
	}
}

// writeTerminationMessage leaves why the function could not start where
// the kubelet reads a container's termination message, if that file is
// there (it is in a pod): the pod's status, the function's Ready
// condition and the calls waiting for it then name the cause.
func writeTerminationMessage(path string, err error) {
	f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if ferr != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(err.Error())
}

func run() error {
	var cfg funcserver.Config
	var port, level, termLog, caFile string
	env := &envErrs{}
	flag.StringVar(&cfg.CodeDir, "code-dir", envOr("FUNC_CODE_DIR", funcserver.DefaultCodeDir), "directory holding function.py and preRun.sh (env FUNC_CODE_DIR)")
	flag.StringVar(&cfg.Host, "host", envOr("HOST", funcserver.DefaultHost), "address to listen on (env HOST)")
	flag.StringVar(&port, "port", os.Getenv("PORT"), "port to listen on, 0 for any free one (env PORT; required)")
	flag.IntVar(&cfg.Workers, "workers", env.int("FUNC_WORKERS", "workers", funcserver.DefaultWorkers), "Python workers, hence concurrent calls (env FUNC_WORKERS)")
	flag.DurationVar(&cfg.Timeout, "timeout", env.seconds("FUNC_TIMEOUT_SECONDS", "timeout", funcserver.DefaultTimeout), "timeout of one call (env FUNC_TIMEOUT_SECONDS, in seconds)")
	flag.StringVar(&cfg.Python, "python", funcserver.DefaultPython, "python interpreter")
	flag.StringVar(&cfg.Bash, "bash", funcserver.DefaultBash, "bash that runs preRun.sh")
	flag.BoolVar(&cfg.ExitOnFailure, "exit-on-failure", true, "exit when preRun or the import fails, leaving the cause in --termination-log (false: stay up, not ready)")
	flag.BoolVar(&cfg.Generic, "generic", os.Getenv("FUNC_GENERIC") == "true", "start with no function and serve the one a function runner hands it on --specialize-port (env FUNC_GENERIC=true); --code-dir must be writable")
	flag.IntVar(&cfg.SpecializePort, "specialize-port", env.int("SPECIALIZE_PORT", "specialize-port", 0), "port of the TLS specialise endpoint of a --generic server, 0 for any free one (env SPECIALIZE_PORT)")
	flag.StringVar(&caFile, "ca-file", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "the cluster CA, whose function runners alone may specialise a --generic server")
	flag.StringVar(&termLog, "termination-log", "/dev/termination-log", "where the cause of a failed start is written, if the file exists (the pod's termination message)")
	flags.LogLevel(flag.CommandLine, &level, envOr("LOG_LEVEL", "info"))
	flag.Parse()
	if err := env.check(); err != nil {
		return err
	}

	if err := flags.SetLogLevel(level); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	if port == "" {
		return fmt.Errorf("--port: required (or env PORT)")
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("--port: not a number: %q", port)
	}
	cfg.Port = n
	if cfg.Generic {
		if cfg.CAPEM, err = os.ReadFile(caFile); err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = funcserver.Run(ctx, cfg)
	var startErr *funcserver.StartError
	if errors.As(err, &startErr) {
		writeTerminationMessage(termLog, err)
	}
	return err
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// envErrs remembers env vars that do not parse; they are errors unless the
// flag they stand for was given.
type envErrs struct{ errs []envErr }

type envErr struct {
	flag string
	err  error
}

func (e *envErrs) int(key, flagName string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, envErr{flagName, fmt.Errorf("env %s: not a number: %q", key, v)})
		return def
	}
	return n
}

func (e *envErrs) seconds(key, flagName string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || secs <= 0 || secs > 1e9 {
		e.errs = append(e.errs, envErr{flagName, fmt.Errorf("env %s: want a positive number of seconds, got %q", key, v)})
		return def
	}
	return time.Duration(secs * float64(time.Second))
}

func (e *envErrs) check() error {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, ee := range e.errs {
		if !set[ee.flag] {
			return ee.err
		}
	}
	return nil
}
