package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"minik8s/apiserver/customresource"
	"minik8s/apiserver/registry"
	"minik8s/pkg/api"
	"minik8s/pkg/api/validation/upstream"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/labels"
)

// handlers serves the REST paths of one resource.
type handlers struct {
	srv     *Server
	reg     *registry.Store
	maxBody int64
	// view, when set, is the form the routes show objects in.
	view objectView
	// columns, for a custom resource, make its Table.
	columns *customresource.Columns
}

// readBody reads the whole request body, turning an overflow into 413.
func readBody(c *gin.Context, limit int64) ([]byte, error) {
	data, err := io.ReadAll(c.Request.Body)
	if err != nil {
		if isTooLarge(err) {
			return nil, tooLarge(limit)
		}
		return nil, errdefs.BadRequest("", "reading request body: %v", err)
	}
	return data, nil
}

// decodeBody reads a body into out, as its Content-Type says
// (bodyMediaType: JSON, YAML or protobuf, 415 otherwise). An object of
// the routes' kind is read as the request's fieldValidation says
// (fieldvalidation.go); readObject then turns it into its stored form.
func (h *handlers) decodeBody(c *gin.Context, out any) error {
	ctype, err := bodyMediaType(c)
	if err != nil {
		return err
	}
	data, err := readBody(c, h.maxBody)
	if err != nil {
		return err
	}
	// Bodies of another kind than the route's (an access review, a
	// binding, a scale) and the function API's are read strictly.
	obj, ok := out.(api.Object)
	if !ok || h.reg == nil || reflect.TypeOf(out) != reflect.TypeOf(h.newObject()) || requestOf(c).fn != nil {
		return decodeStrict(data, ctype, out)
	}
	if data, err = toJSON(data, ctype); err != nil {
		return err
	}
	mode := fieldValidationOf(c)
	warnings, err := decodeFields(data, obj, h.gvk(), mode)
	if err != nil {
		return err
	}
	warn(c, warnings)
	warnings, err = h.customFields(obj, mode)
	warn(c, warnings)
	return err
}

func decodeStrict(data []byte, contentType string, out any) error {
	data, err := toJSON(data, contentType)
	if err != nil {
		return err
	}
	err = strictJSON(data, out)
	if err != nil && strings.HasPrefix(err.Error(), "json: unknown field ") {
		// encoding/json names the field, not where it is ("spec.functon").
		v := reflect.ValueOf(out).Elem()
		v.Set(reflect.Zero(v.Type()))
		if strict, err2 := sigsjson.UnmarshalStrict(data, out); err2 == nil && len(strict) > 0 {
			if field := strictField(strict[0].Error()); field != "" {
				return errdefs.BadRequest(field, "unknown field %q", field)
			}
		}
	}
	return jsonError(err)
}

// strictJSON decodes one JSON value into out, refusing fields out does
// not have.
func strictJSON(data []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if dec.More() {
		return errdefs.BadRequest("", "malformed JSON: more than one value in the body")
	}
	return nil
}

// toJSON is a body of contentType as JSON.
func toJSON(data []byte, contentType string) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errdefs.BadRequest("", "request body is empty")
	}
	if contentType == protobufContentType {
		j, err := protobufToJSON(data)
		if err != nil {
			return nil, err
		}
		data, contentType = j, "application/json"
	}
	// Binary encodings are refused (clients fall back to JSON); anything
	// else is read as JSON: the function API's routes read whatever
	// `curl -d` sends (the other routes have negotiated the type).
	if strings.Contains(contentType, "protobuf") || strings.Contains(contentType, "cbor") {
		return nil, fmt.Errorf("%w: the body's Content-Type %q is not read here: send application/json or application/yaml", errdefs.ErrUnsupportedMediaType, contentType)
	}
	if strings.Contains(contentType, "yaml") {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, errdefs.BadRequest("", "malformed YAML: %v", err)
		}
		data = j
	}
	return data, nil
}

func jsonError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errdefs.ErrBadRequest) {
		return err
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errdefs.BadRequest("", "malformed JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		return errdefs.BadRequest(typ.Field, "expected %s, got a JSON %s", typ.Type.String(), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return errdefs.BadRequest("", "malformed JSON: unexpected end of input")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return errdefs.BadRequest(field, "unknown field %q", field)
	}
	return errdefs.BadRequest("", "malformed JSON: %v", err)
}

func (h *handlers) ns(c *gin.Context) string {
	if !h.reg.Resource.Namespaced {
		return ""
	}
	return c.Param("ns")
}

func (h *handlers) list(c *gin.Context) {
	opts := requestOf(c).query.list
	if opts == nil {
		opts = &metainternalversion.ListOptions{}
	}
	f, err := registry.FilterOf(opts)
	if err != nil {
		fail(c, err)
		return
	}
	if owner := ownerFilter(c.Request.Context()); owner != "" {
		// funcinstances/own: only the instances the user started.
		f.Fields = append(f.Fields, registry.FieldRequirement{Path: []string{"spec", "user"}, Value: owner})
	}
	if opts.Watch {
		h.watch(c, h.ns(c), f)
		return
	}
	objs, rev, err := h.listObjects(c.Request.Context(), h.ns(c), f, opts)
	if err != nil {
		fail(c, err)
		return
	}
	if wantsTable(c.Request) {
		c.JSON(http.StatusOK, h.table(c.Request.Context(), objs, strconv.FormatInt(rev, 10), true))
		return
	}
	c.JSON(http.StatusOK, h.listBody(objs, rev))
}

// objectList is the wire form of every KindList.
type objectList struct {
	api.TypeMeta `json:",inline"`
	api.ListMeta `json:"metadata"`
	Items        []api.Object `json:"items"`
}

func (h *handlers) listBody(objs []api.Object, rev int64) objectList {
	l := objectList{
		TypeMeta: api.TypeMeta{APIVersion: h.groupVersion(), Kind: h.reg.Resource.Kind + "List"},
		ListMeta: api.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)},
		Items:    make([]api.Object, 0, len(objs)),
	}
	for _, o := range objs {
		l.Items = append(l.Items, h.show(o))
	}
	return l
}

func (h *handlers) create(c *gin.Context) {
	withManager(c)
	obj, err := h.readObject(c)
	if err != nil {
		fail(c, err)
		return
	}
	h.createObject(c, obj)
}

// createObject admits and creates obj in the request's namespace.
func (h *handlers) createObject(c *gin.Context, obj api.Object) {
	// A body of another namespace is refused first, as in Kubernetes.
	err := h.reg.CheckIdentity(obj, h.ns(c), "")
	var reg *registry.Store
	if err == nil {
		reg, err = h.registryFor(c)
	}
	if err == nil {
		err = h.srv.admit(c.Request.Context(), h.ns(c), obj)
	}
	var out api.Object
	if err == nil {
		out, err = reg.Create(c.Request.Context(), h.ns(c), obj)
	}
	if err != nil {
		fail(c, err)
		return
	}
	h.reply(c, http.StatusCreated, out)
}

func (h *handlers) get(c *gin.Context) {
	if err := h.checkGetVersion(c.Request.Context(), requestOf(c).query.get); err != nil {
		fail(c, err)
		return
	}
	out, err := h.reg.Get(c.Request.Context(), h.ns(c), c.Param("name"))
	if inst, ok := out.(*api.FuncInstance); ok && err == nil {
		err = checkOwner(c.Request.Context(), inst)
	}
	if err != nil {
		fail(c, err)
		return
	}
	if wantsTable(c.Request) {
		c.JSON(http.StatusOK, h.table(c.Request.Context(), []api.Object{out}, out.GetObjectMeta().ResourceVersion, true))
		return
	}
	h.reply(c, http.StatusOK, out)
}

func (h *handlers) update(c *gin.Context) {
	withManager(c)
	obj, err := h.readObject(c)
	if err != nil {
		fail(c, err)
		return
	}
	h.updateObject(c, obj)
}

// updateObject admits obj and replaces the request's object with it.
func (h *handlers) updateObject(c *gin.Context, obj api.Object) {
	// A body of another namespace or name is refused first, as in Kubernetes.
	err := h.reg.CheckIdentity(obj, h.ns(c), c.Param("name"))
	var reg *registry.Store
	if err == nil {
		reg, err = h.registryFor(c)
	}
	if err == nil {
		err = h.srv.admit(c.Request.Context(), h.ns(c), obj)
	}
	if err == nil {
		// The runners' role grants update (not patch) on pods for claims.
		err = h.srv.admitRunnerPodUpdate(c.Request.Context(), obj)
	}
	var out api.Object
	if err == nil {
		out, err = reg.Update(c.Request.Context(), h.ns(c), c.Param("name"), obj)
	}
	if err != nil {
		fail(c, err)
		return
	}
	h.reply(c, http.StatusOK, out)
}

func (h *handlers) updateStatus(c *gin.Context) {
	withManager(c)
	obj, err := h.readObject(c)
	if err != nil {
		fail(c, err)
		return
	}
	reg, err := h.registryFor(c)
	var out api.Object
	if err == nil {
		out, err = reg.UpdateStatus(c.Request.Context(), h.ns(c), c.Param("name"), obj)
	}
	if err != nil {
		fail(c, err)
		return
	}
	h.reply(c, http.StatusOK, out)
}

func (h *handlers) delete(c *gin.Context) {
	opts, err := h.deleteOptions(c)
	if err != nil {
		fail(c, err)
		return
	}
	reg, err := h.registryFor(c, opts.DryRun...)
	if err != nil {
		fail(c, err)
		return
	}
	switch opts.PropagationPolicy {
	case registry.PropagationOrphan:
		err = h.orphanDependents(c.Request.Context(), reg, h.ns(c), c.Param("name"))
	case registry.PropagationForeground:
		opts.PropagationPolicy, err = h.foregroundPolicy(c.Request.Context(), reg, h.ns(c), c.Param("name"))
	}
	if err != nil {
		fail(c, err)
		return
	}
	out, err := reg.Delete(c.Request.Context(), h.ns(c), c.Param("name"), opts)
	if err != nil {
		fail(c, err)
		return
	}
	if ns, ok := out.(*api.Namespace); ok && reg == h.reg {
		// Refuse creates in it from now on, before the index's watch sees it.
		h.srv.namespaces.Observe(ns)
	}
	h.reply(c, http.StatusOK, out)
}

func (h *handlers) bind(c *gin.Context) {
	var b api.Binding
	if err := h.decodeBody(c, &b); err != nil {
		fail(c, err)
		return
	}
	name := c.Param("name")
	if err := registry.MatchNamespace(&b.ObjectMeta, h.ns(c)); err != nil {
		fail(c, err)
		return
	}
	if b.Name != "" && b.Name != name {
		fail(c, errdefs.BadRequest("metadata.name", "name in URL does not match name in Binding object"))
		return
	}
	if err := upstream.Invalid(api.Resource{Kind: "Binding"}, name, upstream.Binding(&b)); err != nil {
		fail(c, err)
		return
	}
	_, err := h.reg.Mutate(c.Request.Context(), h.ns(c), name, func(cur api.Object) (api.Object, error) {
		pod := cur.(*api.Pod)
		if b.UID != "" && b.UID != pod.UID {
			return nil, fmt.Errorf("pod %q: uid %s does not match %s: %w", name, b.UID, pod.UID, errdefs.ErrConflict)
		}
		if pod.Spec.NodeName != "" {
			return nil, fmt.Errorf("pod %q is already bound to node %q: %w", name, pod.Spec.NodeName, errdefs.ErrConflict)
		}
		if pod.DeletionTimestamp != nil {
			return nil, fmt.Errorf("pod %q is being deleted: %w", name, errdefs.ErrConflict)
		}
		if len(pod.Spec.SchedulingGates) > 0 {
			return nil, fmt.Errorf("pod %q has one or more scheduling gates: %w", name, errdefs.ErrConflict)
		}
		pod.Spec.NodeName = b.Target.Name
		now := time.Now().UTC()
		setPodCondition(&pod.Status, api.PodCondition{Type: api.PodScheduled, Status: api.ConditionTrue, LastTransitionTime: &now})
		return pod, nil
	})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, api.Status{Code: http.StatusCreated, Reason: "Bound"})
}

func setPodCondition(s *api.PodStatus, cond api.PodCondition) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == cond.Type {
			s.Conditions[i] = cond
			return
		}
	}
	s.Conditions = append(s.Conditions, cond)
}

// scaleOf is the scale subresource of a ReplicaSet, a Deployment or a
// StatefulSet.
func scaleOf(obj api.Object) *api.Scale {
	var replicas *int32
	var selector *api.LabelSelector
	var current int32
	switch o := obj.(type) {
	case *api.ReplicaSet:
		replicas, selector, current = o.Spec.Replicas, o.Spec.Selector, o.Status.Replicas
	case *api.Deployment:
		replicas, selector, current = o.Spec.Replicas, o.Spec.Selector, o.Status.Replicas
	case *api.StatefulSet:
		replicas, selector, current = o.Spec.Replicas, o.Spec.Selector, o.Status.Replicas
	}
	meta := obj.GetObjectMeta()
	sel, _ := labels.FromLabelSelector(selector)
	sc := &api.Scale{
		TypeMeta: api.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: api.ObjectMeta{Name: meta.Name, Namespace: meta.Namespace, UID: meta.UID,
			ResourceVersion: meta.ResourceVersion, CreationTimestamp: meta.CreationTimestamp},
		Status: api.ScaleStatus{Replicas: current, Selector: sel.String()},
	}
	if replicas != nil {
		sc.Spec.Replicas = *replicas
	}
	return sc
}

// replicasOf is where a scalable object keeps its desired count.
func replicasOf(obj api.Object) **int32 {
	switch o := obj.(type) {
	case *api.ReplicaSet:
		return &o.Spec.Replicas
	case *api.Deployment:
		return &o.Spec.Replicas
	case *api.StatefulSet:
		return &o.Spec.Replicas
	}
	return nil
}

func (h *handlers) getScale(c *gin.Context) {
	obj, err := h.reg.Get(c.Request.Context(), h.ns(c), c.Param("name"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, scaleOf(obj))
}

func (h *handlers) updateScale(c *gin.Context) {
	var sc api.Scale
	if err := h.decodeBody(c, &sc); err != nil {
		fail(c, err)
		return
	}
	h.setScale(c, &sc)
}

// checkScale refuses a Scale asking negative replicas or naming another
// object than the request's (built-in or custom, as Kubernetes'
// ValidateScale judges both), filling in the namespace and name it leaves
// out.
func (h *handlers) checkScale(c *gin.Context, sc *api.Scale) error {
	if sc.Spec.Replicas < 0 {
		return errdefs.Invalid("spec.replicas", "%d must not be negative", sc.Spec.Replicas)
	}
	if err := registry.MatchNamespace(&sc.ObjectMeta, h.ns(c)); err != nil {
		return err
	}
	return registry.MatchName(&sc.ObjectMeta, c.Param("name"))
}

// setScale writes a ReplicaSet's replicas from its scale.
func (h *handlers) setScale(c *gin.Context, sc *api.Scale) {
	name := c.Param("name")
	if err := h.checkScale(c, sc); err != nil {
		fail(c, err)
		return
	}
	reg, err := h.registryFor(c)
	if err != nil {
		fail(c, err)
		return
	}
	obj, err := reg.Mutate(c.Request.Context(), h.ns(c), name, func(cur api.Object) (api.Object, error) {
		meta := cur.GetObjectMeta()
		if sc.ResourceVersion != "" && sc.ResourceVersion != meta.ResourceVersion {
			return nil, fmt.Errorf("%s %q: resourceVersion %s is stale: %w", h.reg.Resource.Name, name, sc.ResourceVersion, errdefs.ErrConflict)
		}
		if replicas := replicasOf(cur); *replicas == nil || **replicas != sc.Spec.Replicas {
			n := sc.Spec.Replicas
			*replicas = &n
			meta.Generation++
		}
		return cur, nil
	})
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, scaleOf(obj))
}
