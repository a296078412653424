package proxy

import "context"

// ServicePort and Apply let the tests write rules without informers.
type ServicePort = servicePort

func NewServicePort(namespace, name string, port, nodePort int32, clusterIP string, endpoints ...string) ServicePort {
	sp := servicePort{namespace: namespace, name: name, clusterIP: clusterIP, endpoints: endpoints}
	sp.port.Port, sp.port.NodePort = port, nodePort
	return sp
}

// Apply writes the rules of ports given the chains known to be there (nil:
// read them) and returns the chains there after.
func Apply(ctx context.Context, ports []ServicePort, nets Nets, known map[string][]string) (map[string][]string, error) {
	_, after, err := apply(ctx, ports, nets, known, known != nil)
	return after, err
}

func RuleSet(ports []ServicePort, nets Nets, existing map[string][]string) string {
	return ruleSet(ports, nets, existing)
}

// UDP is sp on UDP.
func (sp ServicePort) UDP() ServicePort {
	sp.port.Protocol = "UDP"
	return sp
}

// ForgetGone deletes the conntrack entries of the endpoints of before
// that after does not have, as a sync does once it wrote after's rules.
func ForgetGone(before, after []ServicePort) (uint, error) {
	return forget(gone(endpointsOf(before), endpointsOf(after)))
}
