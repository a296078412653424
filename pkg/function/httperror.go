package function

import (
	"encoding/json"
	"net/http"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// WriteClassed answers err with the status of its class, as the
// apiserver's error middleware does: the function runner's own servers
// (handed-over calls, the gateway) answer in the apiserver's terms.
func WriteClassed(w http.ResponseWriter, err error) {
	code, reason := errdefs.HTTPStatus(err)
	WriteError(w, code, reason, err.Error())
}

// WriteError answers an api.Status with code, reason and msg.
func WriteError(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(api.Status{Error: msg, Reason: reason, Code: code})
}
