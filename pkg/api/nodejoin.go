package api

// NodeCredentialsPath is where a joining node asks for its credentials,
// with the node join token (or, to renew them, its own certificate).
const NodeCredentialsPath = "/v1-minik8s/node-credentials"

// NodeCredentialsRequest asks the cluster CA to certify a node's keys.
// Only the public keys of the requests count: the apiserver decides the
// identity (user system:node:NAME in group system:nodes).
type NodeCredentialsRequest struct {
	NodeName string `json:"nodeName"`
	// NodePassword proves the name: the kubelet makes it at its first join
	// and keeps it; the first request for a name binds it.
	NodePassword string `json:"nodePassword"`
	// ClientCSR is a PEM certificate request for the node's client key.
	ClientCSR string `json:"clientCSR"`
	// ServingCSR, for the key of the kubelet's HTTPS server on NodeIP.
	ServingCSR string `json:"servingCSR,omitempty"`
	NodeIP     string `json:"nodeIP,omitempty"`
}

// NodeCredentials are the node's client and serving certificates and the
// cluster CA.
type NodeCredentials struct {
	ClientCertificate  string `json:"clientCertificate"`
	ServingCertificate string `json:"servingCertificate,omitempty"`
	CA                 string `json:"ca"`
}
