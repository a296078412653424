package proxy

import (
	"context"
	"net"
)

// ServicePort and Apply let the tests write rules without informers.
type ServicePort = servicePort

func NewServicePort(namespace, name string, port, nodePort int32, clusterIP string, endpoints ...string) ServicePort {
	sp := servicePort{namespace: namespace, name: name, clusterIP: clusterIP, endpoints: endpoints}
	sp.port.Port, sp.port.NodePort = port, nodePort
	return sp
}

func Apply(ctx context.Context, ports []ServicePort, podCIDR *net.IPNet) error {
	_, err := apply(ctx, ports, podCIDR, "")
	return err
}

func RuleSet(ports []ServicePort, podCIDR *net.IPNet, existing map[string][]string) string {
	return ruleSet(ports, podCIDR, existing)
}
