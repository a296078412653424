package pod

import (
	"fmt"
	"os"
	"path/filepath"
)

// resolvConfPath is a pod's resolv.conf, mounted at /etc/resolv.conf in
// its containers when the pod has its own network.
func resolvConfPath(podDir string) string { return filepath.Join(podDir, "resolv.conf") }

// resolvConf is what Kubernetes gives a pod (dnsPolicy ClusterFirst): the
// cluster DNS server, the search path from the pod's namespace up, and
// ndots:5 so that "web" and "web.other" are tried as Service names first.
func resolvConf(namespace string, dns DNSConfig) string {
	return fmt.Sprintf("search %s.svc.%s svc.%s %s\nnameserver %s\noptions ndots:5\n",
		namespace, dns.Domain, dns.Domain, dns.Domain, dns.Server)
}

// writeResolvConf writes the pod's resolv.conf (in place: a container may
// already have it mounted).
func writeResolvConf(podDir, namespace string, dns DNSConfig) error {
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(resolvConfPath(podDir), []byte(resolvConf(namespace, dns)), 0o644)
}
