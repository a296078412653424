package test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/controller"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/labels"
	"minik8s/pkg/owner"
	"minik8s/pkg/podstatus"
	"minik8s/pkg/rbac"
	"minik8s/scheduler"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// whereCode answers with the namespace and the pod its call ran in, as
// the pod's kubelet told its process.
const whereCode = "import os\ndef run(arg):\n    return os.environ.get('POD_NAMESPACE', '?') + ' ' + os.environ.get('POD_NAME', '?') + ' ' + arg\n"

// TestWarmPoolColdCalls (issue 28, part 1): on a node whose pods have
// their own network, with a warm pool of one pod per namespace, a function
// at zero answers its first call from a warm generic pod created before
// the call, and no pod of the function is created for it; the pod joins
// the function's ReplicaSet, the pool is refilled, and the function goes
// back to zero. A v1 function's step runs in a warm pod, removed after it. A function of another namespace is served by its own
// namespace's warm pod: neither's code runs in the other's pod. A function
// that cannot use a warm pod (a call timeout above a warm pod's grace)
// takes the path of its own pods and still answers.
func TestWarmPoolColdCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportFunctionRuntime(t)
	u := framework.StartUnderlay(t, 1)
	cp := u.ControlPlane(t)
	s := u.StartSecureAPIServer(t, cp)
	// A runner as a node runs one: with its certificate of the cluster CA,
	// which warm pods ask of whoever specialises them.
	framework.StartSecureNetFuncRunner(t, u.Nodes[0], s, framework.AdvertisedURL(s, cp))
	framework.StartControllers(t, s, controller.Config{FuncScaleInterval: time.Second, FuncIdleWindow: 5 * time.Second, WarmPoolSize: 1})
	framework.StartScheduler(t, s, scheduler.Config{})
	framework.StartNetKubelet(t, u.Nodes[0], s, ctd, "warm-1")
	c := s.Client
	if _, err := c.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: "team-b"}}); err != nil {
		t.Fatal(err)
	}
	warmFunc(t, s, "default", "hot", nil)
	warmFunc(t, s, "team-b", "other", nil)

	warmA := readyWarmPod(t, c, "default", "")
	warmB := readyWarmPod(t, c, "team-b", "")
	before := podUIDs(t, c)

	// The first call of a function at zero.
	v := warmCall(t, s, "default", "hot", "one")
	if string(v.Result) != "default "+warmA.Name+" one" {
		t.Fatalf("the first call ran in %q, want default's warm pod %s", v.Result, warmA.Name)
	}
	if n := len(v.Steps); n != 1 || v.Steps[0].Pod != warmA.Name {
		t.Fatalf("the call's step names pod %+v, want %s", v.Steps, warmA.Name)
	}
	fnPods := funcPods(t, c, "default", "hot")
	for _, p := range fnPods {
		if !before[p.UID] {
			t.Errorf("pod %s of the function was created during the call", p.Name)
		}
	}

	// A second call goes to the same pod (before the function can go idle).
	if v := warmCall(t, s, "default", "hot", "two"); string(v.Result) != "default "+warmA.Name+" two" {
		t.Fatalf("the second call ran in %q, want %s", v.Result, warmA.Name)
	}

	// The pod joins the function's ReplicaSet, and no other is made.
	waitUntil(t, time.Minute, "the claimed pod owned by the function's ReplicaSet", func() bool {
		f, err := c.Funcs("default").Get(ctx, "hot")
		p, perr := c.Pods("default").Get(ctx, warmA.Name)
		return err == nil && perr == nil && f.Status.ReplicaSetUID != "" && owner.IsControlledBy(&p.ObjectMeta, f.Status.ReplicaSetUID) &&
			p.Labels[function.LabelWarm] == "" && p.Labels[function.LabelCode] == function.CodeHash(&f.Spec)
	})
	// Under load the ReplicaSet may start a pod of its own before the
	// runner's relabel of the claim lands; it then has one pod too many and
	// removes the newer, not ready one: the function ends with the claimed
	// pod alone.
	waitUntil(t, time.Minute, "the claimed pod the function's only one", func() bool {
		pods := funcPods(t, c, "default", "hot")
		return len(pods) == 1 && pods[0].Name == warmA.Name
	})
	// A runner may update a pod only to claim a warm one: not to relabel
	// the function's pod into another Service, nor the refill's spec.
	runner := runnerClient(t, s)
	claimed, err := runner.Pods("default").Get(ctx, warmA.Name)
	if err != nil {
		t.Fatal(err)
	}
	claimed.Labels["app"] = "web"
	if _, err := runner.Pods("default").Update(ctx, claimed); !errdefs.IsForbidden(err) {
		t.Fatalf("a runner relabelling a pod that is not warm: %v, want forbidden", err)
	}
	// The pool is refilled.
	refill := readyWarmPod(t, c, "default", warmA.Name)
	if refill.UID == warmA.UID {
		t.Fatal("the refill is the claimed pod")
	}
	refill.Labels = function.ClaimLabels(refill.Labels, &api.Func{ObjectMeta: api.ObjectMeta{Name: "hot"}})
	refill.Annotations = map[string]string{function.AnnotationClaimed: time.Now().UTC().Format(time.RFC3339Nano)}
	refill.Spec.Containers[0].Image = "evil"
	if _, err := runner.Pods("default").Update(ctx, refill); !errdefs.IsForbidden(err) {
		t.Fatalf("a runner changing a warm pod's spec: %v, want forbidden", err)
	}

	// Another namespace: its own warm pod, never default's.
	if v := warmCall(t, s, "team-b", "other", "b"); string(v.Result) != "team-b "+warmB.Name+" b" {
		t.Fatalf("team-b's call ran in %q, want team-b's warm pod %s", v.Result, warmB.Name)
	}
	for _, ns := range []string{"default", "team-b"} {
		for _, p := range allPods(t, c, ns) {
			if fn := p.Labels[function.LabelFunc]; fn != "" && fn != map[string]string{"default": "hot", "team-b": "other"}[ns] {
				t.Errorf("pod %s/%s serves function %q of another namespace", ns, p.Name, fn)
			}
		}
	}

	// Back to zero: the function's pods go, the pool stays.
	waitUntil(t, 2*time.Minute, "the function back to zero pods", func() bool {
		return len(funcPods(t, c, "default", "hot")) == 0
	})
	readyWarmPod(t, c, "default", warmA.Name)

	// A v1 function (a fresh pod per step) runs its step in a warm pod
	// made before the call, removed after it.
	warmFunc(t, s, "default", "once", map[string]any{"apiVersion": "v1"})
	pool0 := podUIDs(t, c)
	v = warmCall(t, s, "default", "once", "v1")
	if !strings.HasPrefix(string(v.Result), "default func-warm-") {
		t.Fatalf("the v1 step ran in %q, not a warm pod", v.Result)
	}
	stepPod, err := c.Pods("default").Get(ctx, v.Steps[0].Pod)
	if err == nil && !pool0[stepPod.UID] {
		t.Fatalf("the v1 step's pod %s was made during the call", stepPod.Name)
	}
	waitUntil(t, time.Minute, "the v1 step's warm pod removed", func() bool {
		p, err := c.Pods("default").Get(ctx, v.Steps[0].Pod)
		return errdefs.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil)
	})

	// A function whose calls outlast a warm pod's grace takes its own pods.
	long := function.WarmTimeoutSeconds + 1
	warmFunc(t, s, "default", "long", map[string]any{"timeoutSeconds": long})
	pool := podUIDs(t, c)
	v = warmCall(t, s, "default", "long", "own")
	served, err := c.Pods("default").Get(ctx, v.Steps[0].Pod)
	if err != nil {
		t.Fatal(err)
	}
	if pool[served.UID] || !strings.HasPrefix(served.Name, function.ObjectName("long")+"-") {
		t.Fatalf("a function that cannot use a warm pod ran in %s, not a pod of its own", served.Name)
	}
}

// runnerClient is a client of s's secure port as a function runner.
func runnerClient(t *testing.T, s *framework.APIServer) *client.Client {
	t.Helper()
	cc, err := apiserver.ClientConfigFor(s.DataDir, s.SecureURL, "system:funcrunner:probe", rbac.FuncRunnersGroup)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewForConfig(cc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// warmFunc stores a v2 function at zero running whereCode in ns.
func warmFunc(t *testing.T, s *framework.APIServer, ns, name string, extra map[string]any) {
	t.Helper()
	spec := map[string]any{"name": name, "function": base64.StdEncoding.EncodeToString([]byte(whereCode)),
		"left": "RETURN", "right": "RETURN", "minInstanceNum": 0, "initInstanceNum": 0, "maxInstanceNum": 3}
	for k, v := range extra {
		spec[k] = v
	}
	version := "v2"
	if v, ok := extra["apiVersion"].(string); ok {
		version = v
		delete(spec, "apiVersion")
	}
	body, _ := json.Marshal(map[string]any{"apiVersion": version, "kind": "Func",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec})
	if code, data := httpDo(t, "POST", s.URL+"/api/funcs/template", "application/json", body); code != http.StatusCreated {
		t.Fatalf("create func %s/%s: %d %s", ns, name, code, data)
	}
}

func warmCall(t *testing.T, s *framework.APIServer, ns, fn, arg string) api.FuncInstanceView {
	t.Helper()
	code, data := httpDo(t, "POST", s.URL+"/api/funcs/"+fn+"?namespace="+ns+"&wait=120s", "application/octet-stream", []byte(arg))
	var v api.FuncInstanceView
	if code != http.StatusOK || json.Unmarshal(data, &v) != nil || v.Status != api.InstanceSucceeded {
		t.Fatalf("call %s/%s: %d %s", ns, fn, code, data)
	}
	return v
}

// readyWarmPod waits for a ready warm pod of ns other than not.
func readyWarmPod(t *testing.T, c *client.Client, ns, not string) *api.Pod {
	t.Helper()
	var found *api.Pod
	waitUntil(t, 2*time.Minute, "a ready warm pod in "+ns, func() bool {
		for _, p := range allPods(t, c, ns) {
			if _, warm := p.Labels[function.LabelWarm]; warm && p.Name != not && p.DeletionTimestamp == nil && podstatus.IsReady(p) {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

func allPods(t *testing.T, c *client.Client, ns string) []*api.Pod {
	t.Helper()
	pods, _, err := c.Pods(ns).List(context.Background(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

func funcPods(t *testing.T, c *client.Client, ns, fn string) []*api.Pod {
	t.Helper()
	sel := labels.SelectorFromSet(function.Selector(fn))
	var out []*api.Pod
	for _, p := range allPods(t, c, ns) {
		if sel.Matches(p.Labels) && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func podUIDs(t *testing.T, c *client.Client) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, ns := range []string{"default", "team-b"} {
		for _, p := range allPods(t, c, ns) {
			out[p.UID] = true
		}
	}
	return out
}
