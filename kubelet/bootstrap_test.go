package kubelet_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minik8s/apiserver"
	"minik8s/kubelet"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/pki"
	"minik8s/test/framework"
)

// TestJoinRejoinRenew: a kubelet joins with the node token and its node
// password (made at the first join, kept in its root dir), starts again on
// its saved credentials without asking, renews them with its own
// certificate, rejoins with the token and its password, and is refused
// once it has lost its password, for another address than the one it
// joined at, and for the name of a Node that never joined.
func TestJoinRejoinRenew(t *testing.T) {
	s := framework.StartSecureAPIServer(t, "")
	ctx := context.Background()
	token, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.NodeTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	file := func(name string) string { return filepath.Join(root, name) }
	read := func(name string) []byte {
		data, err := os.ReadFile(file(name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// The join needs no listener: any address a node may hold will do.
	base := kubelet.Config{APIServer: s.SecureURL, Token: strings.TrimSpace(string(token)), NodeName: "joiner", NodeIP: "192.0.2.5", RootDir: root}
	join := func(change func(*kubelet.Config)) error {
		cfg := base
		if change != nil {
			change(&cfg)
		}
		c, err := kubelet.JoinClient(ctx, &cfg)
		if err != nil {
			return err
		}
		if _, _, err := c.Nodes().List(ctx, client.ListOptions{}); err != nil {
			t.Errorf("the joined node's client: %v", err)
		}
		if len(cfg.ServingCert) == 0 || len(cfg.ClientCA) == 0 {
			t.Errorf("the join set no serving certificate or CA")
		}
		return nil
	}

	if err := join(nil); err != nil {
		t.Fatalf("first join: %v", err)
	}
	if st, err := os.Stat(file(kubelet.NodePasswordFile)); err != nil || st.Mode().Perm() != 0o600 || len(bytes.TrimSpace(read(kubelet.NodePasswordFile))) != 64 {
		t.Fatalf("the node password file: %v %v", st, err)
	}
	kubeconfig := read(kubelet.KubeconfigFile)

	t.Run("a restart uses the saved credentials", func(t *testing.T) {
		// A token that would be refused: nothing is asked.
		if err := join(func(c *kubelet.Config) { c.Token = "" }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(read(kubelet.KubeconfigFile), kubeconfig) {
			t.Errorf("the kubeconfig changed on a restart with valid credentials")
		}
	})

	t.Run("renewal with its own certificate", func(t *testing.T) {
		if err := os.Remove(file(kubelet.ServingCertFile)); err != nil {
			t.Fatal(err)
		}
		ca, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.CAFile))
		if err != nil {
			t.Fatal(err)
		}
		// The right CA but a wrong secret: only its own certificate can
		// have renewed the credentials.
		if err := join(func(c *kubelet.Config) { c.Token = pki.NodeToken(ca, "not-the-secret") }); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(read(kubelet.KubeconfigFile), kubeconfig) {
			t.Errorf("the kubeconfig did not change on a renewal")
		}
	})

	t.Run("rejoin with the token and the password", func(t *testing.T) {
		if err := os.Remove(file(kubelet.KubeconfigFile)); err != nil {
			t.Fatal(err)
		}
		if err := join(nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("another address", func(t *testing.T) {
		if err := os.Remove(file(kubelet.ServingCertFile)); err != nil {
			t.Fatal(err)
		}
		err := join(func(c *kubelet.Config) { c.NodeIP = "192.0.2.6" })
		if !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "bound to 192.0.2.5") {
			t.Errorf("joiner at another address: %v, want 403", err)
		}
	})

	t.Run("a lost password", func(t *testing.T) {
		for _, f := range []string{kubelet.NodePasswordFile, kubelet.KubeconfigFile} {
			if err := os.Remove(file(f)); err != nil {
				t.Fatal(err)
			}
		}
		if err := join(nil); !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "node password") {
			t.Errorf("joiner without its password: %v, want 403", err)
		}
	})

	t.Run("the name of a node that never joined", func(t *testing.T) {
		if _, err := s.Client.Nodes().Create(ctx, &api.Node{ObjectMeta: api.ObjectMeta{Name: "vm"}}); err != nil {
			t.Fatal(err)
		}
		err := join(func(c *kubelet.Config) { c.NodeName, c.NodeIP, c.RootDir = "vm", "192.0.2.7", t.TempDir() })
		if !errdefs.IsForbidden(err) {
			t.Errorf("joining as vm: %v, want 403", err)
		}
	})
}
