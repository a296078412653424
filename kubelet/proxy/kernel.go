package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client/cache"
)

// Kernel serves every Service in the kernel, as kube-proxy's iptables mode
// does: DNAT rules in the kubelet's network namespace send a connection to
// a cluster IP (or to a node port of the node's addresses) to one ready
// endpoint's pod address, with no process on the data path. Rules are
// recomputed from the informers on every change and written in one
// iptables-restore, so a reader never sees half of them.
type Kernel struct {
	services  *cache.Informer[api.Service, *api.Service]
	endpoints *cache.Informer[api.Endpoints, *api.Endpoints]
	nets      Nets
	changed   chan struct{}
	// last is the rule set last written (without removals); known the
	// package's chains in the kernel, by table (nil: not read yet);
	// hooked says the jumps into them are in place.
	last   string
	known  map[string][]string
	hooked bool
	// sent are the endpoints the rules last written send to: those that
	// leave have their connections' conntrack entries deleted.
	sent map[string]endpoint
}

// NewKernel returns a kernel proxy fed by the factory's informers;
// podCIDR is the node's slice of clusterCIDR, masqueradeIP an address of
// podCIDR that no pod has (see Nets).
func NewKernel(f *cache.Factory, podCIDR, clusterCIDR, masqueradeIP string) (*Kernel, error) {
	var nets Nets
	var err error
	if _, nets.PodCIDR, err = net.ParseCIDR(podCIDR); err != nil {
		return nil, fmt.Errorf("proxy: pod CIDR %q: %w", podCIDR, err)
	}
	if _, nets.ClusterCIDR, err = net.ParseCIDR(clusterCIDR); err != nil {
		return nil, fmt.Errorf("proxy: cluster CIDR %q: %w", clusterCIDR, err)
	}
	if nets.MasqueradeIP = net.ParseIP(masqueradeIP).To4(); nets.MasqueradeIP == nil || !nets.PodCIDR.Contains(nets.MasqueradeIP) {
		return nil, fmt.Errorf("proxy: masquerade address %q is not an address of the pod CIDR %s", masqueradeIP, podCIDR)
	}
	for _, bin := range []string{"iptables", "iptables-restore", "iptables-save"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("proxy: %s is missing (apt-get install iptables): %w", bin, err)
		}
	}
	return &Kernel{services: f.Services(), endpoints: f.Endpoints(), nets: nets, changed: make(chan struct{}, 1)}, nil
}

func (k *Kernel) kick() {
	select {
	case k.changed <- struct{}{}:
	default:
	}
}

// Run keeps the rules until ctx ends. They stay when it ends: connections
// keep working while a kubelet restarts, as with kube-proxy.
func (k *Kernel) Run(ctx context.Context) error {
	for _, inf := range []interface{ Start(context.Context) }{k.services, k.endpoints} {
		inf.Start(ctx)
	}
	k.services.AddEventHandler(cache.Handler[*api.Service]{
		OnAdd: func(*api.Service) { k.kick() }, OnUpdate: func(_, _ *api.Service) { k.kick() }, OnDelete: func(*api.Service) { k.kick() },
	})
	k.endpoints.AddEventHandler(cache.Handler[*api.Endpoints]{
		OnAdd: func(*api.Endpoints) { k.kick() }, OnUpdate: func(_, _ *api.Endpoints) { k.kick() }, OnDelete: func(*api.Endpoints) { k.kick() },
	})
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-k.changed:
		case <-retry.C:
		}
		if !k.services.HasSynced() || !k.endpoints.HasSynced() {
			retry.Reset(100 * time.Millisecond)
			continue
		}
		if err := k.sync(ctx); err != nil {
			log.WithError(err).Warn("proxy: programming the service rules; trying again in 5s")
			retry.Reset(5 * time.Second)
		}
	}
}

// sync writes the rules the informers' Services and Endpoints need. Most
// events change no rule (a pod not yet ready, a Service's labels): those
// cost no process; a change costs one iptables-restore.
func (k *Kernel) sync(ctx context.Context) error {
	ports := k.servicePorts()
	if ruleSet(ports, k.nets, nil) == k.last {
		return nil
	}
	rules, known, err := apply(ctx, ports, k.nets, k.known, k.hooked)
	if err != nil {
		k.known, k.hooked, k.last = nil, false, ""
		return err
	}
	k.known, k.hooked = known, true
	k.last = ruleSet(ports, k.nets, nil)
	now := endpointsOf(ports)
	if left := gone(k.sent, now); len(left) > 0 {
		// After the rules: a packet of a forgotten connection then finds
		// the new rules, never the old entry.
		n, err := forget(left)
		if err != nil {
			log.WithError(err).WithField("endpoints", len(left)).Warn("proxy: deleting the conntrack entries of removed endpoints failed")
		} else if n > 0 {
			log.WithFields(log.Fields{"endpoints": len(left), "entries": n}).Debug("proxy: conntrack entries of removed endpoints deleted")
		}
	}
	k.sent = now
	log.WithFields(log.Fields{"servicePorts": len(ports), "bytes": len(rules)}).Debug("proxy: service rules written")
	return nil
}

// apply makes the kernel's rules those of ports in one iptables-restore.
// known lists the package's chains in the kernel (nil: read them first),
// so that those no longer needed go; hooked says the jumps into them are
// known to be there. It returns what it wrote and the chains now there.
func apply(ctx context.Context, ports []servicePort, nets Nets, known map[string][]string, hooked bool) (string, map[string][]string, error) {
	if known == nil {
		var err error
		if known, err = chains(ctx); err != nil {
			return "", nil, err
		}
	}
	rules := ruleSet(ports, nets, known)
	cmd := exec.CommandContext(ctx, "iptables-restore", "--noflush", "--wait")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("iptables-restore: %w: %s", err, bytes.TrimSpace(out))
	}
	if !hooked {
		for _, h := range hooks {
			if err := ensureJump(ctx, h.table, h.chain, h.target); err != nil {
				return "", nil, err
			}
		}
	}
	return rules, declared(ruleSet(ports, nets, nil)), nil
}

// declared lists the chains an iptables-restore input declares, by table.
func declared(rules string) map[string][]string {
	out := map[string][]string{}
	table := ""
	for _, line := range strings.Split(rules, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"):
			out[table] = append(out[table], strings.Fields(line[1:])[0])
		}
	}
	return out
}

// servicePorts lists every port of every Service with a cluster IP or a
// node port, with its ready endpoints.
func (k *Kernel) servicePorts() []servicePort {
	var out []servicePort
	for _, svc := range k.services.Lister().List(nil) {
		ip := svc.Spec.ClusterIP
		if net.ParseIP(ip) == nil {
			ip = "" // headless: DNS gives the pods' addresses
		}
		ep, _ := k.endpoints.Lister().Get(svc.Namespace, svc.Name)
		for _, p := range svc.Spec.Ports {
			if ip == "" && p.NodePort == 0 {
				continue
			}
			out = append(out, servicePort{namespace: svc.Namespace, name: svc.Name, port: p, clusterIP: ip, endpoints: Targets(ep, p)})
		}
	}
	return out
}

// chains lists the chains of the package in the nat and filter tables.
func chains(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for _, table := range []string{"nat", "filter"} {
		data, err := exec.CommandContext(ctx, "iptables-save", "-t", table).Output()
		if err != nil {
			return nil, fmt.Errorf("iptables-save -t %s: %w", table, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), ":"+chainPrefix); ok {
				out[table] = append(out[table], chainPrefix+strings.Fields(name)[0])
			}
		}
	}
	return out, nil
}

// ensureJump puts a jump to target first in a built-in chain, once.
func ensureJump(ctx context.Context, table, chain, target string) error {
	rule := []string{"-m", "comment", "--comment", "minik8s service rules", "-j", target}
	if exec.CommandContext(ctx, "iptables", append([]string{"--wait", "-t", table, "-C", chain}, rule...)...).Run() == nil {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "iptables", append([]string{"--wait", "-t", table, "-I", chain}, rule...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables -t %s -I %s -j %s: %w: %s", table, chain, target, err, bytes.TrimSpace(out))
	}
	return nil
}
