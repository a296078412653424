// Package errdefs defines the few error classes minik8s uses everywhere.
// Components wrap them with %w; the apiserver maps them to HTTP status codes
// and the client maps status codes back, so errors.Is works end to end.
package errdefs

import (
	"errors"
	"fmt"
	"net/http"
)

var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	ErrInvalid       = errors.New("invalid")
	ErrBadRequest    = errors.New("bad request")
	ErrConflict      = errors.New("conflict")
	ErrUnavailable   = errors.New("unavailable")
	ErrTooLarge      = errors.New("request entity too large")
	// ErrGone: a watch asked for a revision etcd has already compacted.
	ErrGone = errors.New("gone")
	// ErrTimeout: the operation did not finish in the time it was given.
	ErrTimeout = errors.New("timeout")
	// ErrTooManyRequests: the server sheds load; try again later.
	ErrTooManyRequests = errors.New("too many requests")
	// ErrUnauthorized: the request carries no valid credentials.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the requester may not do this.
	ErrForbidden = errors.New("forbidden")
	// ErrUnsupportedMediaType: the body is in an encoding the server does
	// not read (protobuf); clients fall back to JSON.
	ErrUnsupportedMediaType = errors.New("unsupported media type")
)

// FieldError is an Invalid or BadRequest error that names the offending field.
type FieldError struct {
	Class  error
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

func (e *FieldError) Unwrap() error { return e.Class }

// Invalid returns an ErrInvalid naming field and why it is wrong.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Class: ErrInvalid, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// BadRequest returns an ErrBadRequest, optionally naming a field.
func BadRequest(field, format string, args ...any) error {
	return &FieldError{Class: ErrBadRequest, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Cause is one thing wrong in an object, as Kubernetes' Status names it in
// details.causes: Type is its reason word (FieldValueRequired,
// FieldValueInvalid…), Field the path, Message what is wrong.
type Cause struct {
	Type    string
	Field   string
	Message string
}

// InvalidObject is an ErrInvalid about one object naming every cause, as
// Kubernetes answers a write its validation refuses: Message reads
// `Pod "web" is invalid: [spec.containers[0].image: Required value, ...]`.
type InvalidObject struct {
	// Group and Kind of the object ("apps", "Deployment"), and its name.
	Group, Kind, Name string
	Message           string
	Causes            []Cause
}

func (e *InvalidObject) Error() string { return e.Message }
func (e *InvalidObject) Unwrap() error { return ErrInvalid }

// AsInvalidObject returns the InvalidObject err is or wraps, if any.
func AsInvalidObject(err error) (*InvalidObject, bool) {
	var io *InvalidObject
	ok := errors.As(err, &io)
	return io, ok
}

// Field returns the field an error names, if any (an InvalidObject's
// first).
func Field(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	var io *InvalidObject
	if errors.As(err, &io) && len(io.Causes) > 0 {
		return io.Causes[0].Field
	}
	var re *remoteError
	if errors.As(err, &re) {
		return re.field
	}
	return ""
}

var classes = []struct {
	err    error
	status int
	reason string
}{
	{ErrNotFound, http.StatusNotFound, "NotFound"},
	{ErrAlreadyExists, http.StatusConflict, "AlreadyExists"},
	{ErrConflict, http.StatusConflict, "Conflict"},
	{ErrInvalid, http.StatusUnprocessableEntity, "Invalid"},
	{ErrBadRequest, http.StatusBadRequest, "BadRequest"},
	{ErrTooLarge, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge"},
	{ErrGone, http.StatusGone, "Expired"},
	{ErrTimeout, http.StatusGatewayTimeout, "Timeout"},
	{ErrTooManyRequests, http.StatusTooManyRequests, "TooManyRequests"},
	{ErrUnauthorized, http.StatusUnauthorized, "Unauthorized"},
	{ErrForbidden, http.StatusForbidden, "Forbidden"},
	{ErrUnavailable, http.StatusServiceUnavailable, "ServiceUnavailable"},
	{ErrUnsupportedMediaType, http.StatusUnsupportedMediaType, "UnsupportedMediaType"},
}

// HTTPStatus maps an error to its status code and reason word; an error of no
// class is an internal error.
func HTTPStatus(err error) (int, string) {
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.status, c.reason
		}
	}
	return http.StatusInternalServerError, "InternalError"
}

// FromHTTP rebuilds an error of the right class from an error answer.
func FromHTTP(status int, reason, field, msg string) error {
	class := errors.New("internal error")
	matched := false
	for _, c := range classes {
		if c.reason == reason {
			class, matched = c.err, true
			break
		}
	}
	if !matched {
		for _, c := range classes {
			if c.status == status {
				class = c.err
				break
			}
		}
	}
	return &remoteError{class: class, field: field, msg: msg}
}

type remoteError struct {
	class error
	field string
	msg   string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.class }

func IsNotFound(err error) bool      { return errors.Is(err, ErrNotFound) }
func IsAlreadyExists(err error) bool { return errors.Is(err, ErrAlreadyExists) }
func IsConflict(err error) bool      { return errors.Is(err, ErrConflict) }

// IsUnsupportedMediaType: the body was in an encoding the server does not read.
func IsUnsupportedMediaType(err error) bool { return errors.Is(err, ErrUnsupportedMediaType) }
func IsInvalid(err error) bool              { return errors.Is(err, ErrInvalid) }
func IsGone(err error) bool                 { return errors.Is(err, ErrGone) }
func IsTooLarge(err error) bool             { return errors.Is(err, ErrTooLarge) }
func IsUnavailable(err error) bool          { return errors.Is(err, ErrUnavailable) }
func IsUnauthorized(err error) bool         { return errors.Is(err, ErrUnauthorized) }
func IsForbidden(err error) bool            { return errors.Is(err, ErrForbidden) }
func IsTimeout(err error) bool              { return errors.Is(err, ErrTimeout) }
func IsTooManyRequests(err error) bool {
	return errors.Is(err, ErrTooManyRequests)
}
