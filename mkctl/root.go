// Package mkctl is the kubectl-like command line of minik8s: apply, get,
// describe and delete over every kind of api.Resources. Run executes it in
// process, so tests drive the real commands against a real apiserver.
package mkctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
)

// commands builds every subcommand. A new command lives in its own file and
// is registered here with one line.
var commands = []func(*Options) *cobra.Command{
	newApplyCommand,
	newCreateCommand,
	newGetCommand,
	newDescribeCommand,
	newDeleteCommand,
	newFuncCommand,
	newLogsCommand,
	newImageCommand,
	newAuthCommand,
	newTriggerCommand,
	newRolloutCommand,
	newTopCommand,
}

// Options are the settings every command shares.
type Options struct {
	// Server (--server or $MINIK8S_SERVER) and Kubeconfig (--kubeconfig)
	// pick the apiserver and the credentials, as kubectl does.
	Server     string
	Kubeconfig string
	// Namespace is -n; NamespaceSet says whether the user gave it.
	Namespace    string
	NamespaceSet bool

	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	client *client.Client
}

// Client is the apiserver client of --server and --kubeconfig (see
// client.Load), made before any command runs.
func (o *Options) Client() *client.Client {
	if o.client == nil {
		o.client = client.New(o.Server)
	}
	return o.client
}

// loadClient makes the client, failing on a kubeconfig that cannot be read.
func (o *Options) loadClient() error {
	if o.client != nil {
		return nil
	}
	c, err := client.Load(o.Server, o.Kubeconfig)
	if err != nil {
		return err
	}
	o.client = c
	return nil
}

// NewRootCommand returns the mkctl command tree writing to stdout and
// stderr and reading stdin (for -f -).
func NewRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	o := &Options{In: stdin, Out: stdout, ErrOut: stderr}
	root := &cobra.Command{
		Use:   "mkctl",
		Short: "mkctl controls a minik8s cluster",
		Long: "mkctl controls a minik8s cluster: it applies manifests and gets, describes and deletes\n" +
			"objects of every kind (" + kindList() + ").",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			o.NamespaceSet = cmd.Flags().Changed("namespace")
			return o.loadClient()
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&o.Server, "server", client.ExplicitServer(), "address of the apiserver (or set MINIK8S_SERVER; default: the kubeconfig's, else "+client.DefaultServer+")")
	root.PersistentFlags().StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	root.PersistentFlags().StringVarP(&o.Namespace, "namespace", "n", api.DefaultNamespace, "namespace of the request")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{cmd: cmd.CommandPath(), err: err}
	})
	for _, newCmd := range commands {
		root.AddCommand(newCmd(o))
	}
	return root
}

// Run runs mkctl with args (without the program name) and returns the exit
// code: 0 on success, 1 on any error, which it prints as one line.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return RunWithInput(ctx, args, os.Stdin, stdout, stderr)
}

// RunWithInput is Run with an explicit stdin.
func RunWithInput(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := NewRootCommand(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	if !errors.Is(err, errReported) {
		fmt.Fprintln(stderr, FormatError(err))
	}
	return 1
}

// errReported: the command has printed its errors itself (one per failed
// object) and only the exit code is left to set.
var errReported = errors.New("errors reported")

// kindArg requires the KIND argument of get, describe and delete.
func kindArg(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("you must specify the kind of object: %s", kindList())}
	}
	return nil
}

// usageError is a mistake in the command line.
type usageError struct {
	cmd string
	err error
}

func (e usageError) Error() string {
	return fmt.Sprintf("%v (see '%s --help')", e.err, e.cmd)
}

// opError says what mkctl was doing when the apiserver refused.
type opError struct {
	context string
	err     error
}

func (e *opError) Error() string { return e.context + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// FormatError renders an error as mkctl prints it: answers of the apiserver
// as "Error from server (Reason): ...", naming the field of an invalid
// object, everything else as "error: ...".
func FormatError(err error) string {
	var ue usageError
	if errors.As(err, &ue) {
		return "error: " + ue.Error()
	}
	var se *client.StatusError
	if errors.As(err, &se) {
		msg := trimClass(strings.TrimSpace(se.Message))
		if se.Field != "" && !strings.Contains(msg, se.Field) {
			msg = se.Field + ": " + msg
		}
		var oe *opError
		if errors.As(err, &oe) {
			msg = oe.context + msg
		}
		return fmt.Sprintf("Error from server (%s): %s", se.Reason, oneLine(msg))
	}
	var te *client.TransportError
	if errors.As(err, &te) {
		return fmt.Sprintf("error: cannot reach the apiserver at %s (set --server or MINIK8S_SERVER): %v", te.Server, te.Err)
	}
	return "error: " + oneLine(err.Error())
}

// errorClasses end the messages of the apiserver (": not found"), which
// the "(Reason)" of the printed line already says.
var errorClasses = []error{errdefs.ErrNotFound, errdefs.ErrAlreadyExists, errdefs.ErrInvalid, errdefs.ErrBadRequest,
	errdefs.ErrConflict, errdefs.ErrUnavailable, errdefs.ErrTooLarge, errdefs.ErrGone, errdefs.ErrTimeout}

func trimClass(msg string) string {
	for _, c := range errorClasses {
		if t, ok := strings.CutSuffix(msg, ": "+c.Error()); ok {
			return t
		}
	}
	return msg
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// shown is an argument or result as a line of text shows it: binary bytes
// are counted, not printed.
func shown(b api.Bytes) string {
	if utf8.ValidString(string(b)) {
		return string(b)
	}
	return fmt.Sprintf("<%d bytes, not UTF-8>", len(b))
}

// lookupKind finds the resource a command line names ("po", "pods", "Pod").
func lookupKind(name string) (api.Resource, error) {
	res, ok := api.LookupResource(name)
	if !ok {
		return api.Resource{}, fmt.Errorf("the server doesn't have a resource type %q (known: %s)", name, kindList())
	}
	return res, nil
}

// kindList names every kind with its short names, for help and errors.
func kindList() string {
	parts := make([]string, 0, len(api.Resources))
	for _, r := range api.Resources {
		short := ""
		for _, s := range r.ShortNames {
			if s != strings.ToLower(r.Kind) {
				short = s
				break
			}
		}
		if short != "" {
			parts = append(parts, r.Name+" ("+short+")")
		} else {
			parts = append(parts, r.Name)
		}
	}
	return strings.Join(parts, ", ")
}

// namespaceFor is the namespace a command acts in for res.
func (o *Options) namespaceFor(res api.Resource) string {
	if !res.Namespaced {
		return ""
	}
	return o.Namespace
}

// kindName is how mkctl names an object in messages: "pod/web".
func kindName(res api.Resource, name string) string {
	return strings.ToLower(res.Kind) + "/" + name
}
