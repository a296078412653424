package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"minik8s/test/framework"
)

// kubectl runs the real kubectl against s's local port, with a private
// HOME (its discovery cache) so that runs do not share what they learnt.
func kubectl(t *testing.T, s *framework.APIServer, args ...string) (string, string, error) {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		framework.NeedE2E(t, "kubectl is not installed: %v", err)
	}
	cmd := exec.Command(bin, append([]string{"--server", s.URL}, args...)...)
	home := filepath.Join(t.TempDir(), "home")
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestKubectlDiscoveryAndErrors: the real kubectl finds every kind through
// discovery (api-resources, with short names and groups), reads the
// server's version, creates a ConfigMap (a protobuf body, as kubectl sends
// Kubernetes' own kinds) and prints the server's errors as it does for
// Kubernetes.
func TestKubectlDiscoveryAndErrors(t *testing.T) {
	s := framework.StartAPIServer(t)
	out, errOut, err := kubectl(t, s, "api-resources")
	if err != nil {
		t.Fatalf("kubectl api-resources: %v\n%s%s", err, out, errOut)
	}
	for _, want := range []string{"pods  ", " po ", "replicasets", " rs ", "apps/v1", "funcs", " fn,", "configmaps", " cm ", "rbac.authorization.k8s.io/v1", "coordination.k8s.io/v1"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl api-resources lacks %q:\n%s", want, out)
		}
	}
	if out, errOut, err := kubectl(t, s, "version"); err != nil || !strings.Contains(out, "Server Version: v1.32") {
		t.Errorf("kubectl version: %v\n%s%s", err, out, errOut)
	}
	if out, errOut, err := kubectl(t, s, "create", "configmap", "settings", "--from-literal=color=blue"); err != nil || !strings.Contains(out, "configmap/settings created") {
		t.Fatalf("kubectl create configmap: %v\n%s%s", err, out, errOut)
	}
	if out, errOut, err := kubectl(t, s, "get", "cm", "settings", "-o", "jsonpath={.data.color}"); err != nil || out != "blue" {
		t.Errorf("kubectl get cm settings: %v %q %s", err, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pod", "nope"}, `Error from server (NotFound): pods "nope" not found`},
		{[]string{"create", "configmap", "settings"}, `configmaps "settings" already exists`},
	} {
		out, errOut, err := kubectl(t, s, tc.args...)
		if err == nil || !strings.Contains(errOut, tc.want) {
			t.Errorf("kubectl %s: %v, want the error %q\n%s%s", strings.Join(tc.args, " "), err, tc.want, out, errOut)
		}
	}
}
