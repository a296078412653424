package apiserver

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/api"
)

// The Kubernetes release whose API this server speaks: kubectl and
// client-go compare it with their own (a skew of one minor is supported).
const (
	kubernetesMajor = "1"
	kubernetesMinor = "32"
)

// discovery is what /api and /apis list, built once from api.Resources.
type discovery struct {
	core   api.APIResourceList
	groups []api.APIGroup
	// lists of the named groups, by group version ("apps/v1").
	lists map[string]api.APIResourceList
	// custom are the custom resources' groups and lists, now.
	custom func() ([]api.APIGroup, map[string]api.APIResourceList)
}

// served are kinds served apart from api.Resources (no storage).
var served = []struct {
	groupVersion string
	res          api.APIResource
}{
	{"authorization.k8s.io/v1", api.APIResource{Name: "selfsubjectaccessreviews", SingularName: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview", Verbs: []string{"create"}}},
	{"authorization.k8s.io/v1", api.APIResource{Name: "subjectaccessreviews", SingularName: "subjectaccessreview", Kind: "SubjectAccessReview", Verbs: []string{"create"}}},
	{api.MetricsGroupVersion, api.APIResource{Name: "nodes", SingularName: "", Kind: "NodeMetrics", Verbs: []string{"get", "list"}}},
	{api.MetricsGroupVersion, api.APIResource{Name: "pods", SingularName: "", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}}},
}

// allCategory are the kinds `kubectl get all` shows, as in Kubernetes.
var allCategory = []string{"pods", "services", "replicasets", "deployments", "jobs", "cronjobs"}

func newDiscovery(custom func() ([]api.APIGroup, map[string]api.APIResourceList)) *discovery {
	d := &discovery{lists: map[string]api.APIResourceList{}, custom: custom}
	d.core = api.APIResourceList{TypeMeta: api.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1"}
	var order []string
	add := func(gv string, r ...api.APIResource) {
		if gv == "v1" {
			d.core.Resources = append(d.core.Resources, r...)
			return
		}
		l, ok := d.lists[gv]
		if !ok {
			order = append(order, gv)
			l = api.APIResourceList{TypeMeta: api.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
		}
		l.Resources = append(l.Resources, r...)
		d.lists[gv] = l
	}
	for _, res := range api.Resources {
		res = res.Served()
		add(res.GroupVersion(), discoveryResources(res)...)
	}
	for _, s := range served {
		add(s.groupVersion, s.res)
	}
	// A group's other versions come after the one its objects are
	// stored in, which is the preferred one.
	for _, res := range api.OtherVersions {
		add(res.GroupVersion(), discoveryResources(res)...)
	}
	index := map[string]int{}
	for _, gv := range order {
		group, version, _ := strings.Cut(gv, "/")
		v := api.GroupVersionForDiscovery{GroupVersion: gv, Version: version}
		if i, ok := index[group]; ok {
			d.groups[i].Versions = append(d.groups[i].Versions, v)
			continue
		}
		index[group] = len(d.groups)
		d.groups = append(d.groups, api.APIGroup{Name: group, Versions: []api.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return d
}

// discoveryResources are a kind and its subresources as discovery lists
// them: the verbs its routes serve, its short names.
func discoveryResources(res api.Resource) []api.APIResource {
	singular := strings.ToLower(res.Kind)
	main := api.APIResource{Name: res.Name, SingularName: singular, Namespaced: res.Namespaced, Kind: res.Kind,
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}}
	for _, s := range res.ShortNames {
		if s != singular && s != res.Name {
			main.ShortNames = append(main.ShortNames, s)
		}
	}
	if slices.Contains(allCategory, res.Name) {
		main.Categories = []string{"all"}
	}
	if res.Name == api.FuncInstancesResource.Name {
		// Made by calling a function, advanced by runners (status).
		main.Verbs = []string{"create", "delete", "get", "list", "watch"}
	}
	out := []api.APIResource{main}
	sub := func(name string, verbs ...string) api.APIResource {
		return api.APIResource{Name: res.Name + "/" + name, Namespaced: res.Namespaced, Kind: res.Kind, Verbs: verbs}
	}
	if res.HasStatus {
		status := sub("status", "get", "patch", "update")
		if res.Name == api.FuncInstancesResource.Name {
			status.Verbs = []string{"get", "update"}
		}
		out = append(out, status)
	}
	switch res.Name {
	case api.NamespacesResource.Name:
		out = append(out, sub("finalize", "update"))
	case api.PodsResource.Name:
		binding := sub("binding", "create")
		binding.Kind = "Binding"
		// kubectl drain evicts (honouring disruption budgets) when
		// discovery lists this, and deletes otherwise.
		eviction := sub("eviction", "create")
		eviction.Group, eviction.Version, eviction.Kind = api.PolicyGroup, "v1", "Eviction"
		out = append(out, binding, eviction, sub("log", "get"), sub("exec", "create", "get"), sub("portforward", "create", "get"))
	case api.ServiceAccountsResource.Name:
		token := sub("token", "create")
		token.Group, token.Version, token.Kind = "authentication.k8s.io", "v1", "TokenRequest"
		out = append(out, token)
	case api.ReplicaSetsResource.Name, api.DeploymentsResource.Name, api.StatefulSetsResource.Name:
		scale := sub("scale", "get", "patch", "update")
		scale.Group, scale.Version, scale.Kind = "autoscaling", "v1", "Scale"
		out = append(out, scale)
	}
	return out
}

// routes serves the discovery documents.
func (d *discovery) routes(r *router) {
	r.handle(http.MethodGet, "/version", nonResource(), serveVersion)
	r.handle(http.MethodGet, "/api", nonResource(), func(c *gin.Context) {
		c.JSON(http.StatusOK, api.APIVersions{TypeMeta: api.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []api.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: c.Request.Host}}})
	})
	r.handle(http.MethodGet, "/api/v1", nonResource(), func(c *gin.Context) { c.JSON(http.StatusOK, d.core) })
	r.handle(http.MethodGet, "/apis", nonResource(), func(c *gin.Context) {
		groups := d.groups
		if d.custom != nil {
			custom, _ := d.custom()
			groups = append(slices.Clip(groups), custom...)
		}
		c.JSON(http.StatusOK, api.APIGroupList{TypeMeta: api.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: groups})
	})
	// The custom resources' groups, served while they are.
	r.handle(http.MethodGet, "/apis/:group", nonResource(), func(c *gin.Context) {
		groups, _ := d.customs()
		for _, g := range groups {
			if g.Name == c.Param("group") {
				g.TypeMeta = api.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				c.JSON(http.StatusOK, g)
				return
			}
		}
		fail(c, notFoundPath(c.Request.URL.Path))
	})
	r.handle(http.MethodGet, "/apis/:group/:version", nonResource(), func(c *gin.Context) {
		_, lists := d.customs()
		if l, ok := lists[c.Param("group")+"/"+c.Param("version")]; ok {
			c.JSON(http.StatusOK, l)
			return
		}
		fail(c, notFoundPath(c.Request.URL.Path))
	})
	for _, g := range d.groups {
		group := g
		group.TypeMeta = api.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		r.handle(http.MethodGet, "/apis/"+g.Name, nonResource(), func(c *gin.Context) { c.JSON(http.StatusOK, group) })
		for _, v := range g.Versions {
			list := d.lists[v.GroupVersion]
			r.handle(http.MethodGet, "/apis/"+v.GroupVersion, nonResource(), func(c *gin.Context) { c.JSON(http.StatusOK, list) })
		}
	}
}

// customs are the custom groups and lists now (none without custom).
func (d *discovery) customs() ([]api.APIGroup, map[string]api.APIResourceList) {
	if d.custom == nil {
		return nil, nil
	}
	return d.custom()
}

func serveVersion(c *gin.Context) {
	v := api.VersionInfo{Major: kubernetesMajor, Minor: kubernetesMinor, GitVersion: "v" + kubernetesMajor + "." + kubernetesMinor + ".0-minik8s",
		GitTreeState: "clean", BuildDate: "1970-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.GitCommit = s.Value
			case "vcs.time":
				v.BuildDate = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					v.GitTreeState = "dirty"
				}
			}
		}
	}
	c.JSON(http.StatusOK, v)
}
