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
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// webStatefulSet is the StatefulSet of Kubernetes' documentation (a
// headless Service nginx and the set web, two replicas), its server the
// node runtime's image.
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
        command: ["python3", "-m", "http.server", "80"]
        ports:
        - containerPort: 80
          name: web
        readinessProbe:
          tcpSocket:
            port: 80
          periodSeconds: 1
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
// rollout's status, history and scale are kubectl's; scaling down removes
// web-1 first.
func TestStatefulSet(t *testing.T) {
	ctx := context.Background()
	u := framework.StartUnderlay(t, 1)
	s := u.StartAPIServer(t, nil)
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	framework.StartNetKubelet(t, u.Nodes[0], s, ctd, "sts-1")
	framework.StartControllers(t, s, controller.Config{})
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

	// web-1 by name, from another pod, through the cluster DNS.
	resolve := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "resolve"},
		Spec: api.PodSpec{RestartPolicy: api.RestartPolicyNever, Containers: []api.Container{{
			Name: "resolve", Image: containerdtest.PythonRuntimeImage,
			Command: []string{"python3", "-c", `import os, socket, sys, time
for _ in range(30):
    try:
        got = socket.gethostbyname("web-1.nginx.default.svc.cluster.local")
        print(got)
        sys.exit(0 if got == os.environ["WANT"] else 1)
    except OSError as e:
        print(e)
        time.sleep(1)
sys.exit(2)`},
			Env: []api.EnvVar{{Name: "WANT", Value: web1.Status.PodIP}},
		}}}}
	if _, err := c.Pods("default").Create(ctx, resolve); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, c, "resolve", 2*time.Minute, "ended", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
	})
	if p.Status.Phase != api.PodSucceeded {
		logs, _, _ := kubectl(t, s, "logs", "resolve")
		t.Errorf("web-1.nginx.default.svc.cluster.local did not resolve to %s from another pod: %s\n%s", web1.Status.PodIP, statusString(p), logs)
	}

	// Scale down: web-1 goes, web-0 stays.
	mustKubectl(t, s, "scaled", "scale", "sts", "web", "--replicas=1")
	waitUntil(t, time.Minute, "web-1 gone, web-0 kept", func() bool {
		pods := stsPods(t, c)
		return pods["web-1"] == nil && pods["web-0"] != nil && pods["web-0"].DeletionTimestamp == nil
	})
	waitUntil(t, 30*time.Second, "status 1 replica", func() bool {
		set, err := c.StatefulSets("default").Get(ctx, "web")
		return err == nil && set.Status.Replicas == 1 && set.Status.ReadyReplicas == 1
	})
}
