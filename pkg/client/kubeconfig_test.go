package client

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestLoadPrecedence: --kubeconfig, else $KUBECONFIG, else ~/.kube/config,
// else the default server without credentials; --server replaces the
// kubeconfig's server, and no credentials go to a plain-HTTP one.
func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	write := func(path, server, token string) {
		t.Helper()
		if err := WriteKubeconfig(path, "c", Config{Server: server, Token: token}); err != nil {
			t.Fatal(err)
		}
	}
	explicit, env, homeCfg := filepath.Join(dir, "explicit"), filepath.Join(dir, "env"), filepath.Join(home, ".kube", "config")
	write(explicit, "https://explicit:6443", "t-explicit")
	write(env, "https://env:6443", "t-env")
	write(homeCfg, "https://home:6443", "t-home")
	// clientcmd reads $HOME once, when it starts, as kubectl would.
	saved := clientcmd.RecommendedHomeFile
	clientcmd.RecommendedHomeFile = homeCfg
	t.Cleanup(func() { clientcmd.RecommendedHomeFile = saved })

	cases := []struct {
		name, kubeconfigEnv, server, kubeconfig string
		wantServer, wantToken                   string
	}{
		{"flag wins", env, "", explicit, "https://explicit:6443", "t-explicit"},
		{"KUBECONFIG", env, "", "", "https://env:6443", "t-env"},
		{"home", "", "", "", "https://home:6443", "t-home"},
		{"server replaces", "", "https://other:6443", "", "https://other:6443", "t-home"},
		{"plain server gets no credentials", "", "http://127.0.0.1:8080", "", "http://127.0.0.1:8080", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfigEnv)
			cfg, err := LoadKubeconfig(tc.kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if tc.server != "" {
				cfg.Server = tc.server
			}
			c, err := Load(tc.server, tc.kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if c.Server() != tc.wantServer {
				t.Errorf("server %q, want %q", c.Server(), tc.wantServer)
			}
			if tc.wantToken != "" && cfg.Token != tc.wantToken {
				t.Errorf("token %q, want %q", cfg.Token, tc.wantToken)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		t.Setenv("KUBECONFIG", "")
		clientcmd.RecommendedHomeFile = filepath.Join(dir, "empty", ".kube", "config")
		if _, err := LoadKubeconfig(""); !errors.Is(err, ErrNoKubeconfig) {
			t.Errorf("no kubeconfig anywhere: %v", err)
		}
		c, err := Load("", "")
		if err != nil || c.Server() != DefaultServer {
			t.Errorf("no kubeconfig: %v %v", c, err)
		}
	})
	t.Run("missing explicit", func(t *testing.T) {
		if _, err := Load("", filepath.Join(dir, "nope")); err == nil || !os.IsNotExist(errors.Unwrap(err)) {
			t.Errorf("a missing --kubeconfig: %v", err)
		}
	})
}
