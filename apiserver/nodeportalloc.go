package apiserver

import (
	"strconv"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/storage"
)

// nodePortAllocPrefix records which Service holds a node port (its name is
// the port).
const nodePortAllocPrefix = keyRoot + "nodeportallocations/"

// nodePortAllocator hands out the ports of the node port range; a Service
// holds one per port, all created with it in one transaction.
type nodePortAllocator struct {
	*rangeAllocator
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

func newNodePortAllocator(store storage.Interface, text string) (*nodePortAllocator, error) {
	first, last, err := ParseNodePortRange(text)
	if err != nil {
		return nil, err
	}
	a := &nodePortAllocator{base: first, last: last}
	a.rangeAllocator = &rangeAllocator{cursor: &rangeCursor{},
		store: store, what: "node port", kind: api.ServicesResource.Kind, rangeText: "node port range " + text,
		prefix:     nodePortAllocPrefix,
		size:       uint32(last - first + 1),
		member:     func(i uint32) string { return strconv.Itoa(int(first) + int(i)) },
		recordName: func(port string) string { return port },
		newRecord: func(port string, holder api.Object) api.Object {
			svc := holder.(*api.Service)
			now := time.Now().UTC().Truncate(time.Second)
			return &ipAllocation{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "NodePortAllocation"},
				ObjectMeta: api.ObjectMeta{Name: port, CreationTimestamp: &now},
				Service:    api.ObjectReference{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID}}
		},
		newEmpty: func() api.Object { return &ipAllocation{} },
		holderOf: func(rec api.Object) api.ObjectReference { return rec.(*ipAllocation).Service },
		holders:  keyRoot + api.ServicesResource.Name + "/",
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
