// Package nodecondition reads a Node's conditions, so the scheduler, the
// lifecycle controller, the metrics API and the printers judge a node's
// readiness the same way.
package nodecondition

import "minik8s/pkg/api"

// Ready is the node's Ready condition, nil when the kubelet never posted one.
func Ready(n *api.Node) *api.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == api.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// ReadyStatus is the Ready condition's status (True, False or Unknown), ""
// without one.
func ReadyStatus(n *api.Node) string {
	if c := Ready(n); c != nil {
		return c.Status
	}
	return ""
}
