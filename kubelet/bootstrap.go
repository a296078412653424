package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
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
// with the secret, sends the secret with certificate requests and its node
// password (ROOT/node-password, made at its first join: the first request
// binds it to the node's name), and keeps the certificates it gets in
// ROOT/kubelet.kubeconfig for its next starts. Near their end it renews
// them with its own certificate while that holds, and with the token once
// it has expired.

// The kubelet's own kubeconfig, serving certificate and password in its
// root dir.
const (
	KubeconfigFile   = "kubelet.kubeconfig"
	ServingCertFile  = "kubelet.crt"
	ServingKeyFile   = "kubelet.key"
	NodePasswordFile = "node-password"
)

// renewBefore: credentials closer than this to their end are asked anew.
const renewBefore = 30 * 24 * time.Hour

// joinClient returns the client of a node joining with token, and sets
// cfg's serving certificate and CA: its saved credentials while they hold,
// else new ones.
func joinClient(ctx context.Context, cfg *Config) (*client.Client, error) {
	path := filepath.Join(cfg.RootDir, KubeconfigFile)
	saved, err := client.LoadKubeconfig(path)
	ours := err == nil && saved.Server == cfg.APIServer
	if ours && validFor(saved.CertData, renewBefore) {
		cert, cerr := os.ReadFile(filepath.Join(cfg.RootDir, ServingCertFile))
		key, kerr := os.ReadFile(filepath.Join(cfg.RootDir, ServingKeyFile))
		if cerr == nil && kerr == nil && stillValidFor(cert, cfg.NodeIP) {
			cfg.ServingCert, cfg.ServingKey, cfg.ClientCA = cert, key, saved.CAData
			if len(cfg.CAData) == 0 {
				cfg.CAData = saved.CAData
			}
			return client.NewForConfig(saved)
		}
	}
	password, err := nodePassword(cfg.RootDir)
	if err != nil {
		return nil, err
	}
	if ours && validFor(saved.CertData, 0) {
		own := client.Config{Server: cfg.APIServer, CAData: saved.CAData, CertData: saved.CertData, KeyData: saved.KeyData}
		c, err := askCredentials(ctx, cfg, own, password)
		if err == nil || errdefs.IsForbidden(err) || errdefs.IsInvalid(err) {
			// Refused for what the request asks: the token would be too.
			return c, err
		}
		log.WithError(err).Warn("renewing the node's credentials with its own certificate failed; asking with the token")
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
	return askCredentials(ctx, cfg, client.Config{Server: cfg.APIServer, CAData: caPEM, Token: strings.TrimSpace(cfg.Token)}, password)
}

// askCredentials asks the apiserver, as cc authenticates, for new
// credentials of the node (new keys), saves them and returns the node's
// client.
func askCredentials(ctx context.Context, cfg *Config, cc client.Config, password string) (*client.Client, error) {
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
	c, err := client.NewForConfig(cc)
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var creds api.NodeCredentials
	req := api.NodeCredentialsRequest{NodeName: cfg.NodeName, NodePassword: password, ClientCSR: clientCSR, ServingCSR: servingCSR, NodeIP: cfg.NodeIP}
	if err := c.Do(actx, http.MethodPost, api.NodeCredentialsPath, req, &creds); err != nil {
		return nil, fmt.Errorf("asking the apiserver for the node's credentials: %w", err)
	}
	keyPEM, err := pki.MarshalKey(key)
	if err != nil {
		return nil, err
	}
	servingKeyPEM, err := pki.MarshalKey(servingKey)
	if err != nil {
		return nil, err
	}
	node := client.Config{Server: cfg.APIServer, CAData: cc.CAData, CertData: []byte(creds.ClientCertificate), KeyData: keyPEM}
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfg.RootDir, ServingKeyFile), servingKeyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfg.RootDir, ServingCertFile), []byte(creds.ServingCertificate), 0o644); err != nil {
		return nil, err
	}
	path := filepath.Join(cfg.RootDir, KubeconfigFile)
	if err := client.WriteKubeconfig(path, "minik8s-node", node); err != nil {
		return nil, err
	}
	cfg.ServingCert, cfg.ServingKey, cfg.ClientCA = []byte(creds.ServingCertificate), servingKeyPEM, cc.CAData
	if len(cfg.CAData) == 0 {
		cfg.CAData = cc.CAData
	}
	log.WithFields(log.Fields{"node": cfg.NodeName, "kubeconfig": path}).Info("joined the cluster: the node's credentials are saved")
	return client.NewForConfig(node)
}

// nodePassword is the node's password (ROOT/node-password), made at its
// first join: 256 random bits, as k3s agents keep theirs. It proves the
// node's name to the apiserver from then on: losing it means an admin
// deletes the Node before the node may join again.
func nodePassword(rootDir string) (string, error) {
	path := filepath.Join(rootDir, NodePasswordFile)
	data, err := os.ReadFile(path)
	if err == nil {
		p := strings.TrimSpace(string(data))
		if len(p) < 32 {
			return "", fmt.Errorf("%s: the node password must have at least 32 characters, it has %d", path, len(p))
		}
		return p, nil
	}
	if !os.IsNotExist(err) {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	p := hex.EncodeToString(b)
	if err := os.MkdirAll(rootDir, 0o755); err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(p+"\n"), 0o600); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, path)
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

// validFor tells whether a saved client certificate holds for longer than
// d.
func validFor(certPEM []byte, d time.Duration) bool {
	certs, err := pki.ParseCertPEM(certPEM)
	return err == nil && len(certs) > 0 && time.Until(certs[0].NotAfter) > d
}
