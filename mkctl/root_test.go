package mkctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

func TestFormatError(t *testing.T) {
	notFound := &client.StatusError{Code: 404, Reason: "NotFound",
		Message: `Pod "x" not found in namespace "default": not found`}
	invalidWithField := &client.StatusError{Code: 422, Reason: "Invalid", Field: "metadata.name",
		Message: `metadata.name: "Bad_Name" must consist of lower case letters`}
	invalidBare := &client.StatusError{Code: 422, Reason: "Invalid", Field: "spec.replicas", Message: "must not be negative"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"not found", notFound, `Error from server (NotFound): Pod "x" not found in namespace "default"`},
		{"invalid names the field once", invalidWithField,
			`Error from server (Invalid): metadata.name: "Bad_Name" must consist of lower case letters`},
		{"invalid adds the field", invalidBare, `Error from server (Invalid): spec.replicas: must not be negative`},
		{"with what mkctl was doing", &opError{context: `error when creating "a.yaml": Pod "Bad_Name" is invalid: `, err: invalidWithField},
			`Error from server (Invalid): error when creating "a.yaml": Pod "Bad_Name" is invalid: metadata.name: "Bad_Name" must consist of lower case letters`},
		{"multi-line message", &client.StatusError{Reason: "BadRequest", Message: "a\nb"}, "Error from server (BadRequest): a b"},
		{"unreachable", fmt.Errorf("listing: %w", &client.TransportError{Server: "http://127.0.0.1:1", Err: errors.New("connection refused")}),
			"error: cannot reach the apiserver at http://127.0.0.1:1 (set --server or MINIK8S_SERVER): connection refused"},
		{"local", errors.New("a.yaml: malformed YAML: line 3: bad"), "error: a.yaml: malformed YAML: line 3: bad"},
		{"usage", usageError{cmd: "mkctl get", err: errors.New("unknown flag: --x")}, "error: unknown flag: --x (see 'mkctl get --help')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatError(tc.err); got != tc.want {
				t.Errorf("FormatError = %q\nwant          %q", got, tc.want)
			}
		})
	}
}

func TestLookupKind(t *testing.T) {
	for name, want := range map[string]string{
		"po": "Pod", "pods": "Pod", "Pod": "Pod", "rs": "ReplicaSet", "svc": "Service", "no": "Node",
		"cm": "ConfigMap", "ep": "Endpoints", "func": "Func", "funcs": "Func", "fi": "FuncInstance",
	} {
		res, err := lookupKind(name)
		if err != nil || res.Kind != want {
			t.Errorf("lookupKind(%q) = %s, %v; want %s", name, res.Kind, err, want)
		}
	}
	_, err := lookupKind("csidrivers")
	if err == nil || !strings.Contains(err.Error(), `resource type "csidrivers"`) {
		t.Errorf("unknown kind: %v", err)
	}
	if got := kindName(api.ReplicaSetsResource, "web"); got != "replicaset/web" {
		t.Errorf("kindName = %q", got)
	}
}

// Mistakes in the command line are named as what they are, before any
// request (the server here answers nothing).
func TestCommandLineMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trigger", "add", "kafka", "orders", "--function", "f"}, `unknown trigger kind "kafka": want http, schedule or queue`},
		{[]string{"trigger", "add", "http", "t", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"get", "jobs,pods", "-w"}, "-w watches one kind, not 2"},
		{[]string{"get", "jobs,csidrivers"}, `resource type "csidrivers"`},
	} {
		var out, errOut strings.Builder
		code := Run(context.Background(), append([]string{"--server", "http://127.0.0.1:1"}, tc.args...), &out, &errOut)
		if code == 0 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("mkctl %s: exit %d, %q; want an error saying %q", strings.Join(tc.args, " "), code, errOut.String(), tc.want)
		}
	}
}
