package mkctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"minik8s/pkg/api"
	"minik8s/pkg/function"
)

// Invoking anything for testing (seed 003): a function reached only by a
// schedule or a queue is called with an event of that kind; the payload
// comes from -d, a file, stdin, or $EDITOR, and is kept per user so that
// --again sends it once more.

// payloadPath is where the previous payload of fn is kept: per user, per
// namespace, per function.
func payloadPath(ns, fn string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory for the saved payloads: %w", err)
	}
	return filepath.Join(home, ".minik8s", "payloads", ns, fn), nil
}

func savePayload(ns, fn string, arg []byte) error {
	p, err := payloadPath(ns, fn)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, arg, 0o600)
}

// previousPayload is the payload fn was last invoked with, if any.
func previousPayload(ns, fn string) ([]byte, bool) {
	p, err := payloadPath(ns, fn)
	if err != nil {
		return nil, false
	}
	data, err := os.ReadFile(p)
	return data, err == nil
}

// editPayload opens $EDITOR (vi by default) on start and returns what the
// user saved.
func editPayload(fn string, start []byte) ([]byte, error) {
	f, err := os.CreateTemp("", "mkctl-"+fn+"-*.payload")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(start); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	editor := os.Getenv("EDITOR")
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.Command("sh", "-c", editor+` "$1"`, "editor", f.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("the editor (%s) failed: %w", editor, err)
	}
	data, err := os.ReadFile(f.Name())
	if err == nil && len(data) == 0 {
		// As kubectl edit does with an emptied file: nothing is sent.
		return nil, errors.New("the payload was left empty in the editor: the call is cancelled (-d '' sends an empty payload)")
	}
	return data, err
}

// payload is the call's argument: from -d or --data-file, the previous one
// with --again, else from stdin, or from $EDITOR when stdin is a terminal
// (on the previous payload, or on template).
func (f *invokeFlags) payload(o *Options, fn string, fsChanged func(string) bool, template []byte) ([]byte, error) {
	given := fsChanged("data") || fsChanged("data-file")
	switch {
	case f.again && given:
		return nil, errors.New("give either --again or -d/--data-file, not both")
	case f.again:
		data, ok := previousPayload(o.Namespace, fn)
		if !ok {
			return nil, fmt.Errorf("no previous payload of %q to send again: invoke it once with -d first", fn)
		}
		return data, nil
	case given:
		return nil, nil // the caller reads the flags
	case o.In == nil:
		return []byte{}, nil
	case isTTY(o.In): // a terminal: nobody pipes a payload in
		start := template
		if prev, ok := previousPayload(o.Namespace, fn); ok {
			start = prev
		}
		return editPayload(fn, start)
	}
	data, err := io.ReadAll(o.In)
	if err != nil {
		return nil, fmt.Errorf("reading the argument from stdin: %w", err)
	}
	return data, nil
}

// invokeAs decides how fn is called: as the function API calls it, or, for
// a function only a schedule or a queue reaches (or the trigger --as
// names), with a synthetic CloudEvent of that trigger's kind. It returns
// the headers to send and the template payload of an edit session.
func (o *Options) invokeAs(ctx context.Context, fn, as string) (http.Header, []byte, error) {
	if as == "api" {
		return nil, nil, nil
	}
	list, err := o.funcTemplates().List(ctx)
	if err != nil {
		if as != "" {
			return nil, nil, err
		}
		return nil, nil, nil // not allowed to list (an invoker only): a plain call
	}
	var found *api.FuncSummary
	for i := range list.Items {
		if list.Items[i].Name == fn {
			found = &list.Items[i]
		}
	}
	if found == nil {
		if as != "" {
			return nil, nil, fmt.Errorf("function %q not found in namespace %q", fn, o.Namespace)
		}
		return nil, nil, nil // the call says why, as the server answers it
	}
	var pick *api.TriggerSummary
	for i, t := range found.Triggers {
		switch {
		case as != "" && t.Name == as:
			pick = &found.Triggers[i]
		case as == "" && t.Type == api.TriggerHTTP:
			return nil, nil, nil // reachable by HTTP: a plain call is what it gets
		case as == "" && pick == nil:
			pick = &found.Triggers[i]
		}
	}
	if as != "" && pick == nil {
		return nil, nil, fmt.Errorf("function %q has no trigger named %q (it has %s)", fn, as, triggerList(found.Triggers))
	}
	if pick == nil || pick.Type == api.TriggerHTTP {
		return nil, nil, nil
	}
	now := time.Now().UTC()
	h := http.Header{}
	h.Set("Ce-Specversion", "1.0")
	h.Set("Ce-Id", "mkctl-"+uuid.NewString())
	h.Set("Ce-Source", "/api/v1/namespaces/"+o.Namespace+"/triggers/"+pick.Name)
	h.Set("Ce-Time", now.Format(time.RFC3339Nano))
	var template []byte
	switch pick.Type {
	case api.TriggerSchedule:
		h.Set("Ce-Type", function.EventTypeSchedule)
		h.Set("Ce-Subject", now.Format(time.RFC3339Nano))
		h.Set("Content-Type", "text/plain")
		template = []byte(now.Format(time.RFC3339Nano))
	case api.TriggerQueue:
		h.Set("Ce-Type", function.EventTypeQueue)
		h.Set("Ce-Subject", pick.Source)
	}
	fmt.Fprintf(o.ErrOut, "calling %q as its %s trigger %q would (a synthetic %s event)\n", fn, pick.Type, pick.Name, h.Get("Ce-Type"))
	return h, template, nil
}

// printCallLogs prints what each step of a call printed, to stderr.
func (o *Options) printCallLogs(ctx context.Context, id string) {
	v, err := o.funcCalls().Result(ctx, id)
	if err != nil {
		fmt.Fprintln(o.ErrOut, FormatError(err))
		return
	}
	_ = PrintFuncLogs(o.ErrOut, *v)
}

// scheduleTick is what a real tick sends: its time.
func scheduleTick(arg []byte, h http.Header) []byte {
	if len(arg) == 0 && h.Get("Ce-Type") == function.EventTypeSchedule {
		return []byte(h.Get("Ce-Subject"))
	}
	return arg
}
