package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// policyClient runs in a pod: once both servers answer (the guarded one
// once its kubelet has let the client's address in), it opens a
// connection, sends a request and reads the answer to its end, alternately
// to the open server and the guarded one, ROUNDS times each after a
// warm-up, and prints the medians in milliseconds. Each connection is new,
// so each one's first packet goes through the guarded pod's rules.
const policyClient = clientOnce + `targets = {"open": (os.environ["OPEN_IP"], 8080), "guarded": (os.environ["GUARDED_IP"], 8080)}
deadline = time.time() + 60
for a in targets.values():
    while True:
        try:
            once(a)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
res = {k: [] for k in targets}
for i in range(20 + rounds):
    for k, a in targets.items():
        d = once(a)
        if i >= 20:
            res[k].append(d)
` + clientPrintMedians

// BenchmarkPodToPodWithPolicies measures, side by side in one run from a
// pod on node 1 of two, a connection and a request to a pod on node 2
// that no NetworkPolicy selects and to one that 50 select (49 allowing
// other sources and ports, ipBlocks half of them with exceptions, the
// last the client's namespace). b.N is the number of rounds.
func BenchmarkPodToPodWithPolicies(b *testing.B) {
	ctx := context.Background()
	u := framework.StartUnderlay(b, 2)
	as := u.StartAPIServer(b, nil)
	ctd := containerdtest.StartContainerd(b)
	ctd.ImportPythonRuntime(b)
	client1 := framework.StartNetKubelet(b, u.Nodes[0], as, ctd, "np-1")
	server2 := framework.StartNetKubelet(b, u.Nodes[1], as, ctd, "np-2")
	c := as.Client
	for _, ns := range []string{"open", "guarded", "clients"} {
		if _, err := c.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: ns, Labels: map[string]string{"team": ns}}}); err != nil {
			b.Fatal(err)
		}
	}
	ips := map[string]string{}
	var guardedUID string
	for _, ns := range []string{"open", "guarded"} {
		server := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec: api.PodSpec{NodeName: "np-2", Containers: []api.Container{{Name: "web", Image: containerdtest.PythonRuntimeImage,
				Command: []string{"python3", "-c", okServer},
				Ports:   []api.ContainerPort{{Name: "http", ContainerPort: 8080}},
			}}}}
		p, err := c.Pods(ns).Create(ctx, server)
		if err != nil {
			b.Fatal(err)
		}
		if ns == "guarded" {
			guardedUID = p.UID
		}
	}
	for i := 0; i < 50; i++ {
		np := &api.NetworkPolicy{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("p-%02d", i), Namespace: "guarded"},
			Spec: api.NetworkPolicySpec{PodSelector: api.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		port := api.IntOrString(strconv.Itoa(8000 + i))
		peer := api.NetworkPolicyPeer{IPBlock: &api.IPBlock{CIDR: fmt.Sprintf("198.18.%d.0/24", i)}}
		if i%2 == 1 {
			peer.IPBlock.Except = []string{fmt.Sprintf("198.18.%d.128/25", i)}
		}
		if i == 49 {
			port = "http"
			peer = api.NetworkPolicyPeer{NamespaceSelector: &api.LabelSelector{MatchLabels: map[string]string{"team": "clients"}}}
		}
		np.Spec.Ingress = []api.NetworkPolicyIngressRule{{From: []api.NetworkPolicyPeer{peer}, Ports: []api.NetworkPolicyPort{{Port: &port}}}}
		if _, err := c.NetworkPolicies("guarded").Create(ctx, np); err != nil {
			b.Fatal(err)
		}
	}
	for _, ns := range []string{"open", "guarded"} {
		waitBench(b, 2*time.Minute, ns+"'s server running", func() bool {
			p, err := c.Pods(ns).Get(ctx, "web")
			ips[ns] = ""
			if err == nil && p.Status.Phase == api.PodRunning {
				ips[ns] = p.Status.PodIP
			}
			return ips[ns] != ""
		})
	}
	netnsOf := filepath.Join(server2.RootDir, "network", "netns", guardedUID)
	waitBench(b, time.Minute, "the guarded pod's rules", func() bool {
		out, err := u.Nodes[1].Command(ctx, "nsenter", "--net="+netnsOf, "iptables-save", "-t", "filter").CombinedOutput()
		return err == nil && strings.Count(string(out), "-A MINIK8S-NP-IN ") >= 50
	})
	rounds := max(b.N, 200)
	clientPod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "client", Namespace: "clients"},
		Spec: api.PodSpec{NodeName: "np-1", RestartPolicy: api.RestartPolicyNever, Containers: []api.Container{{
			Name: "client", Image: containerdtest.PythonRuntimeImage, Command: []string{"python3", "-c", policyClient},
			Env: []api.EnvVar{{Name: "OPEN_IP", Value: ips["open"]}, {Name: "GUARDED_IP", Value: ips["guarded"]}, {Name: "ROUNDS", Value: strconv.Itoa(rounds)}},
		}}}}
	medians := runClientPod(ctx, b, c, client1.RootDir, clientPod)
	b.ReportMetric(medians["open"], "no-policy-p50-ms")
	b.ReportMetric(medians["guarded"], "50-policies-p50-ms")
	b.ReportMetric(medians["guarded"]/medians["open"], "policies-vs-none-ratio")
}
