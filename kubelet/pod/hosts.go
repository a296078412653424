package pod

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"minik8s/pkg/api"
)

// hostsPath is a pod's own /etc/hosts, mounted in its containers when it
// has one (podHosts).
func hostsPath(podDir string) string { return filepath.Join(podDir, "hosts") }

// nodeHosts is the node's hosts file, which pods on the node's network
// see (containerd mounts the same file).
var nodeHosts = "/etc/hosts"

// podHostname is the host name of pod p's containers: spec.hostname, or
// its name cut to a DNS label (63 characters), as Kubernetes sets it.
func podHostname(p *api.Pod) string {
	if p.Spec.Hostname != "" {
		return p.Spec.Hostname
	}
	name := p.Name
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-.")
	}
	return name
}

// podHosts is the /etc/hosts of pod p, as Kubernetes' kubelet writes it
// (managedHostsFileContent): on the pod's own network, localhost, the
// pod's address under its host name (and its fully qualified name when it
// names a subdomain) and its hostAliases; on the node's network, the
// node's file with the hostAliases added. own is false when the node's
// file is mounted as it is.
func podHosts(p *api.Pod, podIP, domain string, ownNetwork bool, node func() ([]byte, error)) (content string, own bool, err error) {
	var b strings.Builder
	switch {
	case ownNetwork && podIP != "":
		b.WriteString("# Kubernetes-managed hosts file.\n" +
			"127.0.0.1\tlocalhost\n" +
			"::1\tlocalhost ip6-localhost ip6-loopback\n" +
			"fe00::0\tip6-localnet\n" +
			"fe00::0\tip6-mcastprefix\n" +
			"fe00::1\tip6-allnodes\n" +
			"fe00::2\tip6-allrouters\n")
		host := podHostname(p)
		if p.Spec.Subdomain != "" && domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", podIP, host, p.Spec.Subdomain, p.Namespace, domain, host)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", podIP, host)
		}
	case len(p.Spec.HostAliases) == 0:
		return "", false, nil
	default:
		data, err := node()
		if err != nil {
			return "", false, err
		}
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	if len(p.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range p.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.String(), true, nil
}

// hasOwnHosts tells whether pod p gets a hosts file of its own (podHosts).
func hasOwnHosts(p *api.Pod, podIP string, ownNetwork bool) bool {
	return ownNetwork && podIP != "" || len(p.Spec.HostAliases) > 0
}

func readNodeHosts() ([]byte, error) { return os.ReadFile(nodeHosts) }
