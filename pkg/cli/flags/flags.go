// Package flags declares, once, the command-line flags that several
// minik8s binaries take, as k3s's pkg/cli/cmds does: each registration
// function gives a flag its name, type, help text and (where every binary
// agrees) its default, and binds it to a field of the caller's own
// Config. Where binaries legitimately differ on a default (a port, a
// socket), the caller passes it. A flag only one binary takes stays in
// that binary's main.
//
// The package imports no component: the defaults that components own
// come in as arguments.
package flags

import (
	"flag"
	"strings"

	log "github.com/sirupsen/logrus"
)

// LogLevel registers --log-level.
func LogLevel(fs *flag.FlagSet, p *string, def string) {
	fs.StringVar(p, "log-level", def, "log level (debug, info, warn, error)")
}

// SetLogLevel applies a --log-level to the process's logger.
func SetLogLevel(level string) error {
	l, err := log.ParseLevel(level)
	if err != nil {
		return err
	}
	log.SetLevel(l)
	return nil
}

// list is a comma-separated flag bound to a []string; the last one given
// wins, and an empty one is no list.
type list []string

func (l *list) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *list) Set(v string) error {
	*l = nil
	if v != "" {
		*l = strings.Split(v, ",")
	}
	return nil
}
