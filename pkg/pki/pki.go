// Package pki makes the cluster CA and the certificates issued from it, the
// way k3s does: the CA is created once in the data dir, and leaf certificates
// are reused across restarts and issued again only when they no longer fit
// (another CA, near expiry, missing names or usages).
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const (
	// DefaultValidity is a leaf certificate's lifetime when CertSpec leaves it
	// zero; EnsureCert renews it well before the end.
	DefaultValidity = 365 * 24 * time.Hour
	// caValidity is long because replacing the CA means handing every node
	// and kubeconfig a new one.
	caValidity = 10 * 365 * 24 * time.Hour
	// renewBefore: a certificate with less than this left (or a third of its
	// lifetime, for short-lived ones) is issued again, so an ordinary restart
	// renews it before clients start failing.
	renewBefore = 30 * 24 * time.Hour
	// clockSkew backdates NotBefore so that a peer whose clock runs a little
	// behind still accepts a certificate issued a moment ago.
	clockSkew = time.Hour
)

// CA is a certificate authority that can sign certificates: the cluster CA.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte // Cert alone, PEM encoded, as clients are given it
}

// CertSpec says what a leaf certificate is for: the identity it carries
// (CommonName is the user, Organization the groups), the names it serves, and
// whether it may serve TLS, authenticate a client, or both.
type CertSpec struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPAddresses  []net.IP
	Server       bool
	Client       bool
	Validity     time.Duration // zero means DefaultValidity
}

func (s CertSpec) validate() error {
	if s.CommonName == "" {
		return errors.New("certificate spec: commonName is empty")
	}
	// A certificate without extended key usages is accepted for any purpose
	// by Go's verifier, so one must be chosen.
	if !s.Server && !s.Client {
		return fmt.Errorf("certificate spec %q: neither server nor client usage", s.CommonName)
	}
	// Go clients no longer fall back to the CommonName, so a serving
	// certificate without SANs could never be verified.
	if s.Server && len(s.DNSNames) == 0 && len(s.IPAddresses) == 0 {
		return fmt.Errorf("certificate spec %q: server certificate has no dnsNames or ipAddresses", s.CommonName)
	}
	if s.Validity < 0 {
		return fmt.Errorf("certificate spec %q: validity %s is negative", s.CommonName, s.Validity)
	}
	return nil
}

func (s CertSpec) validity() time.Duration {
	if s.Validity == 0 {
		return DefaultValidity
	}
	return s.Validity
}

func (s CertSpec) extKeyUsage() []x509.ExtKeyUsage {
	var u []x509.ExtKeyUsage
	if s.Server {
		u = append(u, x509.ExtKeyUsageServerAuth)
	}
	if s.Client {
		u = append(u, x509.ExtKeyUsageClientAuth)
	}
	return u
}

// LoadOrCreateCA loads the CA at certPath/keyPath, or creates a self-signed
// ECDSA P-256 CA valid ten years there when neither file exists. A pair with
// only one file present, a key that is not the certificate's, or a
// certificate that is not a valid CA is refused rather than replaced: a new CA
// would silently cut off every node that trusts the old one.
func LoadOrCreateCA(certPath, keyPath, commonName string) (*CA, error) {
	certOK, err := fileExists(certPath)
	if err != nil {
		return nil, err
	}
	keyOK, err := fileExists(keyPath)
	if err != nil {
		return nil, err
	}
	switch {
	case certOK && keyOK:
		return loadCA(certPath, keyPath, time.Now())
	case certOK:
		return nil, fmt.Errorf("ca key %s is missing but certificate %s exists; restore the key or remove both", keyPath, certPath)
	case keyOK:
		return nil, fmt.Errorf("ca certificate %s is missing but key %s exists; restore the certificate or remove both", certPath, keyPath)
	}
	if commonName == "" {
		return nil, errors.New("ca commonName is empty")
	}
	ca, keyPEM, err := newCA(commonName, time.Now())
	if err != nil {
		return nil, err
	}
	// The key goes first: a crash in between leaves a half pair, which the
	// next start reports instead of guessing.
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(certPath, ca.CertPEM, 0o644); err != nil {
		return nil, err
	}
	return ca, nil
}

func newCA(commonName string, now time.Time) (*CA, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate ca key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// Only leaves are issued from it; no intermediate CA may be made.
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("create ca certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse new ca certificate: %w", err)
	}
	keyPEM, err := MarshalKey(key)
	if err != nil {
		return nil, nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(der)}, keyPEM, nil
}

func loadCA(certPath, keyPath string, now time.Time) (*CA, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("read ca certificate: %w", err)
	}
	certs, err := ParseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("ca certificate %s: %w", certPath, err)
	}
	cert := certs[0]
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read ca key: %w", err)
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("ca key %s: %w", keyPath, err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("ca key %s does not match certificate %s", keyPath, certPath)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("ca certificate %s is not a ca (basic constraints or certSign usage missing)", certPath)
	}
	if now.After(cert.NotAfter) {
		return nil, fmt.Errorf("ca certificate %s expired at %s", certPath, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(cert.Raw)}, nil
}

// Pool returns a pool holding only this CA, for verifying peers.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issue makes a fresh ECDSA P-256 key and a certificate for it signed by the
// CA, both PEM encoded.
func (ca *CA) Issue(spec CertSpec) (certPEM, keyPEM []byte, err error) {
	return ca.issue(spec, time.Now())
}

func (ca *CA) issue(spec CertSpec, now time.Time) (certPEM, keyPEM []byte, err error) {
	if err := spec.validate(); err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key for %q: %w", spec.CommonName, err)
	}
	certPEM, err = ca.sign(key.Public(), spec, now)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = MarshalKey(key)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// sign certifies pub with the identity, names and usages of spec.
func (ca *CA) sign(pub crypto.PublicKey, spec CertSpec, now time.Time) ([]byte, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(spec.validity())
	// Nothing verifies past the CA's own end, so the leaf does not claim to.
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:   spec.CommonName,
			Organization: slices.Clone(spec.Organization),
		},
		DNSNames:    slices.Clone(spec.DNSNames),
		IPAddresses: slices.Clone(spec.IPAddresses),
		NotBefore:   now.Add(-clockSkew),
		NotAfter:    notAfter,
		// keyEncipherment means nothing for ECDSA keys but is the set
		// Kubernetes tooling expects on its certificates.
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           spec.extKeyUsage(),
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %q: %w", spec.CommonName, err)
	}
	return encodeCert(der), nil
}

// SignCSR signs a PEM certificate request for node bootstrap. Only the
// request's public key is used: the identity, names and usages come from
// spec, because the server, not the node, decides who the node is.
func (ca *CA) SignCSR(csrPEM []byte, spec CertSpec) ([]byte, error) {
	var der []byte
	for rest := csrPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE REQUEST" || b.Type == "NEW CERTIFICATE REQUEST" {
			der = b.Bytes
			break
		}
	}
	if der == nil {
		return nil, errors.New("certificate request: no CERTIFICATE REQUEST pem block")
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	// The signature proves the sender holds the private key it asks us to
	// certify.
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request signature: %w", err)
	}
	if err := checkPublicKey(csr.PublicKey); err != nil {
		return nil, fmt.Errorf("certificate request public key: %w", err)
	}
	return ca.sign(csr.PublicKey, spec, time.Now())
}

func checkPublicKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fmt.Errorf("unsupported curve %s", k.Curve.Params().Name)
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("rsa key of %d bits is shorter than 2048", k.N.BitLen())
		}
		return nil
	case ed25519.PublicKey:
		return nil
	}
	return fmt.Errorf("unsupported key type %T", pub)
}

// EnsureCert keeps the pair at certPath/keyPath if it still fits spec and
// otherwise issues and writes a new one; changed says whether it wrote. Files
// that cannot be read for reasons other than absence are an error, not a
// reason to overwrite them.
func (ca *CA) EnsureCert(certPath, keyPath string, spec CertSpec) (changed bool, err error) {
	return ca.ensureCert(certPath, keyPath, spec, time.Now())
}

func (ca *CA) ensureCert(certPath, keyPath string, spec CertSpec, now time.Time) (bool, error) {
	if err := spec.validate(); err != nil {
		return false, err
	}
	certPEM, err := readIfExists(certPath)
	if err != nil {
		return false, err
	}
	keyPEM, err := readIfExists(keyPath)
	if err != nil {
		return false, err
	}
	if certPEM != nil && keyPEM != nil && ca.checkPair(certPEM, keyPEM, spec, now) == nil {
		return false, nil
	}
	certPEM, keyPEM, err = ca.issue(spec, now)
	if err != nil {
		return false, err
	}
	// Key first: a crash in between leaves a key that does not match the old
	// certificate, which the next call notices and reissues.
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return false, err
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return false, err
	}
	return true, nil
}

// checkPair says why a stored pair does not fit spec, or nil if it does.
func (ca *CA) checkPair(certPEM, keyPEM []byte, spec CertSpec, now time.Time) error {
	certs, err := ParseCertPEM(certPEM)
	if err != nil {
		return err
	}
	cert := certs[0]
	key, err := ParseKey(keyPEM)
	if err != nil {
		return err
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return errors.New("key does not match certificate")
	}
	if !bytes.Equal(cert.RawIssuer, ca.Cert.RawSubject) {
		return errors.New("issuer is not this ca")
	}
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		return fmt.Errorf("not signed by this ca: %w", err)
	}
	if now.Before(cert.NotBefore) {
		return errors.New("not yet valid")
	}
	threshold := min(renewBefore, cert.NotAfter.Sub(cert.NotBefore)/3)
	if cert.NotAfter.Sub(now) < threshold {
		return errors.New("expires within the renewal threshold")
	}
	if cert.Subject.CommonName != spec.CommonName {
		return fmt.Errorf("commonName is %q, want %q", cert.Subject.CommonName, spec.CommonName)
	}
	// Organization is the group list: an extra group is extra privilege, so
	// it must match exactly (order aside), as must the usages.
	if !sameSet(cert.Subject.Organization, spec.Organization) {
		return fmt.Errorf("organization is %q, want %q", cert.Subject.Organization, spec.Organization)
	}
	if !sameSet(cert.ExtKeyUsage, spec.extKeyUsage()) {
		return errors.New("extended key usages differ")
	}
	if cert.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return errors.New("digitalSignature key usage missing")
	}
	for _, name := range spec.DNSNames {
		if !slices.ContainsFunc(cert.DNSNames, func(have string) bool { return strings.EqualFold(have, name) }) {
			return fmt.Errorf("dns name %q missing", name)
		}
	}
	for _, ip := range spec.IPAddresses {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return fmt.Errorf("ip address %s missing", ip)
		}
	}
	return nil
}

func sameSet[T comparable](a, b []T) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// ParseCertPEM returns every CERTIFICATE block in pemBytes, the leaf first
// as files conventionally order them; other block types are skipped.
func ParseCertPEM(pemBytes []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := pemBytes; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no CERTIFICATE pem block")
	}
	return certs, nil
}

// CertPool returns a pool of the certificates in pemBytes, such as a
// kubeconfig's certificate-authority-data.
func CertPool(pemBytes []byte) (*x509.CertPool, error) {
	certs, err := ParseCertPEM(pemBytes)
	if err != nil {
		return nil, err
	}
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p, nil
}

// MarshalKey encodes a private key as PEM: ECDSA keys as EC PRIVATE KEY
// (what openssl and Kubernetes write), others as PKCS#8 PRIVATE KEY.
func MarshalKey(key crypto.Signer) ([]byte, error) {
	if k, ok := key.(*ecdsa.PrivateKey); ok {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, fmt.Errorf("marshal ec key: %w", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal pkcs8 key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseKey reads the first private key in pemBytes (EC PRIVATE KEY, PKCS#8
// PRIVATE KEY or PKCS#1 RSA PRIVATE KEY), skipping blocks such as the
// EC PARAMETERS that openssl puts before an EC key.
func ParseKey(pemBytes []byte) (crypto.Signer, error) {
	for rest := pemBytes; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch b.Type {
		case "EC PRIVATE KEY":
			k, err := x509.ParseECPrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse ec private key: %w", err)
			}
			return k, nil
		case "RSA PRIVATE KEY":
			k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse rsa private key: %w", err)
			}
			return k, nil
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse pkcs8 private key: %w", err)
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("pkcs8 key of type %T cannot sign", k)
			}
			return s, nil
		}
	}
	return nil, errors.New("no private key pem block")
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// randomSerial returns a random positive 128-bit serial: unpredictable, and
// unique without any state kept between issuances.
func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil // zero is not a valid serial
}

func fileExists(path string) (bool, error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return false, fmt.Errorf("%s is a directory", path)
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	return false, err
}

// readIfExists returns nil, nil for a missing file.
func readIfExists(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// writeFileAtomic replaces path with data so that readers see the old file or
// the new one, never a partial write; missing parent dirs are made 0700.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// Set the final mode before any bytes land, so a key is never readable
	// by others; chmod, unlike create, is not subject to the umask.
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Sync the directory so the rename itself survives a crash.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
