package rbac

import "context"

// The user a request comes from travels in its context, as Kubernetes'
// endpoints/request WithUser and UserFrom carry it: the apiserver's
// authenticator puts it there, and whatever judges or records the
// request below it (admission, the function API) reads it there.

type userKey struct{}

// AnonymousUser is who a request without credentials comes from.
var AnonymousUser = User{Name: Anonymous, Groups: []string{AllUnauthenticated}}

// WithUser is ctx carrying user u.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom is the user ctx carries, if any.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// UserOf is the user ctx carries, anonymous if none.
func UserOf(ctx context.Context) User {
	if u, ok := UserFrom(ctx); ok {
		return u
	}
	return AnonymousUser
}
