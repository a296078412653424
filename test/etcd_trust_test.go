package test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/pki"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage/etcd"
	"minik8s/test/framework"
)

// TestEmbeddedEtcdTrustsOnlyTheAPIServer: the embedded etcd has a CA of its
// own, so that a certificate of the cluster CA (a node's, the admin's) is
// refused at the TLS handshake on its client port, while the apiserver's
// reads the secrets. A data dir of the older layout (etcd's certificates
// issued by the cluster CA) is upgraded on start, its data kept.
func TestEmbeddedEtcdTrustsOnlyTheAPIServer(t *testing.T) {
	s := framework.StartSecureAPIServer(t, "")
	ctx := context.Background()
	secret := &api.Secret{ObjectMeta: api.ObjectMeta{Name: "db", Namespace: "default"}, StringData: map[string]string{"password": "s3cret"}}
	if _, err := s.Client.Secrets("default").Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	pkiDir := filepath.Join(s.DataDir, "pki")
	admin, err := client.LoadKubeconfig(filepath.Join(s.DataDir, apiserver.AdminKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	node, err := apiserver.ClientConfigFor(s.DataDir, s.SecureURL, rbac.NodeUserPrefix+"n1", rbac.NodesGroup)
	if err != nil {
		t.Fatal(err)
	}
	probe := func(t *testing.T) {
		t.Helper()
		port := etcdClientPort(t, s, pkiDir, "/registry/secrets/default/db")
		for _, who := range []struct {
			name      string
			cert, key []byte
		}{{"admin", admin.CertData, admin.KeyData}, {"node", node.CertData, node.KeyData}} {
			if err := tlsHandshakeServed(port, who.cert, who.key); err == nil || !strings.Contains(err.Error(), "remote error: tls") {
				t.Errorf("the %s's certificate at etcd's client port %s: %v, want the handshake refused", who.name, port, err)
			}
		}
	}
	t.Run("fresh", probe)

	// The older layout: etcd's serving and the apiserver's client
	// certificates from the cluster CA, no etcd CA.
	s.Stop()
	clusterCA, err := pki.LoadOrCreateCA(filepath.Join(s.DataDir, apiserver.CAFile), filepath.Join(s.DataDir, "ca.key"), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		spec pki.CertSpec
	}{
		{"etcd-server", pki.CertSpec{CommonName: "minik8s-etcd", DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true}},
		{"apiserver-etcd-client", pki.CertSpec{CommonName: "minik8s-apiserver-etcd-client", Client: true}},
	} {
		cert, key, err := clusterCA.Issue(f.spec)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, filepath.Join(pkiDir, f.name+".crt"), cert)
		writePEM(t, filepath.Join(pkiDir, f.name+".key"), key)
	}
	for _, f := range []string{"etcd-ca.crt", "etcd-ca.key"} {
		if err := os.Remove(filepath.Join(pkiDir, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	s.Start()
	t.Run("upgraded", func(t *testing.T) {
		got, err := s.Client.Secrets("default").Get(ctx, "db")
		if err != nil || string(got.Data["password"]) != "s3cret" {
			t.Fatalf("the secret after the upgrade: %v %v", got, err)
		}
		served, err := os.ReadFile(filepath.Join(pkiDir, "etcd-server.crt"))
		if err != nil {
			t.Fatal(err)
		}
		certs, err := pki.ParseCertPEM(served)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: clusterCA.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
			t.Errorf("etcd's serving certificate is still the cluster CA's after the upgrade")
		}
		probe(t)
	})
}

// etcdClientPort finds the embedded etcd's client port among the loopback
// ports this process listens on: the one where the apiserver's etcd
// client certificate reads key, which the test wrote.
func etcdClientPort(t *testing.T, s *framework.APIServer, pkiDir, key string) string {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "apiserver-etcd-client.crt"), filepath.Join(pkiDir, "apiserver-etcd-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	// Which CA signed etcd's serving certificate is checked elsewhere.
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true} //nolint:gosec
	var tried []string
	for _, addr := range framework.OwnLoopbackListeners(t) {
		if addr == s.Addr || "https://"+addr == s.SecureURL {
			continue
		}
		tried = append(tried, addr)
		c, err := etcd.NewClient([]string{"https://" + addr}, tc)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := c.Get(ctx, key)
		cancel()
		c.Close()
		if err == nil && len(resp.Kvs) == 1 {
			return addr
		}
	}
	t.Fatalf("no loopback port of this process (%v) is an etcd that serves the apiserver's client certificate", tried)
	return ""
}

// tlsHandshakeServed connects to addr with a client certificate and tells
// whether the server took it: with TLS 1.3 a refused client certificate
// shows as the server's alert on the first read; a server that took it
// waits for the client to speak (the read times out).
func tlsHandshakeServed(addr string, certPEM, keyPEM []byte) error {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		// Only the client's certificate is under test here.
		&tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}) //nolint:gosec
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	return err
}

func writePEM(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
