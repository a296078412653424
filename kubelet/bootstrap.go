package kubelet

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	log "github.com/sirupsen/logrus"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/pki"
)

// A node joins as k3s agents do: its token (DATA/node-token on the
// server) carries the hash of the cluster CA and a secret. The kubelet
// fetches the CA, checks it against the hash before it trusts the server
// with the secret, sends the secret with a certificate request, and keeps
// the certificate it gets in ROOT/kubelet.kubeconfig for its next starts.

// The kubelet's own kubeconfig and serving certificate in its root dir.
const (
	KubeconfigFile  = "kubelet.kubeconfig"
	ServingCertFile = "kubelet.crt"
	ServingKeyFile  = "kubelet.key"
)

// renewBefore: credentials closer than this to their end are asked anew.
const renewBefore = 30 * 24 * time.Hour

// joinClient returns the client of a node joining with token, and sets
// cfg's serving certificate and CA: its saved credentials while they hold,
// else new ones asked for with the token.
func joinClient(ctx context.Context, cfg *Config) (*client.Client, error) {
	path := filepath.Join(cfg.RootDir, KubeconfigFile)
	certPath, keyPath := filepath.Join(cfg.RootDir, ServingCertFile), filepath.Join(cfg.RootDir, ServingKeyFile)
	if saved, err := client.LoadKubeconfig(path); err == nil && saved.Server == cfg.APIServer && stillValid(saved.CertData) {
		cert, cerr := os.ReadFile(certPath)
		key, kerr := os.ReadFile(keyPath)
		if cerr == nil && kerr == nil && stillValidFor(cert, cfg.NodeIP) {
			cfg.ServingCert, cfg.ServingKey, cfg.ClientCA = cert, key, saved.CAData
			if len(cfg.CAData) == 0 {
				cfg.CAData = saved.CAData
			}
			return client.NewForConfig(saved)
		}
	}
	hash, secret := pki.ParseNodeToken(strings.TrimSpace(cfg.Token))
	if hash == "" || secret == "" {
		return nil, errdefs.Invalid("token", "the token must be the whole node token of the server (DATA/node-token: K10<CA hash>::node:<secret>), "+
			"so that the node can check the server before sending it the secret")
	}
	caPEM, err := fetchCA(ctx, cfg.APIServer, hash)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	clientCSR, err := certificateRequest(key, cfg.NodeName)
	if err != nil {
		return nil, err
	}
	servingCSR, err := certificateRequest(servingKey, cfg.NodeName)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(api.NodeCredentialsRequest{NodeName: cfg.NodeName, ClientCSR: clientCSR, ServingCSR: servingCSR, NodeIP: cfg.NodeIP})
	pool, err := pki.CertPool(caPEM)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(cfg.APIServer, "/")+api.NodeCredentialsPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(cfg.Token))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the apiserver for the node's credentials: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("asking the apiserver for the node's credentials: %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	var creds api.NodeCredentials
	if err := json.Unmarshal(data, &creds); err != nil {
		return nil, fmt.Errorf("the apiserver's answer with the node's credentials: %w", err)
	}
	keyPEM, err := pki.MarshalKey(key)
	if err != nil {
		return nil, err
	}
	servingKeyPEM, err := pki.MarshalKey(servingKey)
	if err != nil {
		return nil, err
	}
	cc := client.Config{Server: cfg.APIServer, CAData: caPEM, CertData: []byte(creds.ClientCertificate), KeyData: keyPEM}
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyPath, servingKeyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(certPath, []byte(creds.ServingCertificate), 0o644); err != nil {
		return nil, err
	}
	if err := client.WriteKubeconfig(path, "minik8s-node", cc); err != nil {
		return nil, err
	}
	cfg.ServingCert, cfg.ServingKey, cfg.ClientCA = []byte(creds.ServingCertificate), servingKeyPEM, caPEM
	if len(cfg.CAData) == 0 {
		cfg.CAData = caPEM
	}
	log.WithFields(log.Fields{"node": cfg.NodeName, "kubeconfig": path}).Info("joined the cluster: the node's credentials are saved")
	return client.NewForConfig(cc)
}

// fetchCA reads the cluster CA from /cacerts without trusting the server
// yet, and accepts it only if it has the token's hash.
func fetchCA(ctx context.Context, server, hash string) ([]byte, error) {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		// Checked by the token's hash below instead.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(server, "/")+"/cacerts", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the cluster CA from %s: %w", server, err)
	}
	defer resp.Body.Close()
	caPEM, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the cluster CA from %s: %s %v", server, resp.Status, err)
	}
	if got := pki.CAHash(caPEM); got != hash {
		return nil, fmt.Errorf("the CA of %s has hash %s, not the token's %s: not the cluster the token is for, refusing to send it the token", server, got, hash)
	}
	return caPEM, nil
}

// certificateRequest is a PEM certificate request of key for node name.
func certificateRequest(key *ecdsa.PrivateKey, name string) (string, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + name}}, key)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), nil
}

// stillValidFor tells whether a saved serving certificate has life left
// and is for ip.
func stillValidFor(certPEM []byte, ip string) bool {
	certs, err := pki.ParseCertPEM(certPEM)
	return err == nil && len(certs) > 0 && time.Until(certs[0].NotAfter) > renewBefore && certs[0].VerifyHostname(ip) == nil
}

// stillValid tells whether a saved client certificate has life left.
func stillValid(certPEM []byte) bool {
	certs, err := pki.ParseCertPEM(certPEM)
	return err == nil && len(certs) > 0 && time.Until(certs[0].NotAfter) > renewBefore
}
