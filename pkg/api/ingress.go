package api

// Ingress (networking.k8s.io/v1) routes HTTP and HTTPS requests reaching a
// node's ingress ports to Services, by host and path.
type Ingress struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       IngressSpec   `json:"spec,omitempty"`
	Status     IngressStatus `json:"status,omitempty"`
}

type IngressSpec struct {
	// IngressClassName names the IngressClass whose controller serves
	// this Ingress; when empty at create, the default class's name is set.
	IngressClassName *string `json:"ingressClassName,omitempty"`
	// DefaultBackend takes requests no rule matches.
	DefaultBackend *IngressBackend `json:"defaultBackend,omitempty"`
	TLS            []IngressTLS    `json:"tls,omitempty"`
	Rules          []IngressRule   `json:"rules,omitempty"`
}

// IngressTLS serves Hosts over HTTPS with the kubernetes.io/tls Secret
// SecretName of the Ingress's namespace.
type IngressTLS struct {
	Hosts      []string `json:"hosts,omitempty"`
	SecretName string   `json:"secretName,omitempty"`
}

// IngressRule routes requests for Host ("" for any, "*.example.com" for
// one label under it) by path.
type IngressRule struct {
	Host             string `json:"host,omitempty"`
	IngressRuleValue `json:",inline"`
}

type IngressRuleValue struct {
	HTTP *HTTPIngressRuleValue `json:"http,omitempty"`
}

type HTTPIngressRuleValue struct {
	Paths []HTTPIngressPath `json:"paths"`
}

// The path types of an HTTPIngressPath.
const (
	PathTypeExact                  = "Exact"
	PathTypePrefix                 = "Prefix"
	PathTypeImplementationSpecific = "ImplementationSpecific"
)

type HTTPIngressPath struct {
	Path string `json:"path,omitempty"`
	// PathType is Exact, Prefix (by whole path elements) or
	// ImplementationSpecific (which minik8s reads as Prefix).
	PathType *string        `json:"pathType"`
	Backend  IngressBackend `json:"backend"`
}

// IngressBackend is a Service's port (or a resource, which minik8s's
// controller does not serve).
type IngressBackend struct {
	Service  *IngressServiceBackend     `json:"service,omitempty"`
	Resource *TypedLocalObjectReference `json:"resource,omitempty"`
}

type IngressServiceBackend struct {
	Name string             `json:"name"`
	Port ServiceBackendPort `json:"port,omitempty"`
}

// ServiceBackendPort is a Service's port by name or by number.
type ServiceBackendPort struct {
	Name   string `json:"name,omitempty"`
	Number int32  `json:"number,omitempty"`
}

type TypedLocalObjectReference struct {
	APIGroup *string `json:"apiGroup"`
	Kind     string  `json:"kind"`
	Name     string  `json:"name"`
}

type IngressStatus struct {
	LoadBalancer IngressLoadBalancerStatus `json:"loadBalancer,omitempty"`
}

type IngressLoadBalancerStatus struct {
	Ingress []IngressLoadBalancerIngress `json:"ingress,omitempty"`
}

// IngressLoadBalancerIngress is an address the Ingress is served at.
type IngressLoadBalancerIngress struct {
	IP       string              `json:"ip,omitempty"`
	Hostname string              `json:"hostname,omitempty"`
	Ports    []IngressPortStatus `json:"ports,omitempty"`
}

type IngressPortStatus struct {
	Port     int32   `json:"port"`
	Protocol string  `json:"protocol"`
	Error    *string `json:"error,omitempty"`
}

type IngressList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []Ingress `json:"items"`
}

// IngressClass (networking.k8s.io/v1, cluster-wide) names the controller
// that serves the Ingresses of its class; the one annotated
// AnnotationDefaultIngressClass "true" takes Ingresses that name none.
type IngressClass struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       IngressClassSpec `json:"spec,omitempty"`
}

type IngressClassSpec struct {
	// Controller names the controller: IngressController for minik8s's.
	Controller string                           `json:"controller,omitempty"`
	Parameters *IngressClassParametersReference `json:"parameters,omitempty"`
}

type IngressClassParametersReference struct {
	APIGroup  *string `json:"apiGroup,omitempty"`
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	Scope     *string `json:"scope,omitempty"`
	Namespace *string `json:"namespace,omitempty"`
}

type IngressClassList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitempty"`
	Items    []IngressClass `json:"items"`
}

const (
	// AnnotationDefaultIngressClass marks the default IngressClass.
	AnnotationDefaultIngressClass = "ingressclass.kubernetes.io/is-default-class"
	// IngressController is the controller name of minik8s's ingress
	// (every node's kubelet serves it), and DefaultIngressClassName the
	// class minik8s makes for it, the default one.
	IngressController       = "minik8s.io/ingress"
	DefaultIngressClassName = "minik8s"
	NetworkingGroup         = "networking.k8s.io"
	// AnnotationIngressPorts, on a Node, is where its kubelet serves the
	// Ingresses ("http=80,https=443"); absent where it serves none. The
	// ingress status controller lists such nodes' addresses.
	AnnotationIngressPorts = "minik8s.io/ingress-ports"
)
