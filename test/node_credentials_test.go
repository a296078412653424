package test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/pki"
	"minik8s/pkg/rbac"
	"minik8s/test/framework"
)

// TestNodeCredentials: the node token mints credentials only for a name
// its password proves, and serving certificates only for an address the
// node may hold. The token for the name of a node that never joined (as
// minik8s up's own, here "vm") is refused, as is a serving certificate for
// loopback, for other special addresses, for the apiserver's address and
// for another node's; a refused request binds nothing. A node joins,
// rejoins with its password, renews with its own certificate, and moves
// to another address only after an admin deletes its Node.
func TestNodeCredentials(t *testing.T) {
	// 10.98.0.100 is one of the apiserver's addresses (--tls-san).
	s := framework.StartSecureAPIServerWith(t, "", func(c *apiserver.Config) { c.TLSSANs = []string{"10.98.0.100"} })
	ctx := context.Background()
	tokenBytes, err := os.ReadFile(filepath.Join(s.DataDir, apiserver.NodeTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	token := s.SecureClient(t, client.Config{Token: strings.TrimSpace(string(tokenBytes))})
	pw := func(c byte) string { return strings.Repeat(string(c), 64) }

	// minik8s up's own node: made with credentials from the CA, never by
	// the token, and so without a password.
	vm := &api.Node{ObjectMeta: api.ObjectMeta{Name: "vm"}, Status: api.NodeStatus{Addresses: []api.NodeAddress{{Type: api.NodeInternalIP, Address: "10.98.0.1"}}}}
	if _, err := s.Client.Nodes().Create(ctx, vm); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Nodes().UpdateStatus(ctx, mustGetNode(t, s, "vm", vm.Status)); err != nil {
		t.Fatal(err)
	}

	t.Run("the token for an existing node's name", func(t *testing.T) {
		for _, p := range []string{pw('a'), pw('b')} {
			_, err := askNodeCredentials(ctx, token, "vm", p, "10.98.0.7")
			if !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "did not join with the node token") {
				t.Errorf("credentials for vm with the token: %v, want 403", err)
			}
		}
	})

	t.Run("first join binds the name and address", func(t *testing.T) {
		creds, err := askNodeCredentials(ctx, token, "n1", pw('1'), "10.98.0.11")
		if err != nil {
			t.Fatal(err)
		}
		cert := parseCert(t, creds.ClientCertificate)
		if cert.Subject.CommonName != "system:node:n1" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != rbac.NodesGroup {
			t.Errorf("client certificate: %v", cert.Subject)
		}
		serving := parseCert(t, creds.ServingCertificate)
		if len(serving.IPAddresses) != 1 || !serving.IPAddresses[0].Equal(net.ParseIP("10.98.0.11")) || len(serving.DNSNames) != 0 {
			t.Errorf("serving certificate names %v %v, want 10.98.0.11 alone (the request asked for localhost and kubernetes too)", serving.IPAddresses, serving.DNSNames)
		}
		if _, err := askNodeCredentials(ctx, token, "n1", pw('1'), "10.98.0.11"); err != nil {
			t.Errorf("rejoining with its password: %v", err)
		}
		if _, err := askNodeCredentials(ctx, token, "n1", pw('x'), "10.98.0.11"); !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "node password") {
			t.Errorf("n1 with another password: %v, want 403", err)
		}
		if _, err := askNodeCredentials(ctx, token, "n1", pw('1'), "10.98.0.12"); !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), "bound to 10.98.0.11") {
			t.Errorf("n1 at another address: %v, want 403", err)
		}
		if _, err := askNodeCredentials(ctx, token, "n1", "short", "10.98.0.11"); !errdefs.IsInvalid(err) {
			t.Errorf("n1 with a short password: %v, want 422", err)
		}

		// Its own certificate renews its credentials, its own only.
		own := nodeClient(t, s, creds)
		if _, err := askNodeCredentials(ctx, own, "n1", pw('1'), "10.98.0.11"); err != nil {
			t.Errorf("renewing with its own certificate: %v", err)
		}
		if _, err := askNodeCredentials(ctx, own, "n1", pw('y'), "10.98.0.11"); !errdefs.IsForbidden(err) {
			t.Errorf("renewing with its own certificate and another password: %v, want 403", err)
		}
		if _, err := askNodeCredentials(ctx, own, "n9", pw('9'), "10.98.0.19"); !errdefs.IsForbidden(err) {
			t.Errorf("n1's certificate asking for n9's credentials: %v, want 403", err)
		}
	})

	t.Run("serving certificates for addresses no node may have", func(t *testing.T) {
		for i, tc := range []struct{ ip, why string }{
			{"127.0.0.1", "loopback"}, {"127.0.0.9", "loopback"}, {"::1", "loopback"}, {"0.0.0.0", "unspecified"},
			{"169.254.169.254", "link-local"}, {"224.0.0.1", "link-local"}, {"239.0.0.1", "multicast"}, {"255.255.255.255", "broadcast"},
			{"10.98.0.100", "apiserver's address"}, {"10.98.0.1", `node "vm" holds`}, {"10.98.0.11", `node "n1" holds`},
		} {
			// Each with a password of its own: a refused request binds
			// nothing, so the last one below still binds n2.
			_, err := askNodeCredentials(ctx, token, "n2", pw(byte('a'+i)), tc.ip)
			if !errdefs.IsForbidden(err) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("a serving certificate for %s: %v, want 403 (%s)", tc.ip, err, tc.why)
			}
		}
		if _, err := askNodeCredentials(ctx, token, "n2", pw('2'), "10.98.0.12"); err != nil {
			t.Errorf("n2 at its own address after the refusals: %v", err)
		}
	})

	t.Run("an admin deleting the Node lets the name join again", func(t *testing.T) {
		n1 := &api.Node{ObjectMeta: api.ObjectMeta{Name: "n1"}}
		if _, err := s.Client.Nodes().Create(ctx, n1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Client.Nodes().Delete(ctx, "n1", client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := askNodeCredentials(ctx, token, "n1", pw('n'), "10.98.0.13"); err != nil {
			t.Errorf("n1, reinstalled at another address after its Node was deleted: %v", err)
		}
	})

	t.Run("a node joined before passwords renews and binds one", func(t *testing.T) {
		if _, err := s.Client.Nodes().Create(ctx, &api.Node{ObjectMeta: api.ObjectMeta{Name: "old"}}); err != nil {
			t.Fatal(err)
		}
		cc, err := apiserver.ClientConfigFor(s.DataDir, s.SecureURL, rbac.NodeUserPrefix+"old", rbac.NodesGroup)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := askNodeCredentials(ctx, s.SecureClient(t, cc), "old", pw('o'), "10.98.0.14"); err != nil {
			t.Fatalf("renewing with its own certificate: %v", err)
		}
		if _, err := askNodeCredentials(ctx, token, "old", pw('p'), "10.98.0.14"); !errdefs.IsForbidden(err) {
			t.Errorf("the token for old with another password: %v, want 403", err)
		}
		if _, err := askNodeCredentials(ctx, token, "old", pw('o'), "10.98.0.14"); err != nil {
			t.Errorf("the token for old with its password: %v", err)
		}
	})
}

// askNodeCredentials asks for name's credentials as c authenticates,
// with certificate requests that name more than the node (which the
// apiserver must ignore).
func askNodeCredentials(ctx context.Context, c *client.Client, name, password, ip string) (*nodeCreds, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + name, Organization: []string{rbac.Masters}},
		DNSNames: []string{"localhost", "kubernetes"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}, key)
	if err != nil {
		return nil, err
	}
	csr := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	var out api.NodeCredentials
	req := api.NodeCredentialsRequest{NodeName: name, NodePassword: password, ClientCSR: csr, ServingCSR: csr, NodeIP: ip}
	if err := c.Do(ctx, http.MethodPost, api.NodeCredentialsPath, req, &out); err != nil {
		return nil, err
	}
	keyPEM, err := pki.MarshalKey(key)
	return &nodeCreds{NodeCredentials: out, key: keyPEM}, err
}

type nodeCreds struct {
	api.NodeCredentials
	key []byte
}

// nodeClient is a client of the secure port with the node's credentials.
func nodeClient(t *testing.T, s *framework.APIServer, c *nodeCreds) *client.Client {
	t.Helper()
	return s.SecureClient(t, client.Config{CertData: []byte(c.ClientCertificate), KeyData: c.key})
}

func parseCert(t *testing.T, certPEM string) *x509.Certificate {
	t.Helper()
	certs, err := pki.ParseCertPEM([]byte(certPEM))
	if err != nil || len(certs) == 0 {
		t.Fatalf("certificate %q: %v", certPEM, err)
	}
	return certs[0]
}

// mustGetNode is the stored Node name with status st, for UpdateStatus.
func mustGetNode(t *testing.T, s *framework.APIServer, name string, st api.NodeStatus) *api.Node {
	t.Helper()
	n, err := s.Client.Nodes().Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	n.Status = st
	return n
}
