package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	log "github.com/sirupsen/logrus"

	"minik8s/kubelet"
	"minik8s/kubelet/network"
	"minik8s/pkg/containerd"
)

// prepareHost installs what the pods' own networks need (with
// --pod-network cni) and the images the node's containerd lacks.
func prepareHost(ctx context.Context, cfg Config, address string) error {
	if cfg.PodNetwork == kubelet.PodNetworkCNI {
		if err := ensureNetworkTools(ctx); err != nil {
			return err
		}
	}
	if cfg.SkipImages {
		return nil
	}
	return ensureImages(ctx, address)
}

// ensureContainerd installs containerd and runc when missing.
func ensureContainerd(ctx context.Context) error {
	var missing []string
	if _, err := os.Stat(containerd.Binary); err != nil {
		missing = append(missing, "containerd")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		missing = append(missing, "runc")
	}
	if len(missing) == 0 {
		return nil
	}
	return aptInstall(ctx, missing...)
}

// ensureNetworkTools installs what the kubelet gives pods their own network
// with when missing: the CNI plugins and iptables (the Services' rules, and
// ebtables-nft for the pods' anti-spoofing rules).
func ensureNetworkTools(ctx context.Context) error {
	var missing []string
	if _, err := os.Stat(filepath.Join(network.DefaultBinDir, "bridge")); err != nil {
		missing = append(missing, "containernetworking-plugins")
	}
	for _, bin := range []string{"iptables-restore", "ebtables-nft-restore"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, "iptables")
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return aptInstall(ctx, missing...)
}

// aptInstall installs Debian packages, saying so.
func aptInstall(ctx context.Context, pkgs ...string) error {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%s missing and no apt-get to install them: install them with your package manager", strings.Join(pkgs, ", "))
	}
	log.WithField("packages", strings.Join(pkgs, " ")).Info("installing missing packages from Debian's repositories (apt-get)")
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{{"update", "-qq"}, append([]string{"install", "-y", "-qq"}, pkgs...)} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, tail(out))
		}
	}
	return nil
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
