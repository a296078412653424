package apiserver

import (
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"minik8s/pkg/errdefs"
)

// A body is read as an object only when its Content-Type says it is one,
// as Kubernetes' NegotiateInputSerializer reads it: JSON (also when the
// Content-Type is empty), YAML or protobuf; anything else is 415, so that
// bytes sent as something else (a function's result POSTed as
// application/octet-stream, a form) never become an object. A PATCH takes
// the patch types. The function API's routes (/api/funcs...) read their
// bodies whatever the Content-Type, as the reference scripts post them
// with curl --data.

// objectMediaTypes are the media types an object is read in.
var objectMediaTypes = []string{"application/json", "application/yaml", protobufContentType}

// patchMediaTypes are the patch types served.
var patchMediaTypes = []string{jsonPatchType, mergePatchType, strategicPatchType, applyPatchType}

// mediaTypeError is Kubernetes' 415.
type mediaTypeError struct{ accepted []string }

func (e mediaTypeError) Error() string {
	return "the body of the request was in an unknown format - accepted media types include: " + strings.Join(e.accepted, ", ")
}

func (e mediaTypeError) Unwrap() error { return errdefs.ErrUnsupportedMediaType }

// objectMediaType is the media type of an object body: empty is JSON.
func objectMediaType(r *http.Request) (string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return objectMediaTypes[0], nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && slices.Contains(objectMediaTypes, mt) {
		return mt, nil
	}
	return "", mediaTypeError{objectMediaTypes}
}

// patchMediaType is the patch type of a PATCH, its parameters (";
// charset=") dropped, as Kubernetes reads it.
func patchMediaType(r *http.Request) (string, error) {
	ct := r.Header.Get("Content-Type")
	if i := strings.Index(ct, ";"); i > 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	if slices.Contains(patchMediaTypes, ct) {
		return ct, nil
	}
	return "", mediaTypeError{patchMediaTypes}
}

// bodyMediaType is how a route reads its body: the function API's
// whatever they are (decodeStrict reads YAML by its type, JSON otherwise),
// the others as objectMediaType says.
func bodyMediaType(c *gin.Context) (string, error) {
	if requestOf(c).fn != nil {
		return c.ContentType(), nil
	}
	return objectMediaType(c.Request)
}
