package flags

import "flag"

// Etcd registers the flags of an external etcd: --etcd-endpoints (a
// comma-separated list; none: the embedded etcd) and the files of its TLS.
func Etcd(fs *flag.FlagSet, endpoints *[]string, caFile, certFile, keyFile *string) {
	fs.Var((*list)(endpoints), "etcd-endpoints", "comma-separated `endpoints` of an external etcd cluster (default: embedded etcd, TLS with the cluster CA)")
	fs.StringVar(caFile, "etcd-cafile", "", "CA that verifies the external etcd")
	fs.StringVar(certFile, "etcd-certfile", "", "client certificate for the external etcd")
	fs.StringVar(keyFile, "etcd-keyfile", "", "client key for the external etcd")
}

// EtcdQuotaBytes registers --etcd-quota-bytes of the embedded etcd.
func EtcdQuotaBytes(fs *flag.FlagSet, p *int64) {
	fs.Int64Var(p, "etcd-quota-bytes", 0, "size the embedded etcd's database may reach before etcd refuses writes (its NOSPACE alarm; 0: etcd's default of 2 GiB)")
}
