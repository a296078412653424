package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"minik8s/apiserver/alloc"
	"minik8s/pkg/client"
	"minik8s/pkg/pki"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage/etcd"
)

// The cluster's credentials live in the data dir, made when missing, as
// k3s does: the CA (ca.crt, ca.key), the apiserver's serving certificate,
// its client certificate towards kubelets, the service-account signing
// key, the node join token and a kubeconfig for the admin.
const (
	CAFile            = "ca.crt"
	caKeyFile         = "ca.key"
	pkiDir            = "pki"
	NodeTokenFile     = "node-token"
	AdminKubeconfig   = "admin.kubeconfig"
	AdminUser         = "admin"
	clusterName       = "minik8s"
	servingCertFile   = "apiserver.crt"
	servingKeyFile    = "apiserver.key"
	kubeletClientCert = "apiserver-kubelet-client.crt"
	kubeletClientKey  = "apiserver-kubelet-client.key"
	saKeyFile         = "sa.key"
)

// credentials are what the apiserver serves and signs with.
type credentials struct {
	ca            *pki.CA
	serving       tls.Certificate
	kubeletClient tls.Certificate
	saKey         *ecdsa.PrivateKey
	// nodeToken is the secret a node joins with; nodeTokenFull the string
	// an admin hands to the node (the CA's hash and the secret, as k3s).
	nodeToken, nodeTokenFull string
}

func (c *Config) pkiPath(name string) string { return filepath.Join(c.DataDir, pkiDir, name) }

// loadCredentials makes or loads the cluster's credentials in the data dir.
func loadCredentials(cfg *Config) (*credentials, error) {
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, pkiDir), 0o700); err != nil {
		return nil, err
	}
	ca, err := loadCA(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	creds := &credentials{ca: ca}
	spec := pki.CertSpec{CommonName: "minik8s-apiserver", Server: true}
	spec.DNSNames, spec.IPAddresses = servingNames(cfg)
	if _, err := ca.EnsureCert(cfg.pkiPath(servingCertFile), cfg.pkiPath(servingKeyFile), spec); err != nil {
		return nil, fmt.Errorf("apiserver serving certificate: %w", err)
	}
	if creds.serving, err = tls.LoadX509KeyPair(cfg.pkiPath(servingCertFile), cfg.pkiPath(servingKeyFile)); err != nil {
		return nil, err
	}
	kc := pki.CertSpec{CommonName: rbac.APIServerKubeletClient, Organization: []string{rbac.Masters}, Client: true}
	if _, err := ca.EnsureCert(cfg.pkiPath(kubeletClientCert), cfg.pkiPath(kubeletClientKey), kc); err != nil {
		return nil, fmt.Errorf("apiserver kubelet client certificate: %w", err)
	}
	if creds.kubeletClient, err = tls.LoadX509KeyPair(cfg.pkiPath(kubeletClientCert), cfg.pkiPath(kubeletClientKey)); err != nil {
		return nil, err
	}
	if creds.saKey, err = loadOrCreateECKey(cfg.pkiPath(saKeyFile)); err != nil {
		return nil, fmt.Errorf("service account signing key: %w", err)
	}
	if creds.nodeToken, err = loadOrCreateSecret(filepath.Join(cfg.DataDir, NodeTokenFile)); err != nil {
		return nil, fmt.Errorf("node token: %w", err)
	}
	creds.nodeTokenFull = pki.NodeToken(ca.CertPEM, creds.nodeToken)
	// The file holds the whole token, as an admin hands it to a node.
	if err := writePrivate(filepath.Join(cfg.DataDir, NodeTokenFile), []byte(creds.nodeTokenFull+"\n")); err != nil {
		return nil, err
	}
	return creds, nil
}

// servingNames are the names and addresses the serving certificate covers:
// loopback, this machine's addresses, the advertised one, the kubernetes
// Service and --tls-san.
func servingNames(cfg *Config) ([]string, []net.IP) {
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				ips = append(ips, n.IP.To4())
			}
		}
	}
	if ip, err := kubernetesServiceIP(cfg.ServiceCIDR); err == nil {
		ips = append(ips, ip)
	}
	// Pods reach it there through the kubernetes Service (it may be no
	// address of this machine's: a node's, relayed).
	if ip := net.ParseIP(cfg.AdvertiseAddress); ip != nil && !slices.ContainsFunc(ips, ip.Equal) {
		ips = append(ips, ip)
	}
	for _, san := range cfg.TLSSANs {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else if san != "" {
			dns = append(dns, san)
		}
	}
	return dns, ips
}

// kubernetesServiceIP is the first address of the service range, the
// kubernetes Service's, as in Kubernetes.
func kubernetesServiceIP(cidr string) (net.IP, error) {
	n, err := alloc.ParseServiceCIDR(cidr)
	if err != nil {
		return nil, err
	}
	ip := n.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1).To4(), nil
}

func loadOrCreateECKey(path string) (*ecdsa.PrivateKey, error) {
	if data, err := os.ReadFile(path); err == nil {
		k, err := pki.ParseKey(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ec, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%s: not an ECDSA key", path)
		}
		return ec, nil
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	data, err := pki.MarshalKey(k)
	if err != nil {
		return nil, err
	}
	return k, writePrivate(path, data)
}

func loadOrCreateSecret(path string) (string, error) {
	if data, err := os.ReadFile(path); err == nil {
		_, secret := pki.ParseNodeToken(strings.TrimSpace(string(data)))
		if secret == "" {
			return "", fmt.Errorf("%s is empty", path)
		}
		return secret, nil
	} else if !os.IsNotExist(err) {
		return "", err
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func writePrivate(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeAdminKubeconfig writes DATA/admin.kubeconfig, when missing: the
// cluster CA and a client certificate of the admin (group
// system:masters), for the secure port at server.
func writeAdminKubeconfig(cfg *Config, creds *credentials, server string) error {
	path := filepath.Join(cfg.DataDir, AdminKubeconfig)
	if cur, err := client.LoadKubeconfig(path); err == nil && cur.Server == server {
		return nil
	}
	certPEM, keyPEM, err := creds.ca.Issue(pki.CertSpec{CommonName: AdminUser, Organization: []string{rbac.Masters}, Client: true})
	if err != nil {
		return err
	}
	return client.WriteKubeconfig(path, clusterName,
		client.Config{Server: server, CAData: creds.ca.CertPEM, CertData: certPEM, KeyData: keyPEM})
}

// ClientConfigFor issues, from the cluster CA in dataDir (made when
// missing), a client certificate for user in groups, and returns the
// configuration of a client of the secure port at server with it: for
// the components minik8s up starts beside the apiserver, each as itself.
func ClientConfigFor(dataDir, server, user string, groups ...string) (client.Config, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return client.Config{}, err
	}
	ca, err := loadCA(dataDir)
	if err != nil {
		return client.Config{}, err
	}
	certPEM, keyPEM, err := ca.Issue(pki.CertSpec{CommonName: user, Organization: groups, Client: true})
	if err != nil {
		return client.Config{}, err
	}
	return client.Config{Server: server, CAData: ca.CertPEM, CertData: certPEM, KeyData: keyPEM}, nil
}

// loadCA loads the cluster CA of the data dir, made when missing.
func loadCA(dataDir string) (*pki.CA, error) {
	return pki.LoadOrCreateCA(filepath.Join(dataDir, CAFile), filepath.Join(dataDir, caKeyFile), "minik8s-ca")
}

// The embedded etcd has a CA of its own (pki/etcd-ca.crt), as kubeadm and
// k3s give it: it signs etcd's serving (and peer) certificate and the
// apiserver's client certificate, and nothing else, so that etcd takes no
// certificate of the cluster CA (a node's, the admin's) as a client.
const (
	etcdCAFile      = "etcd-ca.crt"
	etcdCAKeyFile   = "etcd-ca.key"
	etcdServingCert = "etcd-server.crt"
	etcdServingKey  = "etcd-server.key"
	etcdClientCert  = "apiserver-etcd-client.crt"
	etcdClientKey   = "apiserver-etcd-client.key"
)

// embeddedEtcdCerts makes the embedded etcd's certificates from its own
// CA: its serving (and peer) certificate for loopback, and the apiserver's
// client certificate, the only client it takes. A data dir made before
// etcd had its own CA holds both issued by the cluster CA: EnsureCert
// issues them anew from the etcd CA (their issuer is not it), under the
// same names, and etcd's data is left as it is.
func embeddedEtcdCerts(cfg *Config) (serving, clientFiles etcd.TLSFiles, err error) {
	ca, err := pki.LoadOrCreateCA(cfg.pkiPath(etcdCAFile), cfg.pkiPath(etcdCAKeyFile), "minik8s-etcd-ca")
	if err != nil {
		return serving, clientFiles, fmt.Errorf("etcd CA: %w", err)
	}
	serving = etcd.TLSFiles{CAFile: cfg.pkiPath(etcdCAFile), CertFile: cfg.pkiPath(etcdServingCert), KeyFile: cfg.pkiPath(etcdServingKey)}
	spec := pki.CertSpec{CommonName: "minik8s-etcd", DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true}
	if _, err := ca.EnsureCert(serving.CertFile, serving.KeyFile, spec); err != nil {
		return serving, clientFiles, fmt.Errorf("etcd serving certificate: %w", err)
	}
	clientFiles = etcd.TLSFiles{CAFile: serving.CAFile, CertFile: cfg.pkiPath(etcdClientCert), KeyFile: cfg.pkiPath(etcdClientKey)}
	if _, err := ca.EnsureCert(clientFiles.CertFile, clientFiles.KeyFile, pki.CertSpec{CommonName: "minik8s-apiserver-etcd-client", Client: true}); err != nil {
		return serving, clientFiles, fmt.Errorf("etcd client certificate: %w", err)
	}
	return serving, clientFiles, nil
}

// KubeletServingFor issues, from the cluster CA in dataDir, the serving
// certificate of node name's kubelet on ip, and returns it with its key
// and the CA (which also verifies the apiserver as a client of the
// kubelet): for the kubelet minik8s up starts beside the apiserver.
func KubeletServingFor(dataDir, name string, ip net.IP) (cert, key, caPEM []byte, err error) {
	ca, err := loadCA(dataDir)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, key, err = ca.Issue(KubeletServingSpec(name, ip))
	return cert, key, ca.CertPEM, err
}
