package test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// webStatefulSet is the StatefulSet of Kubernetes' documentation (a
// headless Service nginx and the set web, two replicas, a claim template
// www of 1Gi ReadWriteOnce mounted at /usr/share/nginx/html), its server
// the node runtime's image serving that directory.
const webStatefulSet = `apiVersion: v1
kind: Service
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  ports:
  - port: 80
    name: web
  clusterIP: None
  selector:
    app: nginx
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: nginx
  serviceName: "nginx"
  replicas: 2
  minReadySeconds: 1
  template:
    metadata:
      labels:
        app: nginx
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: nginx
        image: ` + containerdtest.PythonRuntimeImage + `
        # The first start writes its page in its volume (host name and a
        # random token); a later one serves the page it finds.
        command: ["sh", "-c", "cd /usr/share/nginx/html && { [ -f index.html ] || echo $(cat /proc/sys/kernel/hostname) $(cat /proc/sys/kernel/random/uuid) > index.html; } && exec python3 -m http.server 80"]
        ports:
        - containerPort: 80
          name: web
        readinessProbe:
          tcpSocket:
            port: 80
          periodSeconds: 1
        volumeMounts:
        - name: www
          mountPath: /usr/share/nginx/html
  volumeClaimTemplates:
  - metadata:
      name: www
    spec:
      accessModes: [ "ReadWriteOnce" ]
      resources:
        requests:
          storage: 1Gi
`

// stsPods are the set's pods by name.
func stsPods(t *testing.T, c *client.Client) map[string]*api.Pod {
	t.Helper()
	pods, _, err := c.Pods("default").List(context.Background(), client.ListOptions{LabelSelector: "app=nginx"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*api.Pod{}
	for _, p := range pods {
		out[p.Name] = p
	}
	return out
}

// TestStatefulSet: with stock kubectl, the documentation's StatefulSet
// makes web-0, then web-1 only once web-0 is ready; web-1 has its
// identity (labels, host name under the headless Service) and resolves
// by name (web-1.nginx.default.svc.cluster.local) from another pod; the
// rollout's status, history and scale are kubectl's; each pod has its
// bound claim www-web-N, and a file written in web-1's keeps across
// web-1's deletion (made again on its node with its claim, serving the
// file by name); scaling down removes web-1 first and keeps its claim,
// which web-1 mounts again when scaled up; under whenScaled and
// whenDeleted Delete, scaling down deletes web-1's claim after web-1 and
// deleting the set deletes web-0's.
func TestStatefulSet(t *testing.T) {
	ctx := context.Background()
	u := framework.StartUnderlay(t, 1)
	s := u.StartAPIServer(t, nil)
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	framework.StartNetKubelet(t, u.Nodes[0], s, ctd, "sts-1")
	framework.StartControllers(t, s, controller.Config{StorageDir: t.TempDir()})
	framework.StartScheduler(t, s, scheduler.Config{})
	c := s.Client
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(webStatefulSet), 0o644); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, s, "statefulset.apps/web created", "apply", "-f", manifest)

	// In order: web-1 appears only after web-0 is Running and Ready.
	web0Ready := false
	waitUntil(t, 3*time.Minute, "web-0 then web-1 ready", func() bool {
		pods := stsPods(t, c)
		if p := pods["web-0"]; p != nil && p.Status.Phase == api.PodRunning && podReady(p) {
			web0Ready = true
		}
		if pods["web-1"] != nil && !web0Ready {
			t.Fatalf("web-1 was made before web-0 was ready: web-0 %s", statusString(pods["web-0"]))
		}
		return web0Ready && pods["web-1"] != nil && podReady(pods["web-1"])
	})
	mustKubectl(t, s, "partitioned roll out complete", "rollout", "status", "sts/web", "--timeout=1m")
	out := mustKubectl(t, s, "2/2", "get", "sts", "web")
	if !strings.Contains(out, "READY") {
		t.Errorf("kubectl get sts:\n%s", out)
	}
	web1 := stsPods(t, c)["web-1"]
	if web1.Spec.Hostname != "web-1" || web1.Spec.Subdomain != "nginx" || web1.Labels[api.LabelStatefulSetPodName] != "web-1" ||
		web1.Labels[api.LabelPodIndex] != "1" || !strings.HasPrefix(web1.Labels[api.LabelControllerRevisionHash], "web-") {
		t.Errorf("web-1's identity: host %s.%s labels %v", web1.Spec.Hostname, web1.Spec.Subdomain, web1.Labels)
	}
	mustKubectl(t, s, "1", "rollout", "history", "sts/web")

	// Each pod has its claim www-web-N, bound.
	for _, name := range []string{"www-web-0", "www-web-1"} {
		out := mustKubectl(t, s, "Bound", "get", "pvc", name)
		if !strings.Contains(out, "1Gi") || !strings.Contains(out, "RWO") || !strings.Contains(out, "local-path") {
			t.Errorf("kubectl get pvc %s:\n%s", name, out)
		}
	}

	// The page web-1 wrote in its volume outlives web-1: the controller
	// makes web-1 again, on the same node with the same claim. (kubectl
	// exec cannot reach a kubelet in its network namespace from here: the
	// test reads the volume's directory on the node.)
	page := claimFile(t, c, "www-web-1", "index.html")
	if !strings.HasPrefix(page, "web-1 ") || !strings.HasPrefix(claimFile(t, c, "www-web-0", "index.html"), "web-0 ") {
		t.Fatalf("web-1's volume has the page %q, want web-1's", page)
	}
	mustKubectl(t, s, `pod "web-1" deleted`, "delete", "pod", "web-1", "--timeout=60s")
	waitUntil(t, 2*time.Minute, "web-1 made again and ready", func() bool {
		p := stsPods(t, c)["web-1"]
		return p != nil && p.UID != web1.UID && p.Status.Phase == api.PodRunning && podReady(p)
	})
	again := stsPods(t, c)["web-1"]
	if again.Spec.NodeName != web1.Spec.NodeName || claimOf(again, "www") != "www-web-1" {
		t.Errorf("web-1 made again on %s with claim %q, was on %s", again.Spec.NodeName, claimOf(again, "www"), web1.Spec.NodeName)
	}
	if kept := claimFile(t, c, "www-web-1", "index.html"); kept != page {
		t.Errorf("web-1 made again: its page is %q, was %q", kept, page)
	}
	web1 = again

	// web-1 by name, from another pod, through the cluster DNS, serving
	// the file it kept.
	resolve := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "resolve"},
		Spec: api.PodSpec{RestartPolicy: api.RestartPolicyNever, Containers: []api.Container{{
			Name: "resolve", Image: containerdtest.PythonRuntimeImage,
			Command: []string{"python3", "-c", `import os, socket, sys, time, urllib.request
name = "web-1.nginx.default.svc.cluster.local"
for _ in range(30):
    try:
        got = socket.gethostbyname(name)
        print(got)
        if got != os.environ["WANT"]:
            sys.exit(1)
        body = urllib.request.urlopen("http://" + name + "/index.html", timeout=5).read().decode()
        print(body)
        sys.exit(0 if body == os.environ["PAGE"] else 3)
    except OSError as e:
        print(e)
        time.sleep(1)
sys.exit(2)`},
			Env: []api.EnvVar{{Name: "WANT", Value: web1.Status.PodIP}, {Name: "PAGE", Value: page}},
		}}}}
	if _, err := c.Pods("default").Create(ctx, resolve); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, c, "resolve", 2*time.Minute, "ended", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
	})
	if p.Status.Phase != api.PodSucceeded {
		logs, _, _ := kubectl(t, s, "logs", "resolve")
		t.Errorf("web-1.nginx.default.svc.cluster.local did not resolve to %s and serve its page from another pod: %s\n%s", web1.Status.PodIP, statusString(p), logs)
	}

	// Scale down: web-1 goes, web-0 stays; web-1's claim stays (whenScaled
	// Retain, the default).
	mustKubectl(t, s, "scaled", "scale", "sts", "web", "--replicas=1")
	waitUntil(t, time.Minute, "web-1 gone, web-0 kept", func() bool {
		pods := stsPods(t, c)
		return pods["web-1"] == nil && pods["web-0"] != nil && pods["web-0"].DeletionTimestamp == nil
	})
	waitUntil(t, 30*time.Second, "status 1 replica", func() bool {
		set, err := c.StatefulSets("default").Get(ctx, "web")
		return err == nil && set.Status.Replicas == 1 && set.Status.ReadyReplicas == 1
	})
	mustKubectl(t, s, "Bound", "get", "pvc", "www-web-1")

	// Scaled up again, web-1 mounts its claim of before, page and all.
	mustKubectl(t, s, "scaled", "scale", "sts", "web", "--replicas=2")
	waitUntil(t, 2*time.Minute, "web-1 back and ready", func() bool {
		p := stsPods(t, c)["web-1"]
		return p != nil && p.Status.Phase == api.PodRunning && podReady(p)
	})
	if p := stsPods(t, c)["web-1"]; claimOf(p, "www") != "www-web-1" || claimFile(t, c, "www-web-1", "index.html") != page {
		t.Errorf("web-1 scaled up again mounts %q holding %q, want www-web-1 holding %q", claimOf(p, "www"), claimFile(t, c, "www-web-1", "index.html"), page)
	}

	// Delete on both counts: scaling down deletes web-1's claim (once
	// web-1 is gone), deleting the set web-0's.
	mustKubectl(t, s, "patched", "patch", "sts", "web", "-p", `{"spec":{"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Delete","whenScaled":"Delete"}}}`)
	waitUntil(t, 30*time.Second, "www-web-0 owned by the set", func() bool {
		pvc, err := c.PersistentVolumeClaims("default").Get(ctx, "www-web-0")
		return err == nil && len(pvc.OwnerReferences) == 1 && pvc.OwnerReferences[0].Kind == "StatefulSet"
	})
	mustKubectl(t, s, "scaled", "scale", "sts", "web", "--replicas=1")
	waitUntil(t, time.Minute, "www-web-1 deleted with web-1", func() bool {
		_, err := c.PersistentVolumeClaims("default").Get(ctx, "www-web-1")
		return errdefs.IsNotFound(err)
	})
	if stsPods(t, c)["web-1"] != nil {
		t.Errorf("www-web-1 was deleted before web-1")
	}
	mustKubectl(t, s, `statefulset.apps "web" deleted`, "delete", "sts", "web")
	waitUntil(t, time.Minute, "www-web-0 deleted with the set", func() bool {
		_, err := c.PersistentVolumeClaims("default").Get(ctx, "www-web-0")
		return errdefs.IsNotFound(err)
	})
}

// claimFile is the file name in the directory of the volume bound to
// claim, on the node.
func claimFile(t *testing.T, c *client.Client, claim, name string) string {
	t.Helper()
	ctx := context.Background()
	pvc, err := c.PersistentVolumeClaims("default").Get(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := c.PersistentVolumes().Get(ctx, pvc.Spec.VolumeName)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.Local == nil {
		t.Fatalf("volume %s of claim %s is not a local volume: %+v", pv.Name, claim, pv.Spec)
	}
	data, err := os.ReadFile(filepath.Join(pv.Spec.Local.Path, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// claimOf is the claim the pod's volume vol mounts.
func claimOf(p *api.Pod, vol string) string {
	for _, v := range p.Spec.Volumes {
		if v.Name == vol && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}
