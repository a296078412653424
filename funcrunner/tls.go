package funcrunner

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"time"

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
	cert, sum, err := selfSigned(ln.Addr())
	if err != nil {
		return nil, "", err
	}
	cfg, err := pki.ServerTLS(cert, caPEM)
	if err != nil {
		return nil, "", fmt.Errorf("funcrunner: the cluster CA: %w", err)
	}
	return tls.NewListener(ln, cfg), sum, nil
}

func selfSigned(addr net.Addr) (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, "", err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "minik8s-funcrunner"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if tcp, ok := addr.(*net.TCPAddr); ok {
		tmpl.IPAddresses = []net.IP{tcp.IP}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	sum := sha256.Sum256(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, hex.EncodeToString(sum[:]), nil
}
