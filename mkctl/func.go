package mkctl

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
)

func newFuncCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "func",
		Aliases: []string{"fn", "function"},
		Short:   "Create, call and inspect serverless functions",
		Long: "Create, update and delete function templates, call them and read what a call did.\n" +
			"A function is Python source defining run(arg) and maybe check(ret): after run, the\n" +
			"chain goes on to --left if check(ret) is true (or there is no check), else to --right;\n" +
			"RETURN ends it. Or it is an image in any language (--image) serving the same contract\n" +
			"over HTTP. 'mkctl get funcs' lists functions; 'mkctl apply -f' takes manifests.",
		Example: "  mkctl func create hello -f hello.py\n" +
			"  mkctl func invoke hello -d world --wait\n" +
			"  ID=$(mkctl func invoke hello -d world) && mkctl func result $ID && mkctl func logs $ID",
	}
	cmd.AddCommand(newFuncCreateCommand(o), newFuncUpdateCommand(o), newFuncDeleteCommand(o),
		newFuncInvokeCommand(o), newFuncResultCommand(o), newFuncLogsCommand(o), newFuncListCommand(o), newFuncTraceCommand(o),
		newFuncRevisionsCommand(o), newFuncRollbackCommand(o))
	return cmd
}

// oneArg requires exactly one argument, named what in the message.
func oneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("you must give the %s", what)}
		case len(args) > 1:
			return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("give one %s, not %q", what, args)}
		}
		return nil
	}
}

// templateFlags are the settings of a function template on the command
// line; only those given change a template.
type templateFlags struct {
	code, image, preRun, left, right string
	min, max, init, timeout          int
	v1                               bool
	pluginsPre, pluginsPost, files   []string
	memory, cpu                      string
	idleTimeout                      time.Duration
	config, outputs, traffic         []string
	fs                               *pflag.FlagSet
}

func (t *templateFlags) register(fs *pflag.FlagSet) {
	t.fs = fs
	fs.StringVarP(&t.code, "filename", "f", "", "file with the Python source (defines run(arg), maybe check(ret))")
	fs.StringVar(&t.image, "image", "", "instead of -f: an image whose entrypoint serves the function's HTTP contract on $PORT (any language)")
	fs.StringVar(&t.preRun, "pre-run", "", "shell script run once when a pod of the function starts")
	fs.StringVar(&t.left, "left", "", "function called with run's result when check is true or absent (RETURN ends the chain)")
	fs.StringVar(&t.right, "right", "", "function called when check is false (RETURN ends the chain)")
	fs.IntVar(&t.min, "min", 0, "fewest pods kept when idle (minInstanceNum)")
	fs.IntVar(&t.max, "max", 0, "most pods (maxInstanceNum)")
	fs.IntVar(&t.init, "init", 0, "pods started at once (initInstanceNum)")
	fs.IntVar(&t.timeout, "timeout", 0, "seconds one run may take (default 60)")
	fs.BoolVar(&t.v1, "v1", false, "apiVersion v1: every call step runs in a fresh pod (--v1=false: v2, a warm pool)")
	fs.StringSliceVar(&t.pluginsPre, "plugin-pre", nil, "plugins run before every call, in order: tracing, metrics, log-context, or a module of --file (comma-separated or repeated)")
	fs.StringSliceVar(&t.pluginsPost, "plugin-post", nil, "plugins run after every call, in order")
	fs.StringArrayVar(&t.files, "file", nil, "a file shipped beside function.py (a module, a user plugin), named as on disk; repeat for more")
	fs.StringVar(&t.memory, "memory", "", "memory each pod requests and may use at most, e.g. 128Mi (context[\"memory-limit\"]; empty removes it)")
	fs.StringVar(&t.cpu, "cpu", "", "CPU each pod requests and may use at most, e.g. 250m or 1 (empty removes it)")
	fs.DurationVar(&t.idleTimeout, "idle-timeout", 0, "how long without a call before idle pods are removed, e.g. 5m (0: the cluster's default, 60s)")
	fs.StringArrayVar(&t.outputs, "output", nil, "an output minik8s.send(NAME, data) sends to: NAME=function:F, NAME=subject:S or NAME=url:U; NAME- removes it; repeat for more")
	fs.StringSliceVar(&t.traffic, "traffic", nil, "split the calls between revisions: REV=PERCENT or latest=PERCENT, adding up to 100 (comma-separated or repeated; the whole split is replaced; latest=100 undoes it)")
	fs.StringArrayVar(&t.config, "config", nil, "KEY=VALUE the function reads as context[\"config\"] (under its triggers' and apps'); KEY- removes it; repeat for more")
}

// given reports whether any template setting is on the command line.
func (t *templateFlags) given() bool {
	for _, n := range []string{"filename", "image", "pre-run", "left", "right", "min", "max", "init", "timeout", "v1", "plugin-pre", "plugin-post", "file",
		"memory", "cpu", "idle-timeout", "config", "output", "traffic"} {
		if t.fs.Changed(n) {
			return true
		}
	}
	return false
}

// apply writes the given settings into f, reading and encoding the files.
// -f and --image replace each other: a function is Python source or an
// image, and the Python settings mean nothing to an image.
func (t *templateFlags) apply(f *api.Func) error {
	if t.fs.Changed("filename") && t.fs.Changed("image") {
		return errors.New("give either -f (Python source) or --image, not both")
	}
	if t.fs.Changed("filename") {
		src, err := readSource("-f", t.code)
		if err != nil {
			return err
		}
		f.Spec.Function, f.Spec.Image = src, ""
	}
	if t.fs.Changed("image") {
		if t.image == "" {
			return errors.New("--image: no image given")
		}
		f.Spec.Image, f.Spec.Function, f.Spec.PreRun, f.Spec.Runtime = t.image, "", "", ""
	}
	if t.fs.Changed("pre-run") {
		src, err := readSource("--pre-run", t.preRun)
		if err != nil {
			return err
		}
		f.Spec.PreRun = src
	}
	if t.fs.Changed("left") {
		f.Spec.Left = t.left
	}
	if t.fs.Changed("right") {
		f.Spec.Right = t.right
	}
	for _, n := range []struct {
		flag string
		v    int
		dst  **int
	}{{"min", t.min, &f.Spec.MinInstanceNum}, {"max", t.max, &f.Spec.MaxInstanceNum},
		{"init", t.init, &f.Spec.InitInstanceNum}, {"timeout", t.timeout, &f.Spec.TimeoutSeconds}} {
		if t.fs.Changed(n.flag) {
			v := n.v
			*n.dst = &v
		}
	}
	if t.fs.Changed("plugin-pre") || t.fs.Changed("plugin-post") {
		if f.Spec.Plugins == nil {
			f.Spec.Plugins = &api.FuncPlugins{}
		}
		if t.fs.Changed("plugin-pre") {
			f.Spec.Plugins.Pre = t.pluginsPre
		}
		if t.fs.Changed("plugin-post") {
			f.Spec.Plugins.Post = t.pluginsPost
		}
	}
	for _, path := range t.files {
		src, err := readSource("--file", path)
		if err != nil {
			return err
		}
		if f.Spec.Files == nil {
			f.Spec.Files = map[string]string{}
		}
		f.Spec.Files[filepath.Base(path)] = src
	}
	t.applyResources(f)
	if t.fs.Changed("idle-timeout") {
		f.Spec.IdleTimeoutSeconds = nil
		if t.idleTimeout != 0 {
			// Rounded up: a timeout under a second is not none.
			secs := int((t.idleTimeout + time.Second - 1) / time.Second)
			f.Spec.IdleTimeoutSeconds = &secs
		}
	}
	for _, o := range t.outputs {
		if err := applyOutput(f, o); err != nil {
			return err
		}
	}
	if t.fs.Changed("traffic") {
		traffic, err := parseTraffic(t.traffic)
		if err != nil {
			return err
		}
		f.Spec.Traffic = traffic
	}
	for _, kv := range t.config {
		if k, ok := strings.CutSuffix(kv, "-"); ok && !strings.Contains(kv, "=") {
			delete(f.Spec.Config, k)
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--config %q: want KEY=VALUE (or KEY- to remove it)", kv)
		}
		if f.Spec.Config == nil {
			f.Spec.Config = map[string]string{}
		}
		f.Spec.Config[k] = v
	}
	if t.fs.Changed("v1") {
		f.APIVersion = api.FuncAPIVersionV2
		if t.v1 {
			f.APIVersion = api.FuncAPIVersionV1
		}
	}
	return nil
}

// applyOutput sets (or, with NAME-, removes) one output of f as --output
// gives it: NAME=function:F, NAME=subject:S or NAME=url:U.
func applyOutput(f *api.Func, arg string) error {
	drop := func(name string) {
		f.Spec.Outputs = slices.DeleteFunc(f.Spec.Outputs, func(o api.FuncOutput) bool { return o.Name == name })
	}
	if name, ok := strings.CutSuffix(arg, "-"); ok && !strings.Contains(arg, "=") {
		drop(name)
		return nil
	}
	name, target, _ := strings.Cut(arg, "=")
	kind, to, ok := strings.Cut(target, ":")
	out := api.FuncOutput{Name: name}
	switch {
	case !ok || name == "" || to == "":
	case kind == "function":
		out.Function = to
	case kind == "subject":
		out.Subject = to
	case kind == "url":
		out.URL = to
	}
	if out.Function+out.Subject+out.URL == "" {
		return fmt.Errorf("--output %q: want NAME=function:F, NAME=subject:S or NAME=url:U (or NAME- to remove it)", arg)
	}
	drop(name)
	f.Spec.Outputs = append(f.Spec.Outputs, out)
	return nil
}

// applyResources sets what --memory and --cpu say as both the request
// and the limit of each pod (Lambda's one memory size); an empty value
// removes them.
func (t *templateFlags) applyResources(f *api.Func) {
	for _, r := range []struct{ flag, name, v string }{{"memory", api.ResourceMemory, t.memory}, {"cpu", api.ResourceCPU, t.cpu}} {
		if !t.fs.Changed(r.flag) {
			continue
		}
		if f.Spec.Resources == nil {
			f.Spec.Resources = &api.ResourceRequirements{}
		}
		res := f.Spec.Resources
		if r.v == "" {
			delete(res.Requests, r.name)
			delete(res.Limits, r.name)
			continue
		}
		if res.Requests == nil {
			res.Requests = api.ResourceList{}
		}
		if res.Limits == nil {
			res.Limits = api.ResourceList{}
		}
		res.Requests[r.name], res.Limits[r.name] = r.v, r.v
	}
	if r := f.Spec.Resources; r != nil && len(r.Requests)+len(r.Limits) == 0 {
		f.Spec.Resources = nil
	}
}

// readSource reads a source file and base64-encodes it, as the API wants.
func readSource(flag, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%s: no file given", flag)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	return base64.StdEncoding.EncodeToString(data), nil
}

func newFuncCreateCommand(o *Options) *cobra.Command {
	t := &templateFlags{}
	cmd := &cobra.Command{
		Use:   "create NAME (-f CODE.py [--pre-run SETUP.sh] | --image IMAGE) [--left F] [--right F] [--min N --max N --init N] [--timeout S] [--memory Q] [--cpu Q] [--idle-timeout D] [--config K=V]... [--output NAME=KIND:TARGET]... [--v1]",
		Short: "Create a function template",
		Long: "Create a function from a Python file, or from an image in any language whose entrypoint\n" +
			"serves the runtime's HTTP contract on $PORT. Without --left and --right the chain ends after\n" +
			"it (RETURN). --v1 runs every call in a fresh pod; the default (v2) keeps a pool of pods\n" +
			"that grows with the calls (up to --max) and shrinks when idle (down to --min).",
		Example: "  mkctl func create classify -f classify.py --left double --right shout\n" +
			"  mkctl func create double -f double.py --min 1 --max 5\n" +
			"  mkctl func create shout --image minik8s/perl-example:latest --left classify",
		Args: oneArg("name of the function"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !t.fs.Changed("filename") && !t.fs.Changed("image") {
				return usageError{cmd: cmd.CommandPath(), err: errors.New("must give the function's source with -f FILE, or its image with --image IMAGE")}
			}
			name := args[0]
			f := &api.Func{
				TypeMeta:   api.TypeMeta{APIVersion: api.FuncAPIVersionV2, Kind: "Func"},
				ObjectMeta: api.ObjectMeta{Name: name, Namespace: o.Namespace},
				Spec:       api.FuncSpec{Name: name},
			}
			if err := t.apply(f); err != nil {
				return err
			}
			if _, err := o.funcTemplates().Create(cmd.Context(), f); err != nil {
				if errdefs.IsAlreadyExists(err) {
					return fmt.Errorf("func %q already exists in namespace %q: change it with 'mkctl func update %s ...' or 'mkctl apply -f FILE'",
						name, o.Namespace, name)
				}
				return err
			}
			fmt.Fprintf(o.Out, "func/%s created\n", name)
			return nil
		},
	}
	t.register(cmd.Flags())
	return cmd
}

func newFuncUpdateCommand(o *Options) *cobra.Command {
	t := &templateFlags{}
	cmd := &cobra.Command{
		Use:   "update NAME [-f CODE.py | --image IMAGE] [--pre-run SETUP.sh] [--left F] [--right F] [--min N --max N --init N] [--timeout S] [--memory Q] [--cpu Q] [--idle-timeout D] [--config K=V|K-]... [--output NAME=KIND:TARGET|NAME-]... [--traffic REV=P,latest=P] [--v1[=false]]",
		Short: "Change a function template: only the settings given change",
		Long: "Change the settings given on the command line and keep the others. New code (or a new\n" +
			"image) reaches the function's pods as they are replaced. -f makes an image function a\n" +
			"Python one again; --image drops the Python source and pre-run script.",
		Example: "  mkctl func update double -f double.py\n  mkctl func update classify --right RETURN --max 3\n" +
			"  mkctl func update double --traffic 1=90,latest=10   # a canary: 10% on the new code\n" +
			"  mkctl func update shout --image minik8s/perl-example:latest",
		Args: oneArg("name of the function"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !t.given() {
				return usageError{cmd: cmd.CommandPath(), err: errors.New("nothing to change: give -f, --image, --pre-run, --left, --right, --min, --max, --init, --timeout, --traffic or --v1")}
			}
			return o.updateFunc(cmd.Context(), args[0], t)
		},
	}
	t.register(cmd.Flags())
	return cmd
}

func (o *Options) updateFunc(ctx context.Context, name string, t *templateFlags) error {
	a := o.funcTemplates()
	for attempt := 1; ; attempt++ {
		f, err := a.Get(ctx, name)
		if err != nil {
			return err
		}
		if err := t.apply(f); err != nil {
			return err
		}
		if _, err := a.Update(ctx, f); err != nil {
			if errdefs.IsConflict(err) && attempt < maxApplyAttempts {
				continue
			}
			return err
		}
		fmt.Fprintf(o.Out, "func/%s updated\n", name)
		return nil
	}
}

func newFuncDeleteCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME...",
		Short:   "Delete function templates (and with them their pods, Service and ConfigMap)",
		Example: "  mkctl func delete classify double shout",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{cmd: cmd.CommandPath(), err: errors.New("you must give the name of the function")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			a := o.funcTemplates()
			failed := false
			for _, name := range args {
				if err := a.Delete(cmd.Context(), name); err != nil {
					fmt.Fprintln(o.ErrOut, FormatError(err))
					failed = true
					continue
				}
				fmt.Fprintf(o.Out, "func %q deleted\n", name)
			}
			if failed {
				return errReported
			}
			return nil
		},
	}
}

// invokeFlags are the flags of func invoke.
type invokeFlags struct {
	data     string
	dataFile string
	wait     string
	again    bool
	as       string
	log      bool
}

// defaultWait is how long --wait without a value waits.
const defaultWait = 60 * time.Second

// argument is the call's raw argument: -d DATA, -d @FILE, --data-file FILE
// ('-' is stdin), or nothing.
func (f *invokeFlags) argument(fs *pflag.FlagSet, stdin io.Reader) ([]byte, error) {
	if fs.Changed("data") && fs.Changed("data-file") {
		return nil, errors.New("give either -d or --data-file, not both")
	}
	file := f.dataFile
	if fs.Changed("data") {
		rest, ok := strings.CutPrefix(f.data, "@")
		if !ok {
			return []byte(f.data), nil
		}
		file = rest
	}
	switch {
	case file == "" && !fs.Changed("data-file") && !fs.Changed("data"):
		return []byte{}, nil
	case file == "":
		return nil, errors.New("no file named after '@' or --data-file")
	case file == "-":
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading the argument from stdin: %w", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the argument: %w", err)
	}
	return data, nil
}

// waitFor is how long to wait for the result: 0 without --wait.
func (f *invokeFlags) waitFor(fs *pflag.FlagSet) (time.Duration, error) {
	if !fs.Changed("wait") {
		return 0, nil
	}
	d, err := time.ParseDuration(f.wait)
	if err != nil {
		n, nerr := strconv.Atoi(f.wait)
		if nerr != nil {
			return 0, fmt.Errorf("--wait=%s is not a duration such as 30s or 2m", f.wait)
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		return 0, fmt.Errorf("--wait=%s: must be more than 0", f.wait)
	}
	return d, nil
}

func newFuncInvokeCommand(o *Options) *cobra.Command {
	f := &invokeFlags{}
	cmd := &cobra.Command{
		Use:   "invoke NAME [-d DATA | -d @FILE | --data-file FILE | --again] [--wait[=DURATION]] [--log] [--as TRIGGER|api]",
		Short: "Call a function, any function",
		Long: "Call a function with DATA as its argument (raw bytes). Without --wait, print the id of\n" +
			"the call's instance at once; with it, wait (60s unless given) and print the result,\n" +
			"or fail with the function's error. 'mkctl func result ID' and 'mkctl func logs ID'\n" +
			"show a call later. Without -d, the argument is read from stdin, or, when stdin is a\n" +
			"terminal, edited in $EDITOR (starting from the previous payload; saving it empty\n" +
			"cancels the call); --again sends the\n" +
			"previous payload (kept per user in ~/.minik8s/payloads). A function reached only by\n" +
			"a schedule or a queue is called with a synthetic event of that kind (--as names the\n" +
			"trigger, --as api makes a plain call). --log prints what the call printed to stderr.",
		Example: "  mkctl func invoke classify -d 21 --wait\n" +
			"  mkctl func invoke classify --data-file input.txt --wait=2m\n" +
			"  echo hello | mkctl func invoke shout --wait --log\n" +
			"  mkctl func invoke nightly-report --wait      # a schedule-only function, once\n" +
			"  mkctl func invoke classify --again --wait",
		Args: func(cmd *cobra.Command, args []string) error {
			// pflag takes "--wait 30s" as --wait and an argument "30s".
			if len(args) == 2 && cmd.Flags().Changed("wait") {
				if _, err := time.ParseDuration(args[1]); err == nil {
					return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("write --wait=%s (with '=') to wait %s", args[1], args[1])}
				}
			}
			return oneArg("name of the function")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			wait, err := f.waitFor(cmd.Flags())
			if err != nil {
				return usageError{cmd: cmd.CommandPath(), err: err}
			}
			fn, fs := args[0], cmd.Flags()
			header, template, err := o.invokeAs(cmd.Context(), fn, f.as)
			if err != nil {
				return err
			}
			arg, err := f.payload(o, fn, fs.Changed, template)
			if err == nil && arg == nil {
				arg, err = f.argument(fs, o.In)
			}
			if err != nil {
				return err
			}
			arg = scheduleTick(arg, header)
			if err := savePayload(o.Namespace, fn, arg); err != nil {
				fmt.Fprintf(o.ErrOut, "warning: the payload is not kept for --again: %v\n", err)
			}
			opts := client.InvokeOptions{Header: header}
			if f.log && wait == 0 {
				wait = defaultWait
			}
			if wait > 0 {
				return o.invokeAndWait(cmd.Context(), fn, arg, wait, opts, f.log)
			}
			{
				v, err := o.funcCalls().Invoke(cmd.Context(), fn, arg, opts)
				if err != nil {
					return err
				}
				fmt.Fprintln(o.Out, v.InstanceID)
				fmt.Fprintf(o.ErrOut, "see the result with: mkctl func result %s\n", v.InstanceID)
				return nil
			}
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.data, "data", "d", "", "the argument; @FILE reads it from FILE, @- from stdin")
	fs.StringVar(&f.dataFile, "data-file", "", "read the argument from FILE ('-' is stdin)")
	fs.StringVar(&f.wait, "wait", "", "wait for the result, at most this long (60s if no value is given)")
	fs.Lookup("wait").NoOptDefVal = defaultWait.String()
	fs.BoolVar(&f.again, "again", false, "send the payload of the previous invoke of this function again")
	fs.StringVar(&f.as, "as", "", "call as this trigger would (a synthetic event of its kind); 'api' for a plain call")
	fs.BoolVar(&f.log, "log", false, "wait, then print what each step printed to stderr")
	return cmd
}

// firstWait is how long the first request waits for the result before
// mkctl shows that it is waiting: a call that ends sooner prints nothing
// but its result.
const firstWait = time.Second

// invokeAndWait calls fn and waits up to wait for the result, showing a
// waiting indicator on stderr once the call takes a while.
func (o *Options) invokeAndWait(ctx context.Context, fn string, arg []byte, wait time.Duration, opts client.InvokeOptions, withLog bool) error {
	start := time.Now()
	deadline := start.Add(wait)
	calls := o.funcCalls()
	opts.Wait = min(firstWait, wait)
	first, err := calls.Invoke(ctx, fn, arg, opts)
	if err != nil {
		return err
	}
	v := *first
	if !finished(v) {
		ind := newWaitIndicator(o.ErrOut, start)
		w := &waitLabeler{o: o, fn: fn}
		ind.Start(w.label(ctx, v))
		v, err = followInstance(ctx, calls, v, deadline, func(v api.FuncInstanceView) { ind.SetLabel(w.label(ctx, v)) })
		ind.Stop()
		if err != nil {
			return err
		}
	}
	if !finished(v) {
		return fmt.Errorf("function %q still %s after %s: see its result later with 'mkctl func result %s'", fn, v.Status, wait, v.InstanceID)
	}
	if withLog {
		defer o.printCallLogs(ctx, v.InstanceID)
	}
	if v.Status == api.InstanceFailed {
		fmt.Fprintln(o.ErrOut, "Error: "+callError(fn, v))
		return errReported
	}
	out := string(v.Result)
	if out != "" && !strings.HasSuffix(out, "\n") && utf8.ValidString(out) {
		// Text ends its line; bytes are written as they are (> file.bin).
		out += "\n"
	}
	_, err = io.WriteString(o.Out, out)
	return err
}

// followInstance follows the instance until it ends or deadline passes,
// telling update of every view; at the deadline it returns the last view
// read, unfinished.
func followInstance(ctx context.Context, calls *client.FuncCalls, v api.FuncInstanceView, deadline time.Time,
	update func(api.FuncInstanceView)) (api.FuncInstanceView, error) {
	fctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	last := v
	done, err := calls.Follow(fctx, v.InstanceID, func(next *api.FuncInstanceView) {
		last = *next
		update(last)
	})
	switch {
	case err == nil:
		return *done, nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return last, nil
	}
	return last, err
}

// callError is the one line that says why a call failed, naming the function.
func callError(fn string, v api.FuncInstanceView) string {
	msg := oneLine(v.Error)
	if msg == "" {
		msg = "failed without an error message"
	}
	if !strings.HasPrefix(msg, "function ") {
		msg = fmt.Sprintf("function %q failed: %s", fn, msg)
	}
	return fmt.Sprintf("%s (see 'mkctl func logs %s')", msg, v.InstanceID)
}

func newFuncResultCommand(o *Options) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "result ID [-o json|yaml|raw]",
		Short:   "Show the status and result of a call",
		Example: "  mkctl func result 3f2a7c1e-...\n  mkctl func result 3f2a7c1e-... -o json\n  mkctl func result 3f2a7c1e-... -o raw > result.bin",
		Args:    oneArg("instance id of the call"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "", "json", "yaml", "raw":
			default:
				return usageError{cmd: cmd.CommandPath(), err: fmt.Errorf("unknown output format %q (want json, yaml or raw)", output)}
			}
			v, err := o.instanceCalls().Result(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if output == "raw" {
				return writeRawResult(o, v)
			}
			if output != "" {
				return PrintObject(o.Out, output, v)
			}
			return PrintFuncResult(o.Out, *v)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (the instance as GET /api/funcs/ID answers), or raw (the result's bytes alone)")
	return cmd
}

// writeRawResult writes a succeeded call's result as its bytes, nothing
// added; a call that failed or has not ended is an error.
func writeRawResult(o *Options, v *api.FuncInstanceView) error {
	switch v.Status {
	case api.InstanceSucceeded:
		_, err := io.WriteString(o.Out, string(v.Result))
		return err
	case api.InstanceFailed:
		return errors.New(callError(v.Function, *v))
	}
	return fmt.Errorf("call %s has not ended (%s): no result yet", v.InstanceID, v.Status)
}

func newFuncLogsCommand(o *Options) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:     "logs ID [-f]",
		Short:   "Show each step of a call: where it ran, how long, what it printed, its error",
		Example: "  mkctl func logs 3f2a7c1e-...\n  mkctl func logs -f 3f2a7c1e-...   # follow a running chain",
		Args:    oneArg("instance id of the call"),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := o.instanceCalls().Result(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if !follow || finished(*v) {
				return PrintFuncLogs(o.Out, *v)
			}
			return o.followLogs(cmd.Context(), *v)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow a running call: print each step as it ends, until the call ends")
	return cmd
}

// followLogs prints the steps of a running call as they end, then how it
// ended.
func (o *Options) followLogs(ctx context.Context, v api.FuncInstanceView) error {
	fmt.Fprintf(o.Out, "Instance %s of %s: following\n", v.InstanceID, v.Function)
	printed := 0
	show := func(v api.FuncInstanceView) {
		var b strings.Builder
		printSteps(&b, v.Steps, printed)
		printed = len(v.Steps)
		_, _ = io.WriteString(o.Out, b.String())
	}
	show(v)
	ns := v.Namespace
	if ns == "" {
		ns = o.Namespace
	}
	done, err := o.Client().FuncCalls(ns).Follow(ctx, v.InstanceID, func(next *api.FuncInstanceView) { show(*next) })
	if err != nil {
		return err
	}
	show(*done)
	fmt.Fprintf(o.Out, "\nInstance %s: %s\n", done.InstanceID, done.Status)
	if done.Status == api.InstanceFailed && done.Error != "" {
		fmt.Fprintf(o.Out, "Error: %s\n", done.Error)
	}
	return nil
}
