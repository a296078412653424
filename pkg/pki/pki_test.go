package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const day = 24 * time.Hour

func newTestCA(t *testing.T, name string) *CA {
	t.Helper()
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func parseOne(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	certs, err := ParseCertPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

func TestCACreatedThenLoadedIdentical(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "tls")
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	created, err := LoadOrCreateCA(certPath, keyPath, "minik8s-ca")
	if err != nil {
		t.Fatal(err)
	}
	if !created.Cert.IsCA || created.Cert.Subject.CommonName != "minik8s-ca" {
		t.Fatalf("created cert: isCA=%v cn=%q", created.Cert.IsCA, created.Cert.Subject.CommonName)
	}
	if _, ok := created.Key.(*ecdsa.PrivateKey); !ok {
		t.Fatalf("ca key is %T, want ecdsa", created.Key)
	}
	if got := created.Cert.NotAfter.Sub(created.Cert.NotBefore); got < 10*365*day {
		t.Fatalf("ca validity %s, want 10 years", got)
	}
	for path, want := range map[string]os.FileMode{certPath: 0o644, keyPath: 0o600, dir: 0o700} {
		if got := mode(t, path); got != want {
			t.Errorf("%s mode %o, want %o", path, got, want)
		}
	}

	loaded, err := LoadOrCreateCA(certPath, keyPath, "ignored-when-loading")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(loaded.CertPEM, created.CertPEM) || !bytes.Equal(loaded.Cert.Raw, created.Cert.Raw) {
		t.Fatal("loaded ca certificate differs from the created one")
	}
	if !publicKeysEqual(loaded.Key.Public(), created.Key.Public()) {
		t.Fatal("loaded ca key differs from the created one")
	}
	// A certificate from the loaded CA verifies against the created one.
	certPEM, _, err := loaded.Issue(CertSpec{CommonName: "x", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := parseOne(t, certPEM).CheckSignatureFrom(created.Cert); err != nil {
		t.Fatal(err)
	}
}

func TestLoadOrCreateCARefuses(t *testing.T) {
	other := newTestCA(t, "other")
	otherKeyPEM, err := MarshalKey(other.Key)
	if err != nil {
		t.Fatal(err)
	}
	leafPEM, leafKeyPEM, err := other.Issue(CertSpec{CommonName: "leaf", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, certPath, keyPath string)
		wantErr func(certPath, keyPath string) string // substring naming the file
	}{
		{
			name: "mismatched key",
			setup: func(t *testing.T, certPath, keyPath string) {
				if err := os.WriteFile(keyPath, otherKeyPEM, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: func(_, keyPath string) string { return keyPath + " does not match" },
		},
		{
			name: "key missing",
			setup: func(t *testing.T, certPath, keyPath string) {
				os.Remove(keyPath)
			},
			wantErr: func(_, keyPath string) string { return keyPath },
		},
		{
			name: "cert missing",
			setup: func(t *testing.T, certPath, keyPath string) {
				os.Remove(certPath)
			},
			wantErr: func(certPath, _ string) string { return certPath },
		},
		{
			name: "not a ca",
			setup: func(t *testing.T, certPath, keyPath string) {
				os.WriteFile(certPath, leafPEM, 0o644)
				os.WriteFile(keyPath, leafKeyPEM, 0o600)
			},
			wantErr: func(certPath, _ string) string { return certPath + " is not a ca" },
		},
		{
			name: "garbage cert",
			setup: func(t *testing.T, certPath, keyPath string) {
				os.WriteFile(certPath, []byte("not pem"), 0o644)
			},
			wantErr: func(certPath, _ string) string { return certPath },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
			if _, err := LoadOrCreateCA(certPath, keyPath, "minik8s-ca"); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, certPath, keyPath)
			certBefore, certErr := os.ReadFile(certPath)
			keyBefore, keyErr := os.ReadFile(keyPath)
			ca, err := LoadOrCreateCA(certPath, keyPath, "minik8s-ca")
			if err == nil {
				t.Fatalf("loaded %v, want an error", ca.Cert.Subject)
			}
			if want := tc.wantErr(certPath, keyPath); !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not contain %q", err, want)
			}
			// Nothing was written or replaced: the operator decides.
			certAfter, certErr2 := os.ReadFile(certPath)
			keyAfter, keyErr2 := os.ReadFile(keyPath)
			if !bytes.Equal(certBefore, certAfter) || !bytes.Equal(keyBefore, keyAfter) || (certErr == nil) != (certErr2 == nil) || (keyErr == nil) != (keyErr2 == nil) {
				t.Fatal("ca files were written")
			}
		})
	}
}

func TestIssuedCertVerifies(t *testing.T) {
	ca := newTestCA(t, "minik8s-ca")
	pool, err := CertPool(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	serverPEM, serverKeyPEM, err := ca.Issue(CertSpec{
		CommonName:  "kube-apiserver",
		DNSNames:    []string{"localhost", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.96.0.1")},
		Server:      true,
	})
	if err != nil {
		t.Fatal(err)
	}
	clientPEM, _, err := ca.Issue(CertSpec{CommonName: "admin", Organization: []string{"system:masters"}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	server, client := parseOne(t, serverPEM), parseOne(t, clientPEM)
	if key, err := ParseKey(serverKeyPEM); err != nil || !publicKeysEqual(server.PublicKey, key.Public()) {
		t.Fatalf("server key does not match its certificate (%v)", err)
	}
	if server.SerialNumber.Cmp(client.SerialNumber) == 0 || server.SerialNumber.Sign() <= 0 {
		t.Fatalf("serials %v and %v", server.SerialNumber, client.SerialNumber)
	}
	if skew := time.Until(server.NotBefore); skew > -59*time.Minute || skew < -61*time.Minute {
		t.Fatalf("notBefore is %s from now, want one hour back", skew)
	}
	if got := server.NotAfter.Sub(time.Now()); got < 364*day || got > 366*day {
		t.Fatalf("default validity left %s, want 365 days", got)
	}
	if !slices.Equal(client.Subject.Organization, []string{"system:masters"}) || !slices.Contains(client.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Fatalf("client cert org %v usages %v", client.Subject.Organization, client.ExtKeyUsage)
	}
	tests := []struct {
		name  string
		cert  *x509.Certificate
		host  string
		usage x509.ExtKeyUsage
		ok    bool
	}{
		{"server dns name", server, "kubernetes.default.svc", x509.ExtKeyUsageServerAuth, true},
		{"server ip", server, "127.96.0.1", x509.ExtKeyUsageServerAuth, true},
		{"server other name", server, "evil.example", x509.ExtKeyUsageServerAuth, false},
		{"server other ip", server, "127.96.0.2", x509.ExtKeyUsageServerAuth, false},
		{"server as client", server, "", x509.ExtKeyUsageClientAuth, false},
		{"client", client, "", x509.ExtKeyUsageClientAuth, true},
		{"client as server", client, "", x509.ExtKeyUsageServerAuth, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: tc.host, KeyUsages: []x509.ExtKeyUsage{tc.usage}})
			if (err == nil) != tc.ok {
				t.Fatalf("verify: %v, want ok=%v", err, tc.ok)
			}
		})
	}
	// Another CA's pool does not trust it.
	if _, err := server.Verify(x509.VerifyOptions{Roots: newTestCA(t, "other").Pool(), DNSName: "localhost"}); err == nil {
		t.Fatal("verified against another ca")
	}
}

func TestSpecRefused(t *testing.T) {
	ca := newTestCA(t, "minik8s-ca")
	tests := []struct {
		name string
		spec CertSpec
		want string
	}{
		{"no common name", CertSpec{Client: true}, "commonName"},
		{"no usage", CertSpec{CommonName: "x"}, "usage"},
		{"server without sans", CertSpec{CommonName: "x", Server: true}, "dnsNames"},
		{"negative validity", CertSpec{CommonName: "x", Client: true, Validity: -time.Hour}, "validity"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ca.Issue(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestEnsureCert(t *testing.T) {
	ca := newTestCA(t, "minik8s-ca")
	other := newTestCA(t, "other-ca")
	now := time.Now()
	spec := CertSpec{
		CommonName:   "system:node:n1",
		Organization: []string{"system:nodes"},
		DNSNames:     []string{"n1", "localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		Server:       true,
		Client:       true,
	}
	with := func(f func(s *CertSpec)) CertSpec {
		s := spec
		s.Organization = slices.Clone(spec.Organization)
		s.DNSNames = slices.Clone(spec.DNSNames)
		s.IPAddresses = slices.Clone(spec.IPAddresses)
		f(&s)
		return s
	}
	// existing returns what to write before EnsureCert runs (nil: nothing).
	type pair struct{ cert, key []byte }
	issued := func(from *CA, s CertSpec, at time.Time) func(t *testing.T) *pair {
		return func(t *testing.T) *pair {
			c, k, err := from.issue(s, at)
			if err != nil {
				t.Fatal(err)
			}
			return &pair{c, k}
		}
	}
	tests := []struct {
		name     string
		existing func(t *testing.T) *pair
		spec     CertSpec
		changed  bool
	}{
		{"no files", func(*testing.T) *pair { return nil }, spec, true},
		{"fitting cert kept", issued(ca, spec, now), spec, false},
		{"extra sans kept", issued(ca, with(func(s *CertSpec) {
			s.DNSNames = append(s.DNSNames, "n1.cluster.local")
			s.IPAddresses = append(s.IPAddresses, net.ParseIP("127.0.0.201"))
		}), now), spec, false},
		{"dns name case kept", issued(ca, with(func(s *CertSpec) { s.DNSNames = []string{"N1", "LOCALHOST"} }), now), spec, false},
		{"organization order kept", issued(ca, with(func(s *CertSpec) { s.Organization = []string{"b", "a"} }), now),
			with(func(s *CertSpec) { s.Organization = []string{"a", "b"} }), false},
		{"dns name added", issued(ca, spec, now), with(func(s *CertSpec) { s.DNSNames = append(s.DNSNames, "n1.example") }), true},
		{"ip added", issued(ca, spec, now), with(func(s *CertSpec) { s.IPAddresses = append(s.IPAddresses, net.ParseIP("127.0.0.207")) }), true},
		{"common name changed", issued(ca, spec, now), with(func(s *CertSpec) { s.CommonName = "system:node:n2" }), true},
		{"organization added", issued(ca, spec, now), with(func(s *CertSpec) { s.Organization = append(s.Organization, "system:masters") }), true},
		{"organization dropped", issued(ca, spec, now), with(func(s *CertSpec) { s.Organization = nil }), true},
		{"usage dropped", issued(ca, spec, now), with(func(s *CertSpec) { s.Client = false }), true},
		{"usage added", issued(ca, with(func(s *CertSpec) { s.Client = false }), now), spec, true},
		{"signed by another ca", issued(other, spec, now), spec, true},
		{"expires within 30 days", issued(ca, with(func(s *CertSpec) { s.Validity = 420 * day }), now.Add(-400*day)), spec, true},
		{"31 days left kept", issued(ca, with(func(s *CertSpec) { s.Validity = 420 * day }), now.Add(-389*day)), spec, false},
		{"short cert in its last third", issued(ca, with(func(s *CertSpec) { s.Validity = 3 * day }), now.Add(-60*time.Hour)), spec, true},
		{"short cert fresh kept", issued(ca, with(func(s *CertSpec) { s.Validity = 3 * day }), now), spec, false},
		{"expired", issued(ca, with(func(s *CertSpec) { s.Validity = day }), now.Add(-2*day)), spec, true},
		{"key does not match", func(t *testing.T) *pair {
			a, b := issued(ca, spec, now)(t), issued(ca, spec, now)(t)
			return &pair{a.cert, b.key}
		}, spec, true},
		{"corrupt cert", func(t *testing.T) *pair {
			p := issued(ca, spec, now)(t)
			return &pair{[]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), p.key}
		}, spec, true},
		{"key missing", func(t *testing.T) *pair { return &pair{issued(ca, spec, now)(t).cert, nil} }, spec, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "certs")
			certPath, keyPath := filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key")
			var before *x509.Certificate
			if p := tc.existing(t); p != nil {
				os.MkdirAll(dir, 0o700)
				os.WriteFile(certPath, p.cert, 0o644)
				if p.key != nil {
					os.WriteFile(keyPath, p.key, 0o600)
				}
				if certs, err := ParseCertPEM(p.cert); err == nil {
					before = certs[0]
				}
			}
			oldCert, _ := os.ReadFile(certPath)
			oldKey, _ := os.ReadFile(keyPath)

			changed, err := ca.ensureCert(certPath, keyPath, tc.spec, now)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed {
				t.Fatalf("changed = %v, want %v", changed, tc.changed)
			}
			newCert, _ := os.ReadFile(certPath)
			newKey, _ := os.ReadFile(keyPath)
			if !changed {
				if !bytes.Equal(oldCert, newCert) || !bytes.Equal(oldKey, newKey) {
					t.Fatal("files rewritten although unchanged")
				}
				if after := parseOne(t, newCert); before == nil || after.SerialNumber.Cmp(before.SerialNumber) != 0 {
					t.Fatal("serial changed")
				}
			} else if before != nil && parseOne(t, newCert).SerialNumber.Cmp(before.SerialNumber) == 0 {
				t.Fatal("reissued certificate has the old serial")
			}
			// Whatever happened, the pair on disk now fits and stays put.
			if err := ca.checkPair(newCert, newKey, tc.spec, now); err != nil {
				t.Fatalf("pair on disk does not fit: %v", err)
			}
			if again, err := ca.EnsureCert(certPath, keyPath, tc.spec); err != nil || again {
				t.Fatalf("second EnsureCert: changed=%v err=%v", again, err)
			}
			if got := mode(t, keyPath); got != 0o600 {
				t.Errorf("key mode %o, want 600", got)
			}
			if changed {
				if got := mode(t, certPath); got != 0o644 {
					t.Errorf("cert mode %o, want 644", got)
				}
				if got := mode(t, dir); got != 0o700 {
					t.Errorf("dir mode %o, want 700", got)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*")); len(left) > 0 {
				t.Errorf("temp files left: %v", left)
			}
		})
	}
}

func TestEnsureCertUnreadableIsError(t *testing.T) {
	ca := newTestCA(t, "minik8s-ca")
	dir := t.TempDir()
	certPath := filepath.Join(dir, "node.crt")
	if err := os.Mkdir(certPath, 0o700); err != nil { // reading a directory fails
		t.Fatal(err)
	}
	if _, err := ca.EnsureCert(certPath, filepath.Join(dir, "node.key"), CertSpec{CommonName: "x", Client: true}); err == nil {
		t.Fatal("want an error for an unreadable certificate path")
	}
}

func newCSR(t *testing.T, tmpl *x509.CertificateRequest) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestSignCSR(t *testing.T) {
	ca := newTestCA(t, "minik8s-ca")
	// The node asks for far more than it should get.
	key, csrPEM := newCSR(t, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: "system:admin", Organization: []string{"system:masters"}},
		DNSNames:    []string{"evil.example"},
		IPAddresses: []net.IP{net.ParseIP("8.8.8.8")},
	})
	spec := CertSpec{CommonName: "system:node:n1", Organization: []string{"system:nodes"}, Client: true}
	certPEM, err := ca.SignCSR(csrPEM, spec)
	if err != nil {
		t.Fatal(err)
	}
	cert := parseOne(t, certPEM)
	if cert.Subject.CommonName != "system:node:n1" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Fatalf("subject %v taken from the request", cert.Subject)
	}
	if len(cert.DNSNames) != 0 || len(cert.IPAddresses) != 0 {
		t.Fatalf("sans %v %v taken from the request", cert.DNSNames, cert.IPAddresses)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		t.Fatal("certificate is not for the request's key")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Fatal("client-only certificate verified for server auth")
	}

	block, _ := pem.Decode(csrPEM)
	tampered := slices.Clone(block.Bytes)
	tampered[len(tampered)-5] ^= 0xff // inside the signature
	tests := []struct {
		name string
		csr  []byte
		want string
	}{
		{"bad signature", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered}), "signature"},
		{"not pem", []byte("hello"), "CERTIFICATE REQUEST"},
		{"a certificate instead", certPEM, "CERTIFICATE REQUEST"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ca.SignCSR(tc.csr, spec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestKeyAndCertHelpers(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPEM, err := MarshalKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	params := pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}})
	tests := []struct {
		name string
		pem  []byte
		ok   bool
	}{
		{"ec private key", ecPEM, true},
		{"pkcs8", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), true},
		{"openssl ec parameters first", append(params, ecPEM...), true},
		{"no key", params, false},
		{"garbage", []byte("nope"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseKey(tc.pem)
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && !publicKeysEqual(got.Public(), key.Public()) {
				t.Fatal("parsed a different key")
			}
		})
	}
	if !strings.Contains(string(ecPEM), "EC PRIVATE KEY") {
		t.Fatalf("MarshalKey wrote %q", ecPEM)
	}
	if _, err := CertPool([]byte("nope")); err == nil {
		t.Fatal("CertPool accepted data without certificates")
	}
	a, b := newTestCA(t, "a"), newTestCA(t, "b")
	certs, err := ParseCertPEM(append(append([]byte{}, a.CertPEM...), b.CertPEM...))
	if err != nil || len(certs) != 2 || certs[0].Subject.CommonName != "a" {
		t.Fatalf("ParseCertPEM of a bundle: %v %v", certs, err)
	}
}
