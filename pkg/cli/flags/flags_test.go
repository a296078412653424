package flags

import (
	"flag"
	"io"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// The comma-separated lists read as the mains split them before: the last
// flag given wins, and an empty one is no list.
func TestList(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, nil},
		{[]string{"--tls-san", ""}, nil},
		{[]string{"--tls-san", "a.example"}, []string{"a.example"}},
		{[]string{"--tls-san", "a.example,10.0.0.1"}, []string{"a.example", "10.0.0.1"}},
		{[]string{"--tls-san", "a,,b"}, []string{"a", "", "b"}},
		{[]string{"--tls-san", "a", "--tls-san", "b,c"}, []string{"b", "c"}},
		{[]string{"--tls-san", "a", "--tls-san", ""}, nil},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var got []string
		TLSSANs(fs, &got)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
}

// Every flag of minik8s up, the widest set, registers once on one flag set
// and binds where it is told.
func TestRegisterAll(t *testing.T) {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		s                                         [21]string
		sans, endpoints                           []string
		secure, port, mask, budget, calls, gwPort int
		quota, callBytes                          int64
		allow                                     []netip.Prefix
		ttl, interval, idle                       time.Duration
	)
	LogLevel(fs, &s[0], "info")
	Client(fs, &s[1], "http://127.0.0.1:8080", &s[2])
	JoinToken(fs, &s[3])
	SecurePort(fs, &secure)
	BindAddress(fs, &s[4])
	LocalPort(fs, &port, 8080)
	TLSSANs(fs, &sans)
	TokenAuthFile(fs, &s[5])
	DataDir(fs, &s[6])
	Etcd(fs, &endpoints, &s[7], &s[8], &s[9])
	EtcdQuotaBytes(fs, &quota)
	ServiceCIDR(fs, &s[10], "")
	ClusterCIDR(fs, &s[11])
	NodeCIDRMaskSize(fs, &mask, 24)
	ServiceNodePortRange(fs, &s[12], "30000-32767")
	PodNetwork(fs, &s[13], "cni")
	Node(fs, &s[14], &s[15])
	ContainerdAddress(fs, &s[16], "")
	FuncInstanceTTL(fs, &ttl, 0)
	FuncInstanceBudget(fs, &budget, 10)
	PendingCalls(fs, &calls, 20000, &callBytes)
	FuncScaling(fs, &interval, 0, &idle, 0)
	Gateway(fs, &gwPort, 8081, &s[17])
	NATSURL(fs, &s[18])
	OTLPEndpoint(fs, &s[19])
	EgressAllowCIDRs(fs, &allow)
	SchedulerPolicy(fs, &s[20], "least-allocated", "least-allocated", "round-robin")
	err := fs.Parse([]string{"--etcd-endpoints", "https://a:2379,https://b:2379", "--node-cidr-mask-size", "26",
		"--egress-allow-cidrs", "127.0.0.2", "--egress-allow-cidrs", "10.9.0.0/16", "--cluster-cidr", "10.50.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://a:2379", "https://b:2379"}; !reflect.DeepEqual(endpoints, want) {
		t.Errorf("etcd endpoints %q, want %q", endpoints, want)
	}
	if mask != 26 || s[11] != "10.50.0.0/16" || secure != 6443 || port != 8080 || gwPort != 8081 || calls != 20000 {
		t.Errorf("mask %d, cluster CIDR %q, secure port %d, port %d, gateway port %d, pending calls %d", mask, s[11], secure, port, gwPort, calls)
	}
	if want := []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32"), netip.MustParsePrefix("10.9.0.0/16")}; !reflect.DeepEqual(allow, want) {
		t.Errorf("egress allow %v, want %v (the flag adds up)", allow, want)
	}
}
