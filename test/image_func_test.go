package test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/function"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// imageCluster is cluster() with the Perl example image imported too.
func imageCluster(t *testing.T) *framework.APIServer {
	t.Helper()
	return netCluster(t, "node-image", func(c *containerdtest.Containerd) { c.ImportPerlExample(t) })
}

// TestImageFuncChainsWithPython: a function in Perl (spec.image, its image's
// own server; yaml/func-image.yaml) chains into a Python one and back, each
// step's output naming its language; its error fails the call; it goes to
// zero pods when idle and the next call starts it from zero; a v1 image
// function runs in a fresh pod.
func TestImageFuncChainsWithPython(t *testing.T) {
	t.Parallel()
	s := imageCluster(t)
	ctx := context.Background()
	pods := func(fn string) []*api.Pod {
		t.Helper()
		list, _, err := s.Client.Pods("default").List(ctx, client.ListOptions{LabelSelector: function.LabelFunc + "=" + fn})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}

	// Both source and image: refused, naming the field.
	body := `{"apiVersion":"v2","kind":"Func","metadata":{"name":"both"},"spec":{"name":"both","function":"` +
		b64("def run(arg):\n    return arg\n") + `","image":"` + containerdtest.PerlExampleImage + `"}}`
	if code, data := httpDo(t, "POST", s.URL+"/api/funcs/template", "application/json", []byte(body)); code != http.StatusUnprocessableEntity ||
		!strings.Contains(string(data), "spec.image") {
		t.Fatalf("source and image: %d %s, want 422 naming spec.image", code, data)
	}

	// The example as shipped.
	if out := mustMkctl(t, s, "apply", "-f", filepath.Join(examplesDir, "func-image.yaml")); out != "func/perl_shout created\nfunc/python_and created\n" {
		t.Fatalf("apply yaml/func-image.yaml: %q", out)
	}
	if out := mustMkctl(t, s, "get", "funcs", "perl_shout", "-o", "wide"); !strings.Contains(out, containerdtest.PerlExampleImage) {
		t.Errorf("get -o wide shows no image:\n%s", out)
	}

	// perl (HELLO!, shouted once: left) -> python -> perl (shouted twice: right) -> RETURN.
	chain := func(arg, want string) {
		t.Helper()
		v := syncInvoke(t, s, "perl_shout", arg)
		if v.Status != api.InstanceSucceeded || string(v.Result) != want || len(v.Steps) != 3 {
			t.Fatalf("perl -> python -> perl of %q: %+v", arg, v)
		}
		shouted := strings.ToUpper(arg) + "!"
		for i, st := range []struct {
			fn, result, lang string
			check            bool
		}{
			{"perl_shout", shouted, "perl v5.", true},
			{"python_and", shouted + " and python", "python 3.", false},
			{"perl_shout", want, "perl v5.", false},
		} {
			rec := v.Steps[i]
			if rec.Function != st.fn || string(rec.Result) != st.result || !strings.Contains(rec.Output, st.lang) || rec.Error != "" ||
				!strings.HasPrefix(rec.Pod, function.ObjectName(st.fn)) {
				t.Errorf("step %d: %+v, want %s giving %q, its output naming %q", i, rec, st.fn, st.result, st.lang)
			}
			if st.fn == "perl_shout" && (rec.Check == nil || *rec.Check != st.check) {
				t.Errorf("step %d: check %v, want %v", i, rec.Check, st.check)
			}
		}
	}
	chain("hello", "HELLO! AND PYTHON!")

	// The Perl function raises: the call fails with its message.
	v := syncInvoke(t, s, "perl_shout", "fail")
	if v.Status != api.InstanceFailed || !strings.Contains(v.Error, "PerlError: asked to fail") || len(v.Steps) != 1 ||
		!strings.Contains(v.Steps[0].Error, "asked to fail") {
		t.Fatalf("a Perl error: %+v", v)
	}

	// Idle, it goes back to zero pods. They stop at TERM, well within the
	// grace period (65s): the script, PID 1 of its container, handles it.
	// The next call starts it from zero.
	// Pods and pool are read together: under load the pods can be gone
	// an instant before the ReplicaSet read shows its last step (CI run
	// of 2026-12-06: replicas read as 1 with no pod).
	waitFor(t, "perl_shout's pods to go and its pool to be at zero", 45*time.Second, func() bool {
		rs, err := s.Client.ReplicaSets("default").Get(ctx, function.ObjectName("perl_shout"))
		return err == nil && rs.Spec.Replicas != nil && *rs.Spec.Replicas == 0 && len(pods("perl_shout")) == 0
	})
	chain("again", "AGAIN! AND PYTHON!")

	// A v1 image function, made by mkctl: every step in a fresh pod,
	// removed after it.
	mustMkctl(t, s, "func", "create", "perl_once", "--image", containerdtest.PerlExampleImage, "--v1")
	if v := syncInvoke(t, s, "perl_once", "once"); v.Status != api.InstanceSucceeded || v.Result != "ONCE!" || len(v.Steps) != 1 {
		t.Fatalf("v1 image function: %+v", v)
	}
	waitFor(t, "the v1 step pod to be removed", 45*time.Second, func() bool { return len(pods("perl_once")) == 0 })
}
