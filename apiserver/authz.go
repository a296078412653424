package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"
	log "github.com/sirupsen/logrus"

	"minik8s/apiserver/auth"
	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/rbac"
)

// noEscalation keeps RBAC from being a way up for the request's user
// (auth.RBAC.NoEscalation), as this authorizer judges it.
func (s *Server) noEscalation(ctx context.Context, ns string, obj api.Object) error {
	p := auth.RBAC{Policy: s.authz.Policy, Allows: s.authz.Allows, Roles: registryObjects(s.registries)}
	return p.NoEscalation(ctx, rbac.UserOf(ctx), ns, obj)
}

// ownOnlyKey marks a request allowed only on the function instances its
// user started (funcinstances/own).
type ownOnlyKey struct{}

// ownerFilter is the user whose instances alone the request may see, or "".
func ownerFilter(ctx context.Context) string {
	if v, _ := ctx.Value(ownOnlyKey{}).(bool); v {
		return rbac.UserOf(ctx).Name
	}
	return ""
}

// authorize lets a request through when the policy allows what
// readRequest read it to do, and answers 403 naming the user, verb and
// resource otherwise. A path the parser does not know is 404 here, before
// any handler; bad options are 400 or 422 once the request is allowed.
// Requests on function instances that only funcinstances/own allows go on
// marked, so that the handlers show the user its own instances alone.
func (s *Server) authorize() gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.FullPath() == "" {
			c.Next() // no route: only the router's 404 or 405 follows
			return
		}
		req := requestOf(c)
		if req.notFound != nil {
			fail(c, req.notFound)
			return
		}
		if req.fn != nil {
			// A template's body names the namespace it is written to.
			if err := s.funcs.resolveTemplate(c, req); err != nil {
				fail(c, err)
				return
			}
			// An instance id alone names its namespace.
			if err := s.resolveInstance(c, req); err != nil {
				fail(c, err)
				return
			}
		}
		ctx := c.Request.Context()
		attrs := req.attrs
		attrs.User = rbac.UserOf(ctx)
		if s.authz.Allows(attrs) || s.nodeAuthz.Authorizes(c.Request, attrs) {
			if err := s.restrictNode(ctx, attrs); err != nil {
				fail(c, err)
				return
			}
			allowed(c, req)
			return
		}
		if s.allowsOwn(attrs) {
			c.Request = c.Request.WithContext(context.WithValue(ctx, ownOnlyKey{}, true))
			allowed(c, req)
			return
		}
		log.WithFields(log.Fields{"user": attrs.User.Name, "verb": attrs.Verb, "resource": attrs.Resource,
			"subresource": attrs.Subresource, "namespace": attrs.Namespace, "name": attrs.Name, "path": attrs.Path}).
			Debug("request forbidden")
		fail(c, forbidden(attrs))
	}
}

// allowsOwn says whether a, on function instances, is allowed on the
// instances its user started only (funcinstances/own).
func (s *Server) allowsOwn(a rbac.Attributes) bool {
	if !a.ResourceRequest || a.Resource != api.FuncInstancesResource.Name || a.Subresource != "" {
		return false
	}
	a.Subresource = instanceOwn
	return s.authz.Allows(a)
}

// authorizeAlso checks that the request's user may also verb what the
// request names: a server-side apply that creates its object needs
// create beside patch, as in Kubernetes.
func (s *Server) authorizeAlso(c *gin.Context, verb string) error {
	ctx := c.Request.Context()
	attrs := requestOf(c).attrs
	attrs.User = rbac.UserOf(ctx)
	attrs.Verb = verb
	if s.authz.Allows(attrs) || s.nodeAuthz.Authorizes(c.Request, attrs) {
		return s.restrictNode(ctx, attrs)
	}
	return forbidden(attrs)
}

// allowed goes on with an authorized request, unless reading it found bad
// input.
func allowed(c *gin.Context, req *request) {
	if req.err != nil {
		fail(c, req.err)
		return
	}
	c.Next()
}

// forbidden is Kubernetes' 403 message, e.g. `pods "web" is forbidden:
// User "alice" cannot delete resource "pods" in API group "" in the
// namespace "default"`.
func forbidden(a rbac.Attributes) error {
	what := a.Resource
	if a.Subresource != "" {
		what += "/" + a.Subresource
	}
	if a.Name != "" {
		what += fmt.Sprintf(" %q", a.Name)
	}
	if !a.ResourceRequest {
		what = "path " + a.Path
	}
	return fmt.Errorf("%s is forbidden: %s: %w", what, rbac.Forbidden(a), errdefs.ErrForbidden)
}

// notOwner refuses a function instance another user started.
func notOwner(ctx context.Context, id string) error {
	return fmt.Errorf("funcinstances %q is forbidden: User %q may read and step only the function instances it started: %w",
		id, rbac.UserOf(ctx).Name, errdefs.ErrForbidden)
}

// checkOwner refuses inst unless the request may see it.
func checkOwner(ctx context.Context, inst *api.FuncInstance) error {
	if owner := ownerFilter(ctx); owner != "" && inst.Spec.User != owner {
		return notOwner(ctx, inst.Name)
	}
	return nil
}

// accessReview serves SelfSubjectAccessReview (may I?) and
// SubjectAccessReview (may they?), as kubectl auth can-i asks.
func (s *Server) accessReview(self bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		// A SelfSubjectAccessReview's spec is a SubjectAccessReview's
		// without the user.
		var req api.SubjectAccessReview
		h := &handlers{srv: s, maxBody: s.cfg.MaxBodyBytes}
		if err := h.decodeBody(c, &req); err != nil {
			fail(c, err)
			return
		}
		u := rbac.User{Name: req.Spec.User, Groups: req.Spec.Groups}
		switch {
		case self:
			u = rbac.UserOf(c.Request.Context())
		case u.Name == "" && len(u.Groups) == 0:
			fail(c, errdefs.Invalid("spec.user", "at least one of user or groups must be specified"))
			return
		}
		attrs, err := rbac.ReviewAttributes(u, req.Spec.ResourceAttributes, req.Spec.NonResourceAttributes)
		if err != nil {
			fail(c, err)
			return
		}
		req.Status = s.review(attrs)
		if self {
			c.JSON(http.StatusCreated, api.SelfSubjectAccessReview{
				TypeMeta: api.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"}, ObjectMeta: req.ObjectMeta,
				Spec:   api.SelfSubjectAccessReviewSpec{ResourceAttributes: req.Spec.ResourceAttributes, NonResourceAttributes: req.Spec.NonResourceAttributes},
				Status: req.Status})
			return
		}
		req.APIVersion, req.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
		c.JSON(http.StatusCreated, req)
	}
}

func (s *Server) review(attrs rbac.Attributes) api.SubjectAccessReviewStatus {
	if slices.Contains(attrs.User.Groups, rbac.Masters) {
		return api.SubjectAccessReviewStatus{Allowed: true, Reason: "member of " + rbac.Masters}
	}
	ok, reason := rbac.Authorize(s.authz.Policy(), attrs)
	return api.SubjectAccessReviewStatus{Allowed: ok, Reason: reason}
}
