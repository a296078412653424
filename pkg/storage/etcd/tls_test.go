package etcd_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s/pkg/pki"
	"minik8s/pkg/storage/etcd"
)

// TestEmbeddedTLS: with serving certificates the embedded etcd speaks only
// TLS and takes only clients with a certificate of its CA.
func TestEmbeddedTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	files := func(name string, spec pki.CertSpec) etcd.TLSFiles {
		f := etcd.TLSFiles{CAFile: filepath.Join(dir, "ca.crt"), CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
		if _, err := ca.EnsureCert(f.CertFile, f.KeyFile, spec); err != nil {
			t.Fatal(err)
		}
		return f
	}
	serving := files("server", pki.CertSpec{CommonName: "etcd", IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true})
	clientFiles := files("client", pki.CertSpec{CommonName: "apiserver", Client: true})
	e, err := etcd.StartEmbedded(context.Background(), filepath.Join(dir, "etcd"), serving)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	try := func(endpoint string, tc *tls.Config) error {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tc, DialTimeout: 2 * time.Second})
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = c.Put(ctx, "/k", "v")
		return err
	}
	good, err := clientFiles.Config()
	if err != nil {
		t.Fatal(err)
	}
	if err := try(e.Endpoints[0], good); err != nil {
		t.Fatalf("client with a certificate of the CA: %v", err)
	}
	noCert, err := etcd.TLSFiles{CAFile: serving.CAFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if err := try(e.Endpoints[0], noCert); err == nil {
		t.Errorf("a TLS client without a certificate was served")
	}
	plain := "http://" + e.Endpoints[0][len("https://"):]
	if err := try(plain, nil); err == nil {
		t.Errorf("a plain client was served")
	}
	other, err := pki.LoadOrCreateCA(filepath.Join(dir, "other.crt"), filepath.Join(dir, "other.key"), "other-ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := other.Issue(pki.CertSpec{CommonName: "intruder", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "i.crt"), cert, 0o600)
	os.WriteFile(filepath.Join(dir, "i.key"), key, 0o600)
	foreign, err := etcd.TLSFiles{CAFile: serving.CAFile, CertFile: filepath.Join(dir, "i.crt"), KeyFile: filepath.Join(dir, "i.key")}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if err := try(e.Endpoints[0], foreign); err == nil {
		t.Errorf("a client with another CA's certificate was served")
	}
}
