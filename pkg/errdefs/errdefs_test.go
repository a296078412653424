package errdefs

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestHTTPRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		reason string
	}{
		{fmt.Errorf("pod x: %w", ErrNotFound), http.StatusNotFound, "NotFound"},
		{fmt.Errorf("x: %w", ErrAlreadyExists), http.StatusConflict, "AlreadyExists"},
		{fmt.Errorf("x: %w", ErrConflict), http.StatusConflict, "Conflict"},
		{Invalid("spec.replicas", "%d is negative", -1), http.StatusUnprocessableEntity, "Invalid"},
		{BadRequest("", "malformed"), http.StatusBadRequest, "BadRequest"},
		{fmt.Errorf("x: %w", ErrTooLarge), http.StatusRequestEntityTooLarge, "RequestEntityTooLarge"},
		{fmt.Errorf("x: %w", ErrGone), http.StatusGone, "Expired"},
		{fmt.Errorf("x: %w", ErrUnavailable), http.StatusServiceUnavailable, "ServiceUnavailable"},
		{errors.New("boom"), http.StatusInternalServerError, "InternalError"},
	} {
		code, reason := HTTPStatus(tc.err)
		if code != tc.code || reason != tc.reason {
			t.Errorf("%v: %d %s, want %d %s", tc.err, code, reason, tc.code, tc.reason)
		}
		back := FromHTTP(code, reason, Field(tc.err), tc.err.Error())
		code2, reason2 := HTTPStatus(back)
		if code2 != code || reason2 != reason || back.Error() != tc.err.Error() || Field(back) != Field(tc.err) {
			t.Errorf("round trip of %v gave %v (%d %s field %q)", tc.err, back, code2, reason2, Field(back))
		}
	}
	if Field(Invalid("spec.x", "bad")) != "spec.x" || Invalid("spec.x", "bad").Error() != "spec.x: bad" {
		t.Error("field error text")
	}
	// An unknown reason falls back to the status code's class.
	if !IsNotFound(FromHTTP(404, "", "", "gone")) {
		t.Error("404 without reason is not NotFound")
	}
}
