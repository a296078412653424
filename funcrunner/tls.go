package funcrunner

import (
	"crypto/tls"
	"fmt"
	"net"

	"minik8s/pkg/pki"
)

// A runner whose client trusts a cluster CA (it reaches the secure port)
// serves the calls the apiserver hands it over TLS: a certificate of its
// own, made at start, whose hash it publishes on its Lease for the
// apiserver to pin, and only clients with the apiserver's certificate of
// the cluster CA. Anyone else who reaches the port can neither send calls
// nor pose as the runner.

// secureListener wraps ln in TLS; it returns the certificate's hash.
func secureListener(ln net.Listener, caPEM []byte) (net.Listener, string, error) {
	cert, sum, err := pki.SelfSigned("minik8s-funcrunner", ln.Addr())
	if err != nil {
		return nil, "", err
	}
	cfg, err := pki.ServerTLS(cert, caPEM)
	if err != nil {
		return nil, "", fmt.Errorf("funcrunner: the cluster CA: %w", err)
	}
	return tls.NewListener(ln, cfg), sum, nil
}
