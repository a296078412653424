package test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/test/framework"
)

// TestBinaryArguments: any bytes are an argument (the README says so).
// run(arg) gets str when they are UTF-8 and bytes otherwise; a result of
// bytes is those bytes; both round-trip byte for byte through the
// synchronous answer, the stored record (a chain passes them on through
// it), the instance view ({"base64": ...} in its JSON) and mkctl. It fails
// on the old code, where ff fe 00 arrived as "\ufffd\ufffd\x00".
func TestBinaryArguments(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartFuncRunner(t, s)
	kind := `
def run(arg):
    if isinstance(arg, bytes):
        return b"bytes:" + arg[::-1]
    return "str:" + arg
`
	// echo passes its argument on as it got it: as a step of a chain, it
	// reads what the record kept of kind's result.
	echo := "def run(arg):\n    return arg\n"
	funcTemplate(t, s, "kind", kind, "RETURN", "RETURN", nil)
	funcTemplate(t, s, "echo", echo, "kind", "kind", nil)
	s.PublishFunctionPods(t, "kind", runtime(t, kind))
	s.PublishFunctionPods(t, "echo", runtime(t, echo))

	binary := "\xff\xfe\x00"
	tests := []struct {
		name, fn, arg, want string
	}{
		{"binary", "kind", binary, "bytes:\x00\xfe\xff"},
		{"text", "kind", "héllo", "str:héllo"},
		{"empty", "kind", "", "str:"},
		{"binary through a chain", "echo", binary, "bytes:\x00\xfe\xff"},
		{"latin-1 is not UTF-8", "kind", "caf\xe9", "bytes:\xe9fac"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, v, data := syncCall(t, s, tc.fn, []byte(tc.arg))
			if code != http.StatusOK || v.Status != api.InstanceSucceeded || string(v.Result) != tc.want {
				t.Fatalf("synchronous call: %d %s, want result %q", code, data, tc.want)
			}
			id := invoke(t, s, tc.fn, tc.arg)
			if v := result(t, s, id, 30*time.Second); v.Status != api.InstanceSucceeded || string(v.Result) != tc.want {
				t.Fatalf("asynchronous call %s: %+v, want result %q", id, v, tc.want)
			}
			if v.Steps[0].Arg != api.Bytes(tc.arg) {
				t.Errorf("the first step's recorded argument is %q, want %q", v.Steps[0].Arg, tc.arg)
			}
			if r := runMkctl(t, s, "", "func", "result", id, "-o", "raw"); r.code != 0 || r.out != tc.want {
				t.Errorf("mkctl func result -o raw: exit %d, %q (stderr %s), want %q", r.code, r.out, r.err, tc.want)
			}
		})
	}
	t.Run("a record stored over REST (a trigger's) keeps them", func(t *testing.T) {
		// As a queue trigger's runner stores a binary message's call.
		inst := &api.FuncInstance{ObjectMeta: api.ObjectMeta{Name: "bin-rest-1", Namespace: "default"},
			Spec:   api.FuncInstanceSpec{Function: "kind", Arg: api.Bytes(binary), Trigger: &api.FuncTriggerRef{Name: "q", Type: "queue"}},
			Status: api.FuncInstanceStatus{Phase: api.InstanceRunning, Next: &api.FuncStep{Function: "kind", Arg: api.Bytes(binary)}}}
		if _, err := s.Client.FuncInstances("default").Create(t.Context(), inst); err != nil {
			t.Fatal(err)
		}
		if v := result(t, s, "bin-rest-1", 30*time.Second); v.Status != api.InstanceSucceeded || string(v.Result) != "bytes:\x00\xfe\xff" {
			t.Errorf("the call stored over REST: %+v", v)
		}
		got, err := s.Client.FuncInstances("default").Get(t.Context(), "bin-rest-1")
		if err != nil || got.Spec.Arg != api.Bytes(binary) || got.Status.Steps[0].Arg != api.Bytes(binary) {
			t.Errorf("the stored record: %+v %v", got, err)
		}
	})
	t.Run("a CloudEvent answer carries them as data_base64", func(t *testing.T) {
		req, _ := http.NewRequest("POST", s.URL+"/api/funcs/kind?wait=30s", strings.NewReader(binary))
		req.Header.Set("Accept", "application/cloudevents+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"data_base64":"Ynl0ZXM6AP7/"`) {
			t.Errorf("CloudEvent answer: %d %s, want the result as data_base64", resp.StatusCode, data)
		}
	})
	t.Run("the view's JSON names bytes that are not UTF-8 as base64", func(t *testing.T) {
		id := invoke(t, s, "kind", binary)
		result(t, s, id, 30*time.Second)
		_, data := httpDo(t, "GET", s.URL+"/api/funcs/"+id, "", nil)
		if !strings.Contains(string(data), `"result":{"base64":"Ynl0ZXM6AP7/"}`) {
			t.Errorf("view: %s, want the result as base64", data)
		}
		if r := runMkctl(t, s, "", "func", "result", id); !strings.Contains(r.out, "Result:    <9 bytes, not UTF-8>") {
			t.Errorf("mkctl func result wrote %q, want the binary result counted", r.out)
		}
		if r := runMkctl(t, s, "", "func", "invoke", "kind", "--wait"); r.code != 0 || r.out != "str:\n" {
			t.Errorf("mkctl func invoke: %q %s, want the text result on its line", r.out, r.err)
		}
		if r := runMkctl(t, s, binary, "func", "invoke", "kind", "--wait"); r.code != 0 || r.out != "bytes:\x00\xfe\xff" {
			t.Errorf("mkctl func invoke <binary: %q %s, want the bytes as they are", r.out, r.err)
		}
	})
}
