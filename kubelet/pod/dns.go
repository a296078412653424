package pod

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"minik8s/pkg/api"
)

// resolvConfPath is a pod's own resolv.conf, mounted at /etc/resolv.conf
// in its containers when it has one (podResolver).
func resolvConfPath(podDir string) string { return filepath.Join(podDir, "resolv.conf") }

// nodeResolvConf is the node's resolver configuration, the one a pod on
// the node's resolver gets (containerd mounts the same file).
var nodeResolvConf = "/etc/resolv.conf"

// resolver is the content of a resolv.conf.
type resolver struct {
	nameservers, searches, options []string
}

// Kubernetes' bounds on what a pod's resolver holds (the kubelet's
// validateResolvConf and glibc's): more nameservers are not read, more
// search domains are cut.
const (
	maxNameservers = 3
	maxSearches    = 32
)

// podResolver is the resolv.conf pod p gets, as Kubernetes' kubelet makes
// it (pkg/kubelet/network/dns): own is false when the node's file is
// mounted as it is. The policy gives the cluster DNS (ClusterFirst on the
// pod's own network, ClusterFirstWithHostNet anywhere; the node's when the
// cluster has no DNS), the node's resolver (Default, and ClusterFirst on
// the node's network) or nothing (None); dnsConfig then adds its
// nameservers and search domains and overrides options of the same name.
func podResolver(p *api.Pod, cluster DNSConfig, ownNetwork bool, node func() (resolver, error)) (r resolver, own bool, err error) {
	policy, useCluster := dnsPolicy(p, cluster, ownNetwork)
	switch {
	case policy == api.DNSNone:
	case useCluster:
		r = resolver{
			nameservers: []string{cluster.Server},
			searches:    []string{p.Namespace + ".svc." + cluster.Domain, "svc." + cluster.Domain, cluster.Domain},
			// ndots:5 so that "web" and "web.other" are tried as
			// Service names first.
			options: []string{"ndots:5"},
		}
	case p.Spec.DNSConfig == nil:
		return resolver{}, false, nil // the node's, as it is
	default:
		if r, err = node(); err != nil {
			return resolver{}, false, err
		}
	}
	if c := p.Spec.DNSConfig; c != nil {
		r.nameservers = appendNew(r.nameservers, c.Nameservers...)
		r.searches = appendNew(r.searches, c.Searches...)
		for _, o := range c.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			r.options = slices.DeleteFunc(r.options, func(s string) bool { return optionName(s) == o.Name })
			r.options = append(r.options, opt)
		}
	}
	r.nameservers = r.nameservers[:min(len(r.nameservers), maxNameservers)]
	r.searches = r.searches[:min(len(r.searches), maxSearches)]
	return r, true, nil
}

// dnsPolicy is pod p's DNS policy, and whether it resolves through the
// cluster DNS.
func dnsPolicy(p *api.Pod, cluster DNSConfig, ownNetwork bool) (policy string, useCluster bool) {
	policy = p.Spec.DNSPolicy
	if policy == "" {
		policy = api.DNSClusterFirst
	}
	return policy, cluster.Server != "" && (policy == api.DNSClusterFirstWithHostNet || policy == api.DNSClusterFirst && ownNetwork)
}

// hasOwnResolvConf tells whether pod p gets a resolv.conf of its own
// (podResolver), not the node's as it is.
func hasOwnResolvConf(p *api.Pod, cluster DNSConfig, ownNetwork bool) bool {
	policy, useCluster := dnsPolicy(p, cluster, ownNetwork)
	return policy == api.DNSNone || useCluster || p.Spec.DNSConfig != nil
}

// appendNew appends what list does not hold yet.
func appendNew(list []string, more ...string) []string {
	for _, m := range more {
		if !slices.Contains(list, m) {
			list = append(list, m)
		}
	}
	return list
}

func optionName(opt string) string {
	name, _, _ := strings.Cut(opt, ":")
	return name
}

// String is r as a resolv.conf.
func (r resolver) String() string {
	var b strings.Builder
	if len(r.searches) > 0 {
		b.WriteString("search " + strings.Join(r.searches, " ") + "\n")
	}
	for _, ns := range r.nameservers {
		b.WriteString("nameserver " + ns + "\n")
	}
	if len(r.options) > 0 {
		b.WriteString("options " + strings.Join(r.options, " ") + "\n")
	}
	return b.String()
}

// readResolver reads the node's resolv.conf: its nameservers, search
// domains (the last search or domain line, as the resolver reads it) and
// options.
func readResolver() (resolver, error) {
	data, err := os.ReadFile(nodeResolvConf)
	if err != nil {
		return resolver{}, err
	}
	return parseResolver(data), nil
}

func parseResolver(data []byte) resolver {
	var r resolver
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line, _, _ = strings.Cut(line, ";")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				r.nameservers = append(r.nameservers, f[1])
			}
		case "search", "domain":
			r.searches = append([]string{}, f[1:]...)
		case "options":
			r.options = append(r.options, f[1:]...)
		}
	}
	return r
}

// writeNameFiles writes the pod's own resolv.conf and /etc/hosts, those
// it has (podResolver, podHosts).
func (w *Worker) writeNameFiles(p *api.Pod) error {
	r, own, err := podResolver(p, w.cfg.DNS, w.ownNetwork(p), readResolver)
	if err != nil {
		return fmt.Errorf("reading the node's resolv.conf for the pod's dnsConfig: %w", err)
	}
	if own {
		if err := writePodFile(resolvConfPath(w.dir), r.String()); err != nil {
			return fmt.Errorf("writing the pod's resolv.conf: %w", err)
		}
	}
	hosts, own, err := podHosts(p, w.podIP, w.cfg.DNS.Domain, w.ownNetwork(p), readNodeHosts)
	if err != nil {
		return fmt.Errorf("reading the node's /etc/hosts for the pod's hostAliases: %w", err)
	}
	if own {
		if err := writePodFile(hostsPath(w.dir), hosts); err != nil {
			return fmt.Errorf("writing the pod's /etc/hosts: %w", err)
		}
	}
	return nil
}

// writePodFile writes one of the pod's files in its directory (in place:
// a container may already have it mounted).
func writePodFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}
