package test

import (
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
)

const initPod = `apiVersion: v1
kind: Pod
metadata:
  name: init
  labels: {app: web}
spec:
  nodeName: node-i
  volumes:
  - name: work
    emptyDir: {}
  - name: info
    downwardAPI:
      items:
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
  initContainers:
  - name: fetch
    image: IMAGE
    command: ["sh", "-c", "echo fetched > /work/data; mkdir -p /work/sub; echo by-subpath > /work/sub/f; mkdir -p /work/init; echo by-expr > /work/init/f; ln -s / /work/escape; echo fetch done"]
    volumeMounts:
    - {name: work, mountPath: /work}
  - name: settle
    image: IMAGE
    command: ["sh", "-c", "while [ ! -e /work/go ]; do sleep 0.1; done; echo settled >> /work/data"]
    volumeMounts:
    - {name: work, mountPath: /work}
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "cat /work/data; echo $(MY_NAME) $MY_IP; cat /info/name; echo; cat /info/labels; echo; cat /only/f; cat /expr/f; exec sleep 600"]
    env:
    - name: MY_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: MY_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    volumeMounts:
    - {name: work, mountPath: /work}
    - {name: info, mountPath: /info}
    - {name: work, mountPath: /only, subPath: sub}
    - {name: work, mountPath: /expr, subPathExpr: $(MY_NAME)}
  - name: escape
    image: IMAGE
    command: ["sh", "-c", "ls /host; exec sleep 600"]
    volumeMounts:
    - {name: work, mountPath: /host, subPath: escape}
`

// TestInitContainersAndDownwardAPI: a manifest's init containers, applied
// with kubectl, run one after another before the app container, which
// sees what they left in an emptyDir; kubectl get shows Init:1/2 while
// the second runs, and the init containers' logs stay readable. The app
// container has its pod's name and address from the downward API, in its
// env (and its command, by $(NAME)) and in files, and a directory of the
// emptyDir by subPath, and one named by its pod (subPathExpr); a subPath through a symlink out of the volume is
// refused. A label added later reaches the downwardAPI file.
func TestInitContainersAndDownwardAPI(t *testing.T) {
	t.Parallel()
	as := applyOnNode(t, "node-i", "127.0.0.31", initPod, nil, "pod/init created")
	run := func(want string, args ...string) string { t.Helper(); return mustKubectl(t, as, want, args...) }

	// The second init container waits for a file the test makes: until
	// then the pod is at Init:1/2.
	waitPod(t, as.Client, "init", 60*time.Second, "the second init container running", func(p *api.Pod) bool {
		s := p.Status.InitContainerStatuses
		return len(s) == 2 && s[1].State.Running != nil
	})
	run("Init:1/2", "get", "pod", "init")
	run("fetch done", "logs", "init", "-c", "fetch")
	run("", "exec", "init", "-c", "settle", "--", "touch", "/work/go")

	waitPod(t, as.Client, "init", 60*time.Second, "Running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning })
	// (The STATUS column names the escape container's refusal.)
	run("Running", "get", "pod", "init", "-o", "jsonpath={.status.phase}")
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, _ := kubectl(t, as, "logs", "init", "-c", "app")
		if out == "fetched\nsettled\ninit 127.0.0.31\ninit\napp=\"web\"\nby-subpath\nby-expr\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the app container printed %q, want what both init containers wrote", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	run("True", "get", "pod", "init", "-o", `jsonpath={.status.conditions[?(@.type=="Initialized")].status}`)

	// The attacker's subPath: the symlink an init container left in the
	// shared volume (escape -> /) does not take the other container's
	// mount to the node's root; that container does not start, and says why.
	waitPod(t, as.Client, "init", 60*time.Second, "the escape container refused", func(p *api.Pod) bool {
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; s.Name == "escape" && w != nil && w.Reason == "CreateContainerConfigError" &&
				strings.Contains(w.Message, "leads out of its volume") {
				return true
			}
		}
		return false
	})
	// A label added to the running pod reaches its downwardAPI file, as
	// in Kubernetes (the kubelet writes such volumes again).
	run("pod/init labeled", "label", "pod", "init", "tier=db")
	deadline = time.Now().Add(60 * time.Second)
	for {
		out, _, _ := kubectl(t, as, "exec", "init", "-c", "app", "--", "cat", "/info/labels")
		if strings.Contains(out, `tier="db"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the downwardAPI labels file holds %q a minute after the label was added", out)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Deleted, the pod's sub path mounts go with its dir.
	run(`pod "init" deleted`, "delete", "pod", "init", "--grace-period=1")
}
