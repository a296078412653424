package functions

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
)

// An image function gets the same pool as a Python one, its pods running
// the image's own entrypoint; changing the image rolls the template, and a
// function that turns into Python source gets its code delivered again.
func TestImageFunctionPool(t *testing.T) {
	c := startAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctl := New(c, cache.NewFactory(c), Config{ScaleInterval: time.Hour, IdleWindow: time.Hour})
	done := make(chan struct{})
	go func() { defer close(done); ctl.Run(ctx, 1) }()
	defer func() { cancel(); <-done }()

	name := function.ObjectName("shout")
	f := &api.Func{TypeMeta: api.TypeMeta{APIVersion: api.FuncAPIVersionV2}, ObjectMeta: api.ObjectMeta{Name: "shout"},
		Spec: api.FuncSpec{Name: "shout", Image: "minik8s/perl-example:latest", Left: "RETURN"}}
	if _, err := c.Funcs("default").Create(ctx, f); err != nil {
		t.Fatal(err)
	}
	// waitPool waits until the ReplicaSet runs image with the hash of the
	// function's current spec, and returns it with the code ConfigMap.
	waitPool := func(image string) (*api.ReplicaSet, *api.ConfigMap) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			cur, err := c.Funcs("default").Get(ctx, "shout")
			if err != nil {
				t.Fatal(err)
			}
			rs, rerr := c.ReplicaSets("default").Get(ctx, name)
			cm, cerr := c.ConfigMaps("default").Get(ctx, name)
			if rerr == nil && cerr == nil && rs.Spec.Template.Spec.Containers[0].Image == image &&
				rs.Spec.Template.Labels[function.LabelCode] == function.CodeHash(&cur.Spec) &&
				cm.Labels[function.LabelCode] == function.CodeHash(&cur.Spec) {
				return rs, cm
			}
			if time.Now().After(deadline) {
				t.Fatalf("no pool running %s within 30s (replicaset %v, configmap %v)", image, rerr, cerr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	update := func(edit func(*api.FuncSpec)) {
		t.Helper()
		for attempt := 1; ; attempt++ {
			cur, err := c.Funcs("default").Get(ctx, "shout")
			if err != nil {
				t.Fatal(err)
			}
			edit(&cur.Spec)
			_, err = c.Funcs("default").Update(ctx, cur)
			if err == nil {
				return
			}
			// A conflict: the controller wrote the function meanwhile.
			if !errdefs.IsConflict(err) || attempt == 10 {
				t.Fatal(err)
			}
		}
	}

	rs, cm := waitPool("minik8s/perl-example:latest")
	ctr := rs.Spec.Template.Spec.Containers[0]
	if len(ctr.Command) != 0 || len(ctr.VolumeMounts) != 0 || len(rs.Spec.Template.Spec.Volumes) != 0 ||
		ctr.Ports[0].Name != function.PortName || ctr.ReadinessProbe == nil || ctr.LivenessProbe == nil {
		t.Errorf("image pod template: %+v", rs.Spec.Template.Spec)
	}
	if cm.Data[function.FileFunction] != "" {
		t.Errorf("an image function's code ConfigMap: %v", cm.Data)
	}
	firstHash := rs.Spec.Template.Labels[function.LabelCode]

	update(func(s *api.FuncSpec) { s.Image = "minik8s/perl-example:v2" })
	if rs, _ = waitPool("minik8s/perl-example:v2"); rs.Spec.Template.Labels[function.LabelCode] == firstHash {
		t.Error("a new image kept the code hash: its pods would not be replaced")
	}

	src := "def run(arg):\n    return arg\n"
	update(func(s *api.FuncSpec) { s.Image, s.Function = "", base64.StdEncoding.EncodeToString([]byte(src)) })
	rs, cm = waitPool("minik8s/python-runtime:latest")
	if cm.Data[function.FileFunction] != src || len(rs.Spec.Template.Spec.Volumes) != 1 || len(rs.Spec.Template.Spec.Containers[0].Command) != 1 {
		t.Errorf("back to Python: configmap %v, template %+v", cm.Data, rs.Spec.Template.Spec)
	}
}
