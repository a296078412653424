package flags

import "flag"

// SecurePort registers --secure-port, the API's TLS port.
func SecurePort(fs *flag.FlagSet, p *int) {
	fs.IntVar(p, "secure-port", 6443, "port of the secure API: TLS, authenticated (0: off); DATA/admin.kubeconfig reaches it as the admin")
}

// BindAddress registers --bind-address, where the secure port binds.
func BindAddress(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "bind-address", "0.0.0.0", "address the secure port binds")
}

// LocalPort registers --port of the API's local port: minik8s up opens it
// by default, bin/apiserver does not.
func LocalPort(fs *flag.FlagSet, p *int, def int) {
	fs.IntVar(p, "port", def, "local port: plain HTTP on loopback (127.0.0.1; minik8s up: --address) that acts as the admin without credentials, for the reference design's scripts (0: off)")
}

// TLSSANs registers --tls-san, a comma-separated list.
func TLSSANs(fs *flag.FlagSet, p *[]string) {
	fs.Var((*list)(p), "tls-san", "comma-separated extra `names` and addresses of the serving certificate")
}

// TokenAuthFile registers --token-auth-file.
func TokenAuthFile(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "token-auth-file", "", "static token file: token,user,uid,\"group1,group2\" per line")
}

// DataDir registers --data-dir.
func DataDir(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "data-dir", "./data", "directory of the cluster's state: the embedded etcd's data, the cluster CA and the credentials (minik8s up: the kubelet's files and the private containerd too)")
}
