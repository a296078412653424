package alloc

import (
	"strconv"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// nodePortPrefix records which Service holds a node port (its name is
// the port).
const nodePortPrefix = storage.KeyRoot + "nodeportallocations/"

// NodePorts hands out the ports of the node port range; a Service holds
// one per port, all created with it in one transaction.
type NodePorts struct {
	*Range
	base, last int32
}

// ParseNodePortRange checks a range of ports "first-last".
func ParseNodePortRange(text string) (int32, int32, error) {
	a, b, ok := strings.Cut(text, "-")
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || first < 1 || last > 65535 || first > last {
		return 0, 0, errdefs.Invalid("service-node-port-range", "%q is not a range of ports FIRST-LAST", text)
	}
	return int32(first), int32(last), nil
}

// NewNodePorts is the allocator of the node port range text.
func NewNodePorts(store storage.Interface, text string) (*NodePorts, error) {
	first, last, err := ParseNodePortRange(text)
	if err != nil {
		return nil, err
	}
	a := &NodePorts{base: first, last: last}
	a.Range = &Range{cursor: &rangeCursor{},
		store: store, what: "node port", kind: api.ServicesResource.Kind, rangeText: "node port range " + text,
		prefix:     nodePortPrefix,
		size:       uint32(last - first + 1),
		member:     func(i uint32) string { return strconv.Itoa(int(first) + int(i)) },
		recordName: func(port string) string { return port },
		newRecord: func(port string, holder api.Object) api.Object {
			svc := holder.(*api.Service)
			now := time.Now().UTC().Truncate(time.Second)
			return &IPAllocation{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "NodePortAllocation"},
				ObjectMeta: api.ObjectMeta{Name: port, CreationTimestamp: &now},
				Service:    api.ObjectReference{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID}}
		},
		newEmpty: func() api.Object { return &IPAllocation{} },
		holderOf: func(rec api.Object) api.ObjectReference { return rec.(*IPAllocation).Service },
		holders:  storage.KeyRoot + api.ServicesResource.Name + "/",
		newOwner: func() api.Object { return &api.Service{} },
		holds: func(o api.Object, port string) bool {
			for _, p := range o.(*api.Service).Spec.Ports {
				if strconv.Itoa(int(p.NodePort)) == port {
					return true
				}
			}
			return false
		},
	}
	return a, nil
}

// Bounds are the first and last ports of the range.
func (a *NodePorts) Bounds() (first, last int32) { return a.base, a.last }

// DryRun is the allocator over a dry run of its store.
func (a *NodePorts) DryRun() *NodePorts {
	d := *a
	d.Range = a.Range.DryRun()
	return &d
}
