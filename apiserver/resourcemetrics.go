package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/nodecondition"
)

// The resource metrics API (metrics.k8s.io/v1beta1: kubectl top, the
// HorizontalPodAutoscaler), served as metrics-server serves it: from the
// kubelets' summaries (/stats/summary), read when asked.

const metricsPrefix = "/apis/" + api.MetricsGroupVersion

// metricsGroup is the API group of the resource metrics.
const metricsGroup = "metrics.k8s.io"

// summaryTimeout bounds the read of one kubelet's summary (summaryCache
// sets it): a node that does not answer in time is left out.
const summaryTimeout = 5 * time.Second

func (s *Server) metricsRoutes(r *router) {
	nodes := routeInfo{resource: true, group: metricsGroup, res: "nodes"}
	pods := routeInfo{resource: true, group: metricsGroup, res: "pods"}
	node, pod, nsPods := nodes, pods, pods
	node.nameParam = "name"
	nsPods.namespaced = true
	pod.namespaced, pod.nameParam = true, "name"
	r.handle(http.MethodGet, metricsPrefix+"/nodes", nodes, s.nodeMetrics)
	r.handle(http.MethodGet, metricsPrefix+"/nodes/:name", node, s.nodeMetrics)
	r.handle(http.MethodGet, metricsPrefix+"/pods", pods, s.podMetrics)
	r.handle(http.MethodGet, metricsPrefix+"/namespaces/:ns/pods", nsPods, s.podMetrics)
	r.handle(http.MethodGet, metricsPrefix+"/namespaces/:ns/pods/:name", pod, s.podMetrics)
}

// summaries reads, concurrently, the summaries of the kubelets of the
// nodes want picks (every node when want is nil). A node the lifecycle
// controller found lost (Ready Unknown) is not asked: its kubelet stopped
// answering, and every request would wait summaryTimeout for it.
func (s *Server) summaries(ctx context.Context, want func(*api.Node) bool) ([]api.Summary, error) {
	objs, _, err := s.registries[api.NodesResource.Name].List(ctx, "", registry.Filter{})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var out []api.Summary
	var wg sync.WaitGroup
	for _, o := range objs {
		node := o.(*api.Node)
		if want != nil && !want(node) || nodeLost(node) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, err := s.summariesRead.get(ctx, node.UID, func(ctx context.Context) (api.Summary, error) { return s.summaryOf(ctx, node) })
			if err != nil {
				log.WithError(err).WithField("node", node.Name).Debug("apiserver: no summary")
				return
			}
			mu.Lock()
			out = append(out, sum)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, nil
}

func nodeLost(n *api.Node) bool {
	return nodecondition.ReadyStatus(n) == api.ConditionUnknown
}

func (s *Server) summaryOf(ctx context.Context, node *api.Node) (api.Summary, error) {
	target, err := s.nodeKubelet(node)
	if err != nil {
		return api.Summary{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.base+"/stats/summary", nil)
	if err != nil {
		return api.Summary{}, err
	}
	resp, err := target.transport.RoundTrip(req)
	if err != nil {
		return api.Summary{}, err
	}
	defer resp.Body.Close()
	if target.https {
		if err := target.checkPeer(resp.TLS); err != nil {
			return api.Summary{}, err
		}
	}
	if resp.StatusCode != http.StatusOK {
		return api.Summary{}, fmt.Errorf("kubelet of %s: %s", node.Name, resp.Status)
	}
	var sum api.Summary
	err = json.NewDecoder(resp.Body).Decode(&sum)
	return sum, err
}

// usage is a reading in the API's quantities: CPU in nanocores, memory
// in KiB, as metrics-server writes them.
func usage(cpu *api.CPUStats, mem *api.MemoryStats) (api.ResourceList, time.Time, bool) {
	if cpu == nil || cpu.UsageNanoCores == nil || mem == nil || mem.WorkingSetBytes == nil {
		return nil, time.Time{}, false
	}
	return api.ResourceList{
		api.ResourceCPU:    strconv.FormatUint(*cpu.UsageNanoCores, 10) + "n",
		api.ResourceMemory: strconv.FormatUint(*mem.WorkingSetBytes/1024, 10) + "Ki",
	}, cpu.Time, true
}

func (s *Server) nodeMetrics(c *gin.Context) {
	name := c.Param("name")
	var want func(*api.Node) bool
	if name != "" {
		want = func(n *api.Node) bool { return n.Name == name }
	}
	sums, err := s.summaries(c.Request.Context(), want)
	if err != nil {
		fail(c, err)
		return
	}
	list := api.NodeMetricsList{TypeMeta: api.TypeMeta{Kind: "NodeMetricsList", APIVersion: api.MetricsGroupVersion}, Items: []api.NodeMetrics{}}
	for _, sum := range sums {
		u, at, ok := usage(sum.Node.CPU, sum.Node.Memory)
		if !ok {
			continue
		}
		list.Items = append(list.Items, api.NodeMetrics{TypeMeta: api.TypeMeta{Kind: "NodeMetrics", APIVersion: api.MetricsGroupVersion},
			ObjectMeta: api.ObjectMeta{Name: sum.Node.NodeName}, Timestamp: at, Window: "10s", Usage: u})
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	if name != "" {
		if len(list.Items) == 0 {
			fail(c, fmt.Errorf("nodemetrics %q: no readings of node %q yet: %w", name, name, errdefs.ErrNotFound))
			return
		}
		c.JSON(http.StatusOK, list.Items[0])
		return
	}
	c.JSON(http.StatusOK, list)
}

func (s *Server) podMetrics(c *gin.Context) {
	ctx := c.Request.Context()
	ns, name := c.Param("ns"), c.Param("name")
	f, err := registry.FilterOf(requestOf(c).query.list)
	if err != nil {
		fail(c, err)
		return
	}
	// The pods the request selects, as the registry has them now.
	pods, _, err := s.registries[api.PodsResource.Name].List(ctx, ns, f)
	if err != nil {
		fail(c, err)
		return
	}
	// Only the kubelets of the nodes these pods run on are asked.
	selected, onNodes := map[string]*api.Pod{}, map[string]bool{}
	for _, o := range pods {
		p := o.(*api.Pod)
		if name == "" || p.Name == name {
			selected[p.UID] = p
			onNodes[p.Spec.NodeName] = p.Spec.NodeName != ""
		}
	}
	sums, err := s.summaries(ctx, func(n *api.Node) bool { return onNodes[n.Name] })
	if err != nil {
		fail(c, err)
		return
	}
	list := api.PodMetricsList{TypeMeta: api.TypeMeta{Kind: "PodMetricsList", APIVersion: api.MetricsGroupVersion}, Items: []api.PodMetrics{}}
	for _, sum := range sums {
		for _, ps := range sum.Pods {
			p, ok := selected[ps.PodRef.UID]
			if !ok {
				continue
			}
			pm := api.PodMetrics{TypeMeta: api.TypeMeta{Kind: "PodMetrics", APIVersion: api.MetricsGroupVersion},
				ObjectMeta: api.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels}, Window: "10s"}
			for _, cs := range ps.Containers {
				u, at, ok := usage(cs.CPU, cs.Memory)
				if !ok {
					continue
				}
				pm.Timestamp = at
				pm.Containers = append(pm.Containers, api.ContainerMetrics{Name: cs.Name, Usage: u})
			}
			if len(pm.Containers) > 0 {
				list.Items = append(list.Items, pm)
			}
		}
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	if name != "" {
		if len(list.Items) == 0 {
			fail(c, fmt.Errorf("podmetrics %q: no readings of pod %s/%s yet: %w", name, ns, name, errdefs.ErrNotFound))
			return
		}
		c.JSON(http.StatusOK, list.Items[0])
		return
	}
	c.JSON(http.StatusOK, list)
}
