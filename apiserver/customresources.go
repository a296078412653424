package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"

	"minik8s/apiserver/customresource"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// Custom resources: the kinds CustomResourceDefinitions declare, served
// from the moment the apiserver sees their definition (crdController) on
// the same handlers as the built-in kinds, each served version by a
// registry.Store of its own (its schema, its columns) over one
// collection in the store: versions convert with strategy None, only
// their apiVersion differs.

// customVersion is one served version of a custom resource.
type customVersion struct {
	h *handlers
	// crd is the definition's name, and scale its scale subresource.
	crd   string
	scale *apiextv1.CustomResourceSubresourceScale
}

// customResources are the custom resources served now.
type customResources struct {
	mu sync.RWMutex
	// versions by "group/version/plural".
	versions map[string]*customVersion
	// crds are the definitions served, by name.
	crds map[string]*api.CustomResourceDefinition
}

func newCustomResources() *customResources {
	return &customResources{versions: map[string]*customVersion{}, crds: map[string]*api.CustomResourceDefinition{}}
}

func gvrKey(group, version, plural string) string { return group + "/" + version + "/" + plural }

// lookup is the served version of a request's route.
func (cr *customResources) lookup(group, version, plural string) *customVersion {
	cr.mu.RLock()
	defer cr.mu.RUnlock()
	return cr.versions[gvrKey(group, version, plural)]
}

// serve replaces what crd's kind is served with by versions (none: the
// kind is no longer served).
func (cr *customResources) serve(crd *api.CustomResourceDefinition, versions []*customVersion) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	for k, v := range cr.versions {
		if v.crd == crd.Name {
			delete(cr.versions, k)
		}
	}
	delete(cr.crds, crd.Name)
	if len(versions) == 0 {
		return
	}
	cr.crds[crd.Name] = crd
	for _, v := range versions {
		res := v.h.reg.Resource
		cr.versions[gvrKey(res.Group, res.Version, res.Name)] = v
	}
}

// served is the definitions served now, in name order.
func (cr *customResources) served() []*api.CustomResourceDefinition {
	cr.mu.RLock()
	defer cr.mu.RUnlock()
	out := make([]*api.CustomResourceDefinition, 0, len(cr.crds))
	for _, crd := range cr.crds {
		out = append(out, crd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// taken says whether another definition serves group's plural.
func (cr *customResources) taken(crd *api.CustomResourceDefinition) bool {
	cr.mu.RLock()
	defer cr.mu.RUnlock()
	for name, other := range cr.crds {
		if name != crd.Name && other.Spec.Group == crd.Spec.Group && other.Spec.Names.Plural == crd.Spec.Names.Plural {
			return true
		}
	}
	return false
}

// discovery is the custom groups and their resource lists, groups in
// name order, a group's versions in Kubernetes' version priority.
func (cr *customResources) discovery() ([]api.APIGroup, map[string]api.APIResourceList) {
	cr.mu.RLock()
	defer cr.mu.RUnlock()
	lists := map[string]api.APIResourceList{}
	versions := map[string][]string{}
	for _, crd := range cr.crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			l, ok := lists[gv]
			if !ok {
				l = api.APIResourceList{TypeMeta: api.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
				versions[crd.Spec.Group] = append(versions[crd.Spec.Group], v.Name)
			}
			l.Resources = append(l.Resources, customDiscovery(crd, v)...)
			lists[gv] = l
		}
	}
	var groups []api.APIGroup
	for g, vs := range versions {
		sort.Slice(vs, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0 })
		group := api.APIGroup{Name: g}
		for _, v := range vs {
			group.Versions = append(group.Versions, api.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v})
		}
		group.PreferredVersion = group.Versions[0]
		groups = append(groups, group)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	return groups, lists
}

// customDiscovery is a custom kind and its subresources as discovery
// lists them.
func customDiscovery(crd *api.CustomResourceDefinition, v apiextv1.CustomResourceDefinitionVersion) []api.APIResource {
	n := crd.Status.AcceptedNames
	if n.Plural == "" {
		n = crd.Spec.Names
	}
	namespaced := crd.Spec.Scope == apiextv1.NamespaceScoped
	main := api.APIResource{Name: n.Plural, SingularName: n.Singular, Namespaced: namespaced, Kind: n.Kind,
		Verbs:      []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"},
		ShortNames: n.ShortNames, Categories: n.Categories}
	out := []api.APIResource{main}
	if s := v.Subresources; s != nil {
		if s.Status != nil {
			out = append(out, api.APIResource{Name: n.Plural + "/status", Namespaced: namespaced, Kind: n.Kind, Verbs: []string{"get", "patch", "update"}})
		}
		if s.Scale != nil {
			out = append(out, api.APIResource{Name: n.Plural + "/scale", Namespaced: namespaced, Group: "autoscaling", Version: "v1", Kind: "Scale",
				Verbs: []string{"get", "patch", "update"}})
		}
	}
	return out
}

// customRoutes serves every custom resource's paths: the router's
// wildcards, resolved against the resources served now at each request.
func (s *Server) customRoutes(r *router) {
	base := "/apis/:group/:version"
	for _, scoped := range []bool{false, true} {
		prefix := base
		if scoped {
			prefix += "/namespaces/:ns"
		}
		coll := routeInfo{resource: true, custom: true, namespaced: scoped}
		item := coll
		item.nameParam = "name"
		sub := func(name string) routeInfo {
			i := item
			i.subresource = name
			return i
		}
		path, one := prefix+"/:res", prefix+"/:res/:name"
		r.handle(http.MethodGet, path, coll, s.custom(scoped, func(h *handlers) gin.HandlerFunc { return h.list }))
		r.handle(http.MethodPost, path, coll, s.custom(scoped, func(h *handlers) gin.HandlerFunc { return h.create }))
		r.handle(http.MethodDelete, path, coll, s.custom(scoped, func(h *handlers) gin.HandlerFunc { return h.deleteCollection }))
		r.handle(http.MethodGet, one, item, s.custom(scoped, func(h *handlers) gin.HandlerFunc { return h.get }))
		r.handle(http.MethodPut, one, item, s.custom(scoped, func(h *handlers) gin.HandlerFunc { return h.update }))
		r.handle(http.MethodDelete, one, item, s.custom(scoped, func(h *handlers) gin.HandlerFunc { return h.delete }))
		r.handle(http.MethodPatch, one, item, s.custom(scoped, func(h *handlers) gin.HandlerFunc { return h.patch((*registry.Store).Update, true) }))
		status := s.customSub(scoped, "status")
		r.handle(http.MethodGet, one+"/status", sub("status"), status(func(h *handlers) gin.HandlerFunc { return h.get }))
		r.handle(http.MethodPut, one+"/status", sub("status"), status(func(h *handlers) gin.HandlerFunc { return h.updateStatus }))
		r.handle(http.MethodPatch, one+"/status", sub("status"), status(func(h *handlers) gin.HandlerFunc { return h.patch((*registry.Store).UpdateStatus, false) }))
		scale := s.customSub(scoped, "scale")
		r.handle(http.MethodGet, one+"/scale", sub("scale"), scale(func(h *handlers) gin.HandlerFunc { return h.getCustomScale }))
		r.handle(http.MethodPut, one+"/scale", sub("scale"), scale(func(h *handlers) gin.HandlerFunc { return h.updateCustomScale }))
		r.handle(http.MethodPatch, one+"/scale", sub("scale"), scale(func(h *handlers) gin.HandlerFunc { return h.patchCustomScale }))
	}
}

// custom is the handler op of the custom resource a request names: 404
// for a resource not served (or served in the other scope).
func (s *Server) custom(scoped bool, op func(h *handlers) gin.HandlerFunc) gin.HandlerFunc {
	return s.customSub(scoped, "")(op)
}

func (s *Server) customSub(scoped bool, subresource string) func(op func(h *handlers) gin.HandlerFunc) gin.HandlerFunc {
	return func(op func(h *handlers) gin.HandlerFunc) gin.HandlerFunc {
		return func(c *gin.Context) {
			v := s.customs.lookup(c.Param("group"), c.Param("version"), c.Param("res"))
			ok := v != nil && (!scoped || v.h.reg.Resource.Namespaced)
			// A namespaced kind is listed across namespaces without one.
			if ok && !scoped && v.h.reg.Resource.Namespaced && (c.Param("name") != "" || c.Request.Method != http.MethodGet) {
				ok = false
			}
			switch {
			case ok && subresource == "status":
				ok = v.h.reg.Resource.HasStatus
			case ok && subresource == "scale":
				ok = v.scale != nil
			}
			if !ok {
				fail(c, fmt.Errorf("the server could not find the requested resource (%s): %w", strings.TrimPrefix(c.Request.URL.Path, "/apis/"), errdefs.ErrNotFound))
				return
			}
			op(v.h)(c)
		}
	}
}

// customVersions makes the served versions of crd's kind.
func (s *Server) customVersions(crd *api.CustomResourceDefinition) ([]*customVersion, error) {
	var out []*customVersion
	names := crd.Status.AcceptedNames
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		res := api.Resource{Name: names.Plural, Kind: names.Kind, ShortNames: names.ShortNames, Group: crd.Spec.Group, Version: v.Name,
			Namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped, Custom: true,
			New: func() api.Object { return &api.CustomObject{} }}
		var scale *apiextv1.CustomResourceSubresourceScale
		if sub := v.Subresources; sub != nil {
			res.HasStatus = sub.Status != nil
			scale = sub.Scale
		}
		schema, err := customresource.NewSchema(v.Schema)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		columns, err := customresource.NewColumns(v.AdditionalPrinterColumns)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		reg := &registry.Store{Resource: res, Storage: s.store, Schema: schema, Fields: fieldTracker{fields: s.fields}}
		if res.Namespaced {
			reg.Namespaces = s.namespaces
		}
		h := &handlers{srv: s, reg: reg, maxBody: s.cfg.MaxBodyBytes, view: customView{res: res}, columns: columns}
		out = append(out, &customVersion{h: h, crd: crd.Name, scale: scale})
	}
	return out, nil
}

// customView shows an object in the route's version: with conversion
// None only the apiVersion differs from the version it was written in.
type customView struct{ res api.Resource }

func (v customView) groupVersion() string   { return v.res.GroupVersion() }
func (v customView) newObject() api.Object  { return &api.CustomObject{} }
func (v customView) resource() api.Resource { return v.res }

func (v customView) show(obj api.Object) api.Object {
	o, ok := obj.(*api.CustomObject)
	if !ok || o.APIVersion == v.res.GroupVersion() {
		return obj
	}
	c := *o
	c.APIVersion = v.res.GroupVersion()
	return &c
}

func (v customView) take(obj api.Object) (api.Object, error) { return obj, nil }

// customCollection is the registry of all of crd's objects, whatever
// their version (the storage version's schema is not needed to remove).
func (s *Server) customCollection(crd *api.CustomResourceDefinition) *registry.Store {
	res := api.Resource{Name: crd.Spec.Names.Plural, Kind: crd.Spec.Names.Kind, Group: crd.Spec.Group,
		Namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped, Custom: true, New: func() api.Object { return &api.CustomObject{} }}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			res.Version = v.Name
		}
	}
	return &registry.Store{Resource: res, Storage: s.store}
}

// removeCustomObjects deletes every object of crd's kind.
func (s *Server) removeCustomObjects(ctx context.Context, crd *api.CustomResourceDefinition) error {
	reg := s.customCollection(crd)
	objs, _, err := reg.List(ctx, "", registry.Filter{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		m := o.GetObjectMeta()
		if err := reg.Storage.Delete(ctx, reg.Key(m.Namespace, m.Name), &api.CustomObject{}, ""); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
	}
	return nil
}
