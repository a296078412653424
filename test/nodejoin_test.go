package test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/kubelet"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// TestNodeJoinAndRestriction: kubelets on the secure port run pods with
// credentials of their own (issued from the cluster CA, as minik8s up
// issues its node's: a node joining with the token gets no serving
// certificate for a loopback address such as theirs, and the join is
// TestJoinRejoinRenew's and TestMinik8sUpBinaries'); a node's credentials
// cannot touch another node's Node or pods; a token whose CA hash is not
// the server's is not sent.
func TestNodeJoinAndRestriction(t *testing.T) {
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	s := framework.StartSecureAPIServer(t, "")
	ka := framework.SecureKubelet(t, s, ctd, "join-a", "127.0.0.71")
	framework.SecureKubelet(t, s, ctd, "join-b", "127.0.0.72")
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for _, n := range []string{"join-a", "join-b"} {
		for {
			_, err := s.Client.Nodes().Get(ctx, n)
			if c := (*api.NodeCondition)(nil); err == nil {
				if c = nodeReady(t, ctx, s.Client, n); c != nil && c.Status == api.ConditionTrue {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s not ready a minute after joining: %v\n%s", n, err, ka.Config.RootDir)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	pod, err := s.Client.Pods("default").Create(ctx, pythonPod("on-a", "join-a", "import time; print('hello from a', flush=True); time.sleep(600)"))
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.Client, pod.Name, 2*time.Minute, "running on join-a", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning })

	// Its logs come through the apiserver from the kubelet's TLS port,
	// which takes no one but the apiserver.
	nodeA, err := s.Client.Nodes().Get(ctx, "join-a")
	if err != nil {
		t.Fatal(err)
	}
	if ep := nodeA.Status.DaemonEndpoints.KubeletEndpoint; ep.Scheme != "https" || ep.Port == 0 {
		t.Fatalf("node join-a's kubelet endpoint: %+v, want https", ep)
	}
	waitUntil(t, time.Minute, "the pod's log through the apiserver", func() bool {
		rc, err := s.Client.PodLogs(ctx, "default", "on-a", client.LogOptions{})
		if err != nil {
			return false
		}
		defer rc.Close()
		data, _ := io.ReadAll(rc)
		return strings.Contains(string(data), "hello from a")
	})
	// kubectl exec goes the same way: its websocket is upgraded through to
	// the kubelet's TLS port, whose certificate must be join-a's.
	if out, errOut, err := kubectl(t, s, "exec", "on-a", "--", "echo", "exec on a"); err != nil || out != "exec on a\n" {
		t.Errorf("kubectl exec on a joined node: %v %q %q", err, out, errOut)
	}
	kubeletURL := fmt.Sprintf("127.0.0.71:%d", nodeA.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if resp, err := http.Get("http://" + kubeletURL + "/pods"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("the kubelet answered plain HTTP")
		}
	}
	nobody := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if resp, err := nobody.Get("https://" + kubeletURL + "/pods"); err == nil {
		resp.Body.Close()
		t.Errorf("the kubelet answered a client without a certificate: %s", resp.Status)
	}

	// Node b, with credentials of its own.
	cfg, err := apiserver.ClientConfigFor(s.DataDir, s.SecureURL, rbac.NodeUserPrefix+"join-b", rbac.NodesGroup)
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	onA, err := b.Pods("default").Get(ctx, "on-a")
	if err != nil {
		t.Fatalf("node b reading pods: %v", err)
	}
	onA.Status.Phase = api.PodFailed
	if _, err := b.Pods("default").UpdateStatus(ctx, onA); !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), `bound to "join-a"`) {
		t.Errorf("node b updating the status of a pod on join-a: %v, want 403", err)
	}
	if _, err := b.Pods("default").Delete(ctx, "on-a", client.DeleteOptions{}); !errdefs.IsForbidden(err) {
		t.Errorf("node b deleting a pod on join-a: %v, want 403", err)
	}
	if _, err := b.Pods("default").Create(ctx, pythonPod("by-b", "join-a", "pass")); !errdefs.IsForbidden(err) {
		t.Errorf("node b creating a pod bound to join-a: %v, want 403", err)
	}
	nodeA, err = b.Nodes().Get(ctx, "join-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Nodes().UpdateStatus(ctx, nodeA); !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "its own Node") {
		t.Errorf("node b updating node join-a: %v, want 403", err)
	}
	if _, err := b.Nodes().Delete(ctx, "join-a", client.DeleteOptions{}); !errdefs.IsForbidden(err) {
		t.Errorf("node b deleting node join-a: %v, want 403", err)
	}
	if _, _, err := b.Secrets("default").List(ctx, client.ListOptions{}); !errdefs.IsForbidden(err) {
		t.Errorf("node b listing secrets: %v, want 403", err)
	}
	if p, err := s.Client.Pods("default").Get(ctx, "on-a"); err != nil || p.Status.Phase != api.PodRunning {
		t.Errorf("pod on-a after node b's attempts: %v %v", p, err)
	}

	// A token for another CA: the kubelet refuses to send it.
	bad := kubelet.Config{APIServer: s.SecureURL, Token: "K10" + strings.Repeat("ab", 32) + "::node:secret", NodeName: "join-c",
		NodeIP: "127.0.0.73", PodNetwork: kubelet.PodNetworkHost, ContainerdAddress: ctd.Address, RootDir: filepath.Join(t.TempDir(), "c")}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := kubelet.Run(rctx, bad); err == nil || !strings.Contains(err.Error(), "refusing to send it the token") {
		t.Errorf("kubelet with a token of another CA: %v", err)
	}
}
