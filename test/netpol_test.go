package test

import (
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// policyManifest is Kubernetes' documented deny-all ingress policy and an
// allowance of the namespace's own pods, in namespace a; and, in b, no
// egress for the pods labelled locked.
const policyManifest = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: default-deny-ingress
  namespace: a
spec:
  podSelector: {}
  policyTypes:
  - Ingress
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: allow-same-namespace
  namespace: a
spec:
  podSelector: {}
  ingress:
  - from:
    - podSelector: {}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: locked-egress
  namespace: b
spec:
  podSelector:
    matchLabels: {role: locked}
  policyTypes:
  - Egress
`

// policyProber connects to each of DENY once, wanting a refusal, and fetches
// each of URLS, wanting WANT, for up to 30s: a peer's address reaches the
// rules of the pod it talks to once that pod's kubelet has seen it.
const policyProber = probeLib + `time.sleep(1)
ok = denied(3)
for url in os.environ.get("URLS", "").split():
    deadline = time.time() + 30
    while True:
        body = fetch(url, 3)
        if body == os.environ["WANT"] or time.time() > deadline:
            break
        time.sleep(0.5)
    print(url, "->", repr(body), flush=True)
    ok = ok and body == os.environ["WANT"]
sys.exit(0 if ok else 1)
`

// TestNetworkPolicyWithKubectl: on two nodes whose pods have their own
// network, the real kubectl applies a deny-all ingress NetworkPolicy and
// an allowance of the namespace's own pods in namespace a: a pod of
// namespace b, on the web pod's node and on the other, cannot connect to
// a's web pod, a pod of a reaches it; a pod of b whose egress a policy
// denies reaches nothing, another of b reaches b's web pod. Once kubectl
// deletes a's policies, b's pods reach a's web pod again.
func TestNetworkPolicyWithKubectl(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	u := framework.StartUnderlay(t, 2)
	s := u.StartAPIServer(t, nil)
	kubelets := map[string]*framework.NetKubelet{}
	for i, node := range u.Nodes {
		name := []string{"np-1", "np-2"}[i]
		kubelets[name] = framework.StartNetKubelet(t, node, s, ctd, name)
	}
	c := s.Client
	mustKubectl(t, s, "namespace/b created", "create", "namespace", "b")
	mustKubectl(t, s, "namespace/a created", "create", "namespace", "a")

	apply := func(name string, pods ...*api.Pod) {
		t.Helper()
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": pods}
		for _, p := range pods {
			p.APIVersion, p.Kind = "v1", "Pod"
		}
		body, err := json.Marshal(list)
		if err != nil {
			t.Fatal(err)
		}
		mustKubectl(t, s, "created", "apply", "-f", writeManifest(t, name+".json", string(body)))
	}
	webA, webB := webPod("web", "np-1"), webPod("web", "np-2")
	webA.Namespace, webB.Namespace = "a", "b"
	apply("webs", webA, webB)
	ip := map[string]string{}
	for _, ns := range []string{"a", "b"} {
		p := waitPodIn(t, c, ns, "web", "running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning && p.Status.PodIP != "" })
		ip[ns] = net.JoinHostPort(p.Status.PodIP, "8080")
	}

	mustKubectl(t, s, "networkpolicy.networking.k8s.io/default-deny-ingress created", "apply", "-f", writeManifest(t, "policies.yaml", policyManifest))
	out := mustKubectl(t, s, "default-deny-ingress", "get", "netpol", "-n", "a")
	if !strings.Contains(out, "POD-SELECTOR") || !strings.Contains(out, "<none>") {
		t.Errorf("kubectl get netpol:\n%s", out)
	}
	mustKubectl(t, s, "role=locked", "get", "networkpolicies", "-n", "b")
	// The web pod's kubelet has its rules before anyone knocks.
	webPodA, _ := c.Pods("a").Get(ctx, "web")
	waitRules(t, kubelets["np-1"], webPodA.UID, "MINIK8S-NP-IN")

	probe := func(ns, name, node string, labels map[string]string, urls, want string, deny ...string) *api.Pod {
		return &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: api.PodSpec{NodeName: node, RestartPolicy: api.RestartPolicyNever, Containers: []api.Container{{
				Name: "probe", Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", policyProber},
				Env: []api.EnvVar{{Name: "URLS", Value: urls}, {Name: "WANT", Value: want}, {Name: "DENY", Value: strings.Join(deny, " ")}},
			}}}}
	}
	succeed := func(pods ...*api.Pod) {
		t.Helper()
		for _, p := range pods {
			got := waitPodIn(t, c, p.Namespace, p.Name, "ended", func(p *api.Pod) bool {
				return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
			})
			if got.Status.Phase != api.PodSucceeded {
				t.Errorf("pod %s/%s on %s: %s\n%s", p.Namespace, p.Name, p.Spec.NodeName, statusString(got), podLog(kubelets[p.Spec.NodeName], got))
			}
		}
	}
	pods := []*api.Pod{
		probe("b", "near", "np-1", nil, "http://"+ip["b"]+"/", "hello from web", ip["a"]),
		probe("b", "far", "np-2", nil, "", "", ip["a"]),
		probe("b", "locked", "np-1", map[string]string{"role": "locked"}, "", "", ip["b"], ip["a"]),
		probe("a", "friend", "np-2", nil, "http://"+ip["a"]+"/", "hello from web"),
	}
	apply("probes", pods...)
	succeed(pods...)

	mustKubectl(t, s, "deleted", "delete", "networkpolicy", "--all", "-n", "a")
	waitUntil(t, time.Minute, "a's web pod without rules", func() bool { return !hasRules(kubelets["np-1"], webPodA.UID, "MINIK8S-NP-IN") })
	after := []*api.Pod{probe("b", "after", "np-2", nil, "http://"+ip["a"]+"/", "hello from web")}
	apply("after", after...)
	succeed(after...)
}

// waitPodIn waits for cond on pod ns/name.
func waitPodIn(t *testing.T, c *client.Client, ns, name, what string, cond func(*api.Pod) bool) *api.Pod {
	t.Helper()
	var p *api.Pod
	waitUntil(t, 2*time.Minute, ns+"/"+name+" "+what, func() bool {
		var err error
		p, err = c.Pods(ns).Get(context.Background(), name)
		return err == nil && cond(p)
	})
	return p
}

// hasRules tells whether the filter table of the pod's own namespace, on
// kubelet k's node, has chain.
func hasRules(k *framework.NetKubelet, uid, chain string) bool {
	out, err := exec.Command("nsenter", "--net="+filepath.Join(k.RootDir, "network", "netns", uid), "iptables-save", "-t", "filter").CombinedOutput()
	return err == nil && strings.Contains(string(out), ":"+chain)
}

func waitRules(t *testing.T, k *framework.NetKubelet, uid, chain string) {
	t.Helper()
	waitUntil(t, time.Minute, "the pod's "+chain+" rules", func() bool { return hasRules(k, uid, chain) })
}
