package test

import (
	"os"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// TestKubectlRunAndPodDNS: kubectl run, as a user types it (it sends
// dnsPolicy: ClusterFirst), starts a pod on real containerd; a pod's
// dnsPolicy and dnsConfig make its /etc/resolv.conf as Kubernetes'
// kubelet makes it: None is dnsConfig alone, and ClusterFirst on the
// node's network (this kubelet's pods share it) is the node's resolver;
// spec.hostname names the pod's host, and hostAliases add to its hosts.
func TestKubectlRunAndPodDNS(t *testing.T) {
	t.Parallel()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	as := framework.StartAPIServer(t)
	framework.StartKubelet(t, as.URL, ctd, "node-x", "127.0.0.28")
	run := func(want string, args ...string) string { t.Helper(); return mustKubectl(t, as, want, args...) }
	sleep := []string{"--", "python3", "-c", "import time; time.sleep(600)"}

	// No scheduler runs here: the pods name their node.
	run("pod/hp created", append([]string{"run", "hp", "--image", containerdtest.PythonRuntimeImage,
		"--overrides", `{"spec":{"nodeName":"node-x"}}`}, sleep...)...)
	run("pod/dns created", append([]string{"run", "dns", "--image", containerdtest.PythonRuntimeImage,
		"--overrides", `{"spec":{"nodeName":"node-x","dnsPolicy":"None","dnsConfig":{"nameservers":["192.0.2.7"],"searches":["a.example"],"options":[{"name":"ndots","value":"2"}]},` +
			`"hostname":"custom-host","hostAliases":[{"ip":"192.0.2.10","hostnames":["foo.local","bar.local"]}]}}`}, sleep...)...)
	for _, name := range []string{"hp", "dns"} {
		waitPod(t, as.Client, name, 60*time.Second, "Running", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning })
	}
	run("ClusterFirst", "get", "pod", "hp", "-o", "jsonpath={.spec.dnsPolicy}")

	if got, want := run("", "exec", "dns", "--", "cat", "/etc/resolv.conf"), "search a.example\nnameserver 192.0.2.7\noptions ndots:2\n"; got != want {
		t.Errorf("dnsPolicy None: resolv.conf\n%s\nwant\n%s", got, want)
	}
	node, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	if got := run("", "exec", "hp", "--", "cat", "/etc/resolv.conf"); got != string(node) {
		t.Errorf("ClusterFirst on the node's network: resolv.conf\n%s\nwant the node's\n%s", got, node)
	}
	// The pod's host name, and hostAliases added to the node's hosts file
	// (these pods share the node's network).
	if got := run("", "exec", "dns", "--", "python3", "-c", "import socket; print(socket.gethostname())"); got != "custom-host\n" {
		t.Errorf("spec.hostname: the pod's host name is %q, want custom-host", got)
	}
	hosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	if got := run("", "exec", "dns", "--", "cat", "/etc/hosts"); !strings.HasPrefix(got, string(hosts)) ||
		!strings.HasSuffix(got, "# Entries added by HostAliases.\n192.0.2.10\tfoo.local\tbar.local\n") {
		t.Errorf("hostAliases: /etc/hosts\n%s\nwant the node's with the aliases added", got)
	}
	// A policy Kubernetes does not know is refused naming the field.
	_, errOut, err := kubectl(t, as, "run", "bad", "--image", containerdtest.PythonRuntimeImage, "--overrides", `{"spec":{"dnsPolicy":"Sometimes"}}`)
	if err == nil || !strings.Contains(errOut, "spec.dnsPolicy") {
		t.Errorf("dnsPolicy Sometimes: %v, want an error naming spec.dnsPolicy:\n%s", err, errOut)
	}
}
