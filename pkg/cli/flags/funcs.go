package flags

import (
	"flag"
	"net/netip"
	"strings"
	"time"

	"minik8s/pkg/egress"
)

// FuncInstanceTTL registers --func-instance-ttl.
func FuncInstanceTTL(fs *flag.FlagSet, p *time.Duration, def time.Duration) {
	fs.DurationVar(p, "func-instance-ttl", def, "how long function call records are kept")
}

// FuncInstanceBudget registers --funcinstance-budget.
func FuncInstanceBudget(fs *flag.FlagSet, p *int, def int) {
	fs.IntVar(p, "funcinstance-budget", def, "how many finished function instances (call records) are kept across the cluster; older ones are deleted")
}

// PendingCalls registers the bounds of the asynchronous calls waiting to
// run: --max-pending-calls and --max-pending-call-bytes.
func PendingCalls(fs *flag.FlagSet, calls *int, callsDef int, bytes *int64) {
	fs.IntVar(calls, "max-pending-calls", callsDef, "asynchronous calls waiting to run beyond which new ones get 429 (-1: no bound)")
	fs.Int64Var(bytes, "max-pending-call-bytes", 0, "bytes the arguments of asynchronous calls waiting to run may hold, beyond which new ones get 429 (default 256 MiB, or an eighth of --etcd-quota-bytes when less; -1: no bound)")
}

// WarmPoolSize registers --warm-pool-size.
func WarmPoolSize(fs *flag.FlagSet, p *int, def int) {
	fs.IntVar(p, "warm-pool-size", def, "warm generic function pods kept per runtime, namespace with Python functions and node, which a cold call specialises instead of waiting for a new pod (0: none)")
}

// FuncScaling registers how idle functions scale down:
// --func-scale-interval and --func-idle-window.
func FuncScaling(fs *flag.FlagSet, interval *time.Duration, intervalDef time.Duration, idle *time.Duration, idleDef time.Duration) {
	fs.DurationVar(interval, "func-scale-interval", intervalDef, "how often idle functions' counters are lowered by one")
	fs.DurationVar(idle, "func-idle-window", idleDef, "how long without a call makes a function idle")
}

// Gateway registers the function gateway's --gateway-port (bin/funcrunner
// serves none by default, minik8s up does) and --gateway-address.
func Gateway(fs *flag.FlagSet, port *int, portDef int, address *string) {
	fs.IntVar(port, "gateway-port", portDef, "port of the function gateway serving the HTTP triggers (minik8s up: in its first function runner; 0: none)")
	fs.StringVar(address, "gateway-address", "127.0.0.1", "address the function gateway binds")
}

// NATSURL registers --nats-url.
func NATSURL(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "nats-url", "", "NATS server (with JetStream) whose subjects the queue triggers consume (default: none; minik8s up: its embedded one, see --nats-port)")
}

// OTLPEndpoint registers --otlp-endpoint.
func OTLPEndpoint(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "otlp-endpoint", "", "send the spans of calls with OTLP over HTTP to this base URL (spans go to URL/v1/traces; any collector or Jaeger), e.g. http://127.0.0.1:4318")
}

// EgressAllowCIDRs registers --egress-allow-cidrs, which may be repeated.
func EgressAllowCIDRs(fs *flag.FlagSet, p *[]netip.Prefix) {
	fs.Var((*egress.CIDRs)(p), "egress-allow-cidrs", "comma-separated CIDR ranges (or addresses) that callbacks may reach although they trust the platform "+
		"(loopback, link-local, this machine's and the nodes' addresses, the pod and service ranges are refused by default); "+
		"everything in a range is opened, this machine's ports too: list only the receivers, e.g. 127.0.0.2/32; "+
		"give the apiserver and every function runner the same list")
}

// SchedulerPolicy registers --policy, one of policies.
func SchedulerPolicy(fs *flag.FlagSet, p *string, def string, policies ...string) {
	fs.StringVar(p, "policy", def, "how to choose among the nodes a pod fits on: "+strings.Join(policies, " or "))
}
