package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// classLimits are a LimitRange and a ResourceQuota for a namespace a class
// shares, as Kubernetes' documentation writes them.
const classLimits = `apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
  namespace: class-a
spec:
  limits:
  - type: Container
    default:
      cpu: 200m
      memory: 64Mi
    defaultRequest:
      cpu: 100m
      memory: 32Mi
    max:
    - cpu: "1"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: class-quota
  namespace: class-a
spec:
  hard:
    pods: "3"
    requests.cpu: 300m
    limits.memory: 1Gi
    count/configmaps: "1"
`

// TestResourceQuotaAndLimitRange: with stock kubectl, a namespace's
// LimitRange gives a pod its defaults and refuses one past its max; its
// ResourceQuota refuses (403 naming the quota and the figures) a pod past
// its CPU, a pod past its count and a ConfigMap past count/configmaps,
// reports its usage (kubectl get quota), frees what a deleted pod held,
// and holds under creates racing for its last place; a namespace's
// editor may not change the quota.
func TestResourceQuotaAndLimitRange(t *testing.T) {
	s := framework.StartAPIServer(t)
	framework.StartControllers(t, s, controller.Config{})
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pod := func(name, cpuReq, cpuLim string) string {
		res := ""
		if cpuReq != "" || cpuLim != "" {
			res = "\n    resources:"
			if cpuReq != "" {
				res += "\n      requests:\n        cpu: " + cpuReq
			}
			if cpuLim != "" {
				res += "\n      limits:\n        cpu: \"" + cpuLim + "\""
			}
		}
		return write(name+".yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: "+name+"\n  namespace: class-a\nspec:\n  containers:\n  - name: c\n    image: busybox"+res+"\n")
	}
	refused := func(file, want string) {
		t.Helper()
		out, errOut, err := kubectl(t, s, "apply", "-f", file)
		if err == nil || !strings.Contains(errOut, "Forbidden") || !strings.Contains(errOut, want) {
			t.Fatalf("kubectl apply -f %s: %v, want Forbidden and %q in\n%s%s", filepath.Base(file), err, want, out, errOut)
		}
	}
	mustKubectl(t, s, "namespace/class-a created", "create", "namespace", "class-a")
	// The max above is written as a list by mistake: refused, named.
	if _, errOut, err := kubectl(t, s, "apply", "-f", write("bad.yaml", strings.Split(classLimits, "---")[0])); err == nil || !strings.Contains(errOut, "max") {
		t.Fatalf("a LimitRange whose max is a list: %v\n%s", err, errOut)
	}
	limits := write("limits.yaml", strings.Replace(classLimits, "    max:\n    - cpu: \"1\"", "    max:\n      cpu: \"1\"", 1))
	mustKubectl(t, s, "resourcequota/class-quota created", "apply", "-f", limits)
	waitUntil(t, 30*time.Second, "the quota's usage counted", func() bool {
		q, err := s.Client.ResourceQuotas("class-a").Get(ctx, "class-quota")
		return err == nil && q.Status.Hard["pods"] == "3" && q.Status.Used["pods"] == "0"
	})

	// Defaults from the LimitRange.
	mustKubectl(t, s, "pod/p1 created", "apply", "-f", pod("p1", "", ""))
	p1, err := s.Client.Pods("class-a").Get(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if r := p1.Spec.Containers[0].Resources; r.Requests["cpu"] != "100m" || r.Limits["cpu"] != "200m" || r.Limits["memory"] != "64Mi" ||
		!strings.Contains(p1.Annotations["kubernetes.io/limit-ranger"], "cpu, memory request for container c") {
		t.Fatalf("p1's resources %+v, annotations %v: want the LimitRange's defaults", r, p1.Annotations)
	}
	refused(pod("big", "500m", "2"), "maximum cpu usage per Container is 1, but limit is 2")

	// The quota: CPU, then the pod count.
	refused(pod("p2", "250m", "1"), "exceeded quota: class-quota, requested: requests.cpu=250m, used: requests.cpu=100m, limited: requests.cpu=300m")
	mustKubectl(t, s, "pod/p2 created", "apply", "-f", pod("p2", "100m", "1"))
	mustKubectl(t, s, "pod/p3 created", "apply", "-f", pod("p3", "50m", "1"))
	refused(pod("p4", "10m", "1"), "exceeded quota: class-quota, requested: pods=1, used: pods=3, limited: pods=3")
	mustKubectl(t, s, "configmap/one created", "create", "configmap", "one", "-n", "class-a")
	if _, errOut, err := kubectl(t, s, "create", "configmap", "two", "-n", "class-a"); err == nil || !strings.Contains(errOut, "count/configmaps=1") {
		t.Fatalf("a second ConfigMap: %v\n%s", err, errOut)
	}
	waitUntil(t, 30*time.Second, "kubectl get quota showing the usage", func() bool {
		out, _, err := kubectl(t, s, "get", "quota", "-n", "class-a")
		return err == nil && strings.Contains(out, "pods: 3/3") && strings.Contains(out, "requests.cpu: 250m/300m") && strings.Contains(out, "limits.memory: 192Mi/1Gi")
	})

	// A deleted pod frees its place; creates racing for it get one.
	mustKubectl(t, s, `pod "p1" deleted`, "delete", "pod", "p1", "-n", "class-a", "--wait=false")
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("race-%d", i), Namespace: "class-a"},
				Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "busybox",
					Resources: api.ResourceRequirements{Requests: api.ResourceList{"cpu": "10m"}}}}}}
			if _, err := s.Client.Pods("class-a").Create(ctx, p); err == nil {
				mu.Lock()
				created++
				mu.Unlock()
			} else if !strings.Contains(err.Error(), "exceeded quota") {
				t.Errorf("race-%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	pods, _, err := s.Client.Pods("class-a").List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alive := 0
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			alive++
		}
	}
	if created != 1 || alive != 3 {
		t.Fatalf("creates racing for one place: %d taken, %d pods alive; want 1 and 3", created, alive)
	}
}
