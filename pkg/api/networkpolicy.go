package api

// NetworkPolicy (networking.k8s.io/v1) says which connections the pods it
// selects take (ingress) and make (egress); every node's kubelet enforces
// the policies of its pods.
type NetworkPolicy struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       NetworkPolicySpec `json:"spec,omitempty"`
}

// The policy types.
const (
	PolicyTypeIngress = "Ingress"
	PolicyTypeEgress  = "Egress"
)

type NetworkPolicySpec struct {
	// PodSelector selects the pods of the policy's namespace it isolates
	// ({} selects them all).
	PodSelector LabelSelector `json:"podSelector"`
	// Ingress and Egress are the connections allowed; none allowed when
	// empty, for each direction PolicyTypes names.
	Ingress []NetworkPolicyIngressRule `json:"ingress,omitempty"`
	Egress  []NetworkPolicyEgressRule  `json:"egress,omitempty"`
	// PolicyTypes is Ingress, Egress or both; when empty, Ingress, and
	// Egress too when the policy has egress rules.
	PolicyTypes []string `json:"policyTypes,omitempty"`
}

// NetworkPolicyIngressRule allows connections from its peers (any, when
// none) to its ports (any, when none).
type NetworkPolicyIngressRule struct {
	Ports []NetworkPolicyPort `json:"ports,omitempty"`
	From  []NetworkPolicyPeer `json:"from,omitempty"`
}

// NetworkPolicyEgressRule allows connections to its peers (any, when
// none) on its ports (any, when none).
type NetworkPolicyEgressRule struct {
	Ports []NetworkPolicyPort `json:"ports,omitempty"`
	To    []NetworkPolicyPeer `json:"to,omitempty"`
}

// NetworkPolicyPort is a port by number or by a container port's name,
// or the range Port to EndPort; TCP when no protocol is given.
type NetworkPolicyPort struct {
	Protocol *string      `json:"protocol,omitempty"`
	Port     *IntOrString `json:"port,omitempty"`
	EndPort  *int32       `json:"endPort,omitempty"`
}

// NetworkPolicyPeer is pods (by PodSelector, in the policy's namespace or
// in those NamespaceSelector selects) or an IPBlock.
type NetworkPolicyPeer struct {
	PodSelector       *LabelSelector `json:"podSelector,omitempty"`
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
	IPBlock           *IPBlock       `json:"ipBlock,omitempty"`
}

// IPBlock is the addresses of CIDR but those of Except.
type IPBlock struct {
	CIDR   string   `json:"cidr"`
	Except []string `json:"except,omitempty"`
}

type NetworkPolicyList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []NetworkPolicy `json:"items"`
}
