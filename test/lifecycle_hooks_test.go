package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
)

const hooksPod = `apiVersion: v1
kind: Pod
metadata:
  name: hooks
spec:
  nodeName: node-h
  terminationGracePeriodSeconds: 10
  volumes:
  - name: out
    hostPath: {path: OUT}
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "trap 'echo term >> /out/log; exit 0' TERM; echo started >> /out/log; while true; do sleep 0.1; done"]
    volumeMounts:
    - {name: out, mountPath: /out}
    startupProbe:
      exec: {command: ["test", "-e", "/out/log"]}
      periodSeconds: 1
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo poststart >> /out/poststart"]}
      preStop:
        exec: {command: ["sh", "-c", "echo prestop >> /out/log; sleep 1"]}
---
apiVersion: v1
kind: Pod
metadata:
  name: ends
spec:
  nodeName: node-h
  restartPolicy: Never
  containers:
  - name: file
    image: IMAGE
    command: ["sh", "-c", "echo -n 'config missing' > /dev/termination-log; exit 3"]
    securityContext: {runAsUser: 1000}
  - name: logs
    image: IMAGE
    command: ["sh", "-c", "echo starting; echo 'oops: no database'; exit 1"]
    terminationMessagePolicy: FallbackToLogsOnError
---
apiVersion: v1
kind: Pod
metadata:
  name: unhealthy
spec:
  nodeName: node-h
  terminationGracePeriodSeconds: 10
  volumes:
  - name: out
    hostPath: {path: OUT}
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "trap 'echo term >> /out/live; exit 0' TERM; echo started >> /out/live; while true; do sleep 0.1; done"]
    volumeMounts:
    - {name: out, mountPath: /out}
    livenessProbe:
      exec: {command: ["sh", "-c", "test ! -e /out/sick"]}
      periodSeconds: 1
      failureThreshold: 1
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "echo prestop >> /out/live; rm -f /out/sick"]}
`

// TestPodLifecycleHooks: a container's postStart hook has run when it is
// running, and when its pod is deleted its preStop hook runs to its end
// before the process gets SIGTERM, within the grace period (as when its
// liveness probe kills a container); a startup
// probe that passes lets the pod be ready. A container's termination
// message is what it wrote to /dev/termination-log (a non-root user
// may), or with FallbackToLogsOnError the end of its log.
func TestPodLifecycleHooks(t *testing.T) {
	out := t.TempDir()
	as := applyOnNode(t, "node-h", "127.0.0.32", hooksPod, map[string]string{"OUT": out}, "pod/hooks created")
	ends := waitPod(t, as.Client, "ends", 60*time.Second, "Failed", func(p *api.Pod) bool { return p.Status.Phase == api.PodFailed })
	for i, want := range []string{"config missing", "starting\noops: no database\n"} {
		if got := ends.Status.ContainerStatuses[i].State.Terminated.Message; got != want {
			t.Errorf("container %s's termination message %q, want %q", ends.Status.ContainerStatuses[i].Name, got, want)
		}
	}
	mustKubectl(t, as, "/dev/termination-log BestEffort", "get", "pod", "ends", "-o", "jsonpath={.spec.containers[0].terminationMessagePath} {.status.qosClass}")
	waitPod(t, as.Client, "hooks", 60*time.Second, "Ready", func(p *api.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == api.PodReady && c.Status == api.ConditionTrue {
				return true
			}
		}
		return false
	})
	if got, err := os.ReadFile(filepath.Join(out, "poststart")); err != nil || string(got) != "poststart\n" {
		t.Errorf("postStart hook: %q, %v", got, err)
	}
	// A container its liveness probe kills runs its preStop hook first,
	// then gets SIGTERM, and starts again.
	waitPod(t, as.Client, "unhealthy", 60*time.Second, "Running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning })
	if err := os.WriteFile(filepath.Join(out, "sick"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitPod(t, as.Client, "unhealthy", 60*time.Second, "restarted once", func(p *api.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	var live []byte
	waitFor(t, "the restarted container's start in its log of events", 20*time.Second, func() bool {
		live, _ = os.ReadFile(filepath.Join(out, "live"))
		return strings.Count(string(live), "started") == 2
	})
	if string(live) != "started\nprestop\nterm\nstarted\n" {
		t.Errorf("the unhealthy container's log of events: %q; want started, prestop, term, then started again", live)
	}

	mustKubectl(t, as, `pod "hooks" deleted`, "delete", "pod", "hooks", "--wait=true", "--timeout=60s")
	got, err := os.ReadFile(filepath.Join(out, "log"))
	if err != nil || string(got) != "started\nprestop\nterm\n" {
		t.Errorf("the container's log of events: %q, %v; want started, prestop, then term", got, err)
	}
}
