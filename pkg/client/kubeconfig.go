package client

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"minik8s/pkg/errdefs"
)

// ErrNoKubeconfig: no kubeconfig was named and none is where kubectl looks.
var ErrNoKubeconfig = errors.New("no kubeconfig")

// LoadKubeconfig reads a kubeconfig the way kubectl does: path when given,
// else $KUBECONFIG (a list of files, merged), else ~/.kube/config; its
// current context gives the server and the credentials (files named in it
// are read). ErrNoKubeconfig when none exists.
func LoadKubeconfig(path string) (Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return Config{}, fmt.Errorf("kubeconfig %s: %w", path, err)
		}
		rules.ExplicitPath = path
	} else if !anyExists(rules.GetLoadingPrecedence()) {
		return Config{}, ErrNoKubeconfig
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return Config{}, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg := Config{Server: rc.Host, CAData: rc.CAData, CertData: rc.CertData, KeyData: rc.KeyData, Token: rc.BearerToken}
	for _, f := range []struct {
		name string
		into *[]byte
	}{{rc.CAFile, &cfg.CAData}, {rc.CertFile, &cfg.CertData}, {rc.KeyFile, &cfg.KeyData}} {
		if f.name != "" && len(*f.into) == 0 {
			data, err := os.ReadFile(f.name)
			if err != nil {
				return Config{}, fmt.Errorf("kubeconfig: %w", err)
			}
			*f.into = data
		}
	}
	if cfg.Token == "" && rc.BearerTokenFile != "" {
		data, err := os.ReadFile(rc.BearerTokenFile)
		if err != nil {
			return Config{}, fmt.Errorf("kubeconfig: %w", err)
		}
		cfg.Token = string(data)
	}
	return cfg, nil
}

func anyExists(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// WriteKubeconfig writes a kubeconfig of one cluster, user and context
// (named name) with everything embedded, readable by its owner only: it
// holds credentials.
func WriteKubeconfig(path, name string, cfg Config) error {
	if cfg.Server == "" {
		return errdefs.Invalid("server", "a kubeconfig needs the apiserver's URL")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Server, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Load makes a client the way kubectl picks one: the kubeconfig named by
// kubeconfig, else $KUBECONFIG, else ~/.kube/config, with server (from
// --server or $MINIK8S_SERVER; "" when neither was given) in place of
// its server. Without any kubeconfig: server, else DefaultServer, without
// credentials (the local port). Credentials are not sent to a plain-HTTP
// server.
func Load(server, kubeconfig string) (*Client, error) {
	cfg, err := LoadKubeconfig(kubeconfig)
	switch {
	case errors.Is(err, ErrNoKubeconfig):
		cfg = Config{Server: DefaultServer}
	case err != nil:
		return nil, err
	}
	if server != "" {
		cfg.Server = server
	}
	if !strings.HasPrefix(cfg.Server, "https://") {
		cfg = Config{Server: cfg.Server}
	}
	return NewForConfig(cfg)
}

// ExplicitServer is $MINIK8S_SERVER, or "" when unset.
func ExplicitServer() string { return os.Getenv("MINIK8S_SERVER") }

// FromFlags is the client of a component's --apiserver (server) and
// --kubeconfig flags in fs: the kubeconfig's server and credentials, with
// --apiserver in place of its server when that was given; without a
// kubeconfig, server without credentials.
func FromFlags(fs *flag.FlagSet, server, kubeconfig string) (*Client, error) {
	if kubeconfig == "" {
		return New(server), nil
	}
	explicit := ""
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "apiserver" {
			explicit = server
		}
	})
	return Load(explicit, kubeconfig)
}
