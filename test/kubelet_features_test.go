package test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
)

func TestKubeletVolumesLogsProbesAndGrace(t *testing.T) {
	t.Parallel()
	n := startNode(t, "node-f", "127.0.0.18")
	ctx := context.Background()

	t.Run("volumes and logs", func(t *testing.T) {
		hostDir := filepath.Join(t.TempDir(), "host")
		if err := os.MkdirAll(hostDir, 0o755); err != nil {
			t.Fatal(err)
		}
		cm := &api.ConfigMap{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: api.ObjectMeta{Name: "code", Namespace: "default"},
			Data:       map[string]string{"main.py": "print('code v1 says hi', flush=True)\n"}}
		if _, err := n.c.ConfigMaps("default").Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		p := &api.Pod{
			TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: api.ObjectMeta{Name: "vols", Namespace: "default"},
			Spec: api.PodSpec{
				NodeName:      n.name,
				RestartPolicy: api.RestartPolicyNever,
				Volumes: []api.Volume{
					{Name: "code", ConfigMap: &api.ConfigMapVolumeSource{Name: "code"}},
					{Name: "shared", EmptyDir: &api.EmptyDirVolumeSource{}},
					{Name: "host", HostPath: &api.HostPathVolumeSource{Path: hostDir}},
				},
				Containers: []api.Container{
					{Name: "writer", Image: "minik8s/python-runtime:latest",
						Command: []string{"python3", "-c", `import os, time
exec(open("/code/main.py").read())
open("/shared/note", "w").write("from writer")
open("/host/out", "w").write("to the host")
try:
    open("/code/new", "w")
except OSError as e:
    print("configmap is read-only:", e.errno, flush=True)
for i in range(3):
    print("line", i, flush=True)
    time.sleep(0.5)
`},
						VolumeMounts: []api.VolumeMount{{Name: "code", MountPath: "/code"}, {Name: "shared", MountPath: "/shared"}, {Name: "host", MountPath: "/host"}}},
					{Name: "reader", Image: "minik8s/python-runtime:latest",
						Command: []string{"python3", "-c", `import os, time
while not os.path.exists("/shared/note"): time.sleep(0.1)
print("reader got", open("/shared/note").read(), flush=True)
`},
						VolumeMounts: []api.VolumeMount{{Name: "shared", MountPath: "/shared"}}},
				},
			},
		}
		if _, err := n.c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		// Follow the writer's log through the apiserver while it runs.
		var followed string
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			r, err := n.c.PodLogs(ctx, "default", "vols", client.LogOptions{Container: "writer", Follow: true})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			data, _ := io.ReadAll(r)
			r.Close()
			followed += string(data)
			if strings.Contains(followed, "line 2") {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, want := range []string{"code v1 says hi", "configmap is read-only: 30", "line 0", "line 2"} {
			if !strings.Contains(followed, want) {
				t.Errorf("followed log %q lacks %q", followed, want)
			}
		}
		p = waitPod(t, n.c, "vols", 60*time.Second, "Succeeded", func(p *api.Pod) bool { return p.Status.Phase == api.PodSucceeded })
		r, err := n.c.PodLogs(ctx, "default", "vols", client.LogOptions{Container: "reader"})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(r)
		r.Close()
		if !strings.Contains(string(data), "reader got from writer") {
			t.Errorf("reader log %q", data)
		}
		if out, _ := os.ReadFile(filepath.Join(hostDir, "out")); string(out) != "to the host" {
			t.Errorf("hostPath file = %q", out)
		}
		// Naming no container of a two-container pod is an error.
		if _, err := n.c.PodLogs(ctx, "default", "vols", client.LogOptions{}); err == nil {
			t.Errorf("logs without a container name of a two-container pod: no error")
		}

		// Updated content reaches new pods.
		cm, _ = n.c.ConfigMaps("default").Get(ctx, "code")
		cm.Data["main.py"] = "print('code v2 says hi', flush=True)\n"
		if _, err := n.c.ConfigMaps("default").Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		p2 := pythonPod("vols2", n.name, "exec(open('/code/main.py').read())")
		p2.Spec.RestartPolicy = api.RestartPolicyNever
		p2.Spec.Volumes = []api.Volume{{Name: "code", ConfigMap: &api.ConfigMapVolumeSource{Name: "code"}}}
		p2.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "code", MountPath: "/code"}}
		if _, err := n.c.Pods("default").Create(ctx, p2); err != nil {
			t.Fatal(err)
		}
		waitPod(t, n.c, "vols2", 60*time.Second, "Succeeded", func(p *api.Pod) bool { return p.Status.Phase == api.PodSucceeded })
		r, err = n.c.PodLogs(ctx, "default", "vols2", client.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(r)
		sc.Scan()
		r.Close()
		if sc.Text() != "code v2 says hi" {
			t.Errorf("new pod ran %q", sc.Text())
		}
	})

	t.Run("liveness probe restarts", func(t *testing.T) {
		p := pythonPod("sick", n.name, httpServer)
		p.Spec.Containers[0].Ports = []api.ContainerPort{{Name: "web"}}
		p.Spec.Containers[0].LivenessProbe = &api.Probe{HTTPGet: &api.HTTPGetAction{Path: "/unhealthy", Port: "web"},
			PeriodSeconds: 1, FailureThreshold: 2, InitialDelaySeconds: 1}
		g := int64(1)
		p.Spec.TerminationGracePeriodSeconds = &g
		if _, err := n.c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitPod(t, n.c, "sick", 90*time.Second, "restarted by its liveness probe", func(p *api.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
		})
	})

	t.Run("grace period ends in SIGKILL", func(t *testing.T) {
		// The container notes on the host what it lives through: SIGTERM,
		// which it ignores, then its loop running on until the SIGKILL.
		hostDir := filepath.Join(t.TempDir(), "host")
		if err := os.MkdirAll(hostDir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := pythonPod("stubborn", n.name, `import signal, time
note = open("/host/trail", "a", buffering=1)
termed = False
def on_term(*a):
    global termed
    termed = True
    note.write("TERM\n")
    print("got TERM, staying", flush=True)
signal.signal(signal.SIGTERM, on_term)
note.write("up\n")
print("up", flush=True)
while True:
    time.sleep(0.2)
    if termed: note.write("alive\n")`)
		p.Spec.Volumes = []api.Volume{{Name: "host", HostPath: &api.HostPathVolumeSource{Path: hostDir}}}
		p.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "host", MountPath: "/host"}}
		if _, err := n.c.Pods("default").Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		p = waitPod(t, n.c, "stubborn", 60*time.Second, "Running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning })
		trail := func() []string {
			data, err := os.ReadFile(filepath.Join(hostDir, "trail"))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			return strings.Fields(string(data))
		}
		waitFor(t, "the SIGTERM handler to be in place", 60*time.Second, func() bool { return len(trail()) > 0 })
		grace := int64(2)
		if _, err := n.c.Pods("default").Delete(ctx, "stubborn", client.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, n.c, "stubborn", 60*time.Second)
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		if _, err := n.ctd.Runtime.ContainerStatus(ctx, id); err == nil {
			t.Errorf("container %s still there", id)
		}
		// SIGTERM came first and did not end it; the process went on into
		// the grace period (it never exits by itself, so a SIGKILL ended it).
		if got := trail(); len(got) < 3 || got[0] != "up" || got[1] != "TERM" || got[2] != "alive" {
			t.Errorf("the container lived through %q, want up, TERM, then its loop running on until killed", got)
		}
	})
}
