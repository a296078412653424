package function

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// How a call's result answers over HTTP (FuncInstanceStatus.ResultType).
const (
	// ResultJSON: a value JSON encodes (a dict, a list, a number), sent as
	// application/json.
	ResultJSON = "json"
	// ResultHTTP: {"statusCode": N, "headers": {...}, "body": ...} that a
	// run(event, context) returned, the answer it describes, as AWS
	// Lambda's proxy integration and OpenFaaS's templates have it.
	ResultHTTP = "http"
)

// HTTPAnswer is a result of type ResultHTTP.
type HTTPAnswer struct {
	StatusCode        int                 `json:"statusCode"`
	Headers           map[string]string   `json:"headers,omitempty"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders,omitempty"`
	// Body is a string (the body as is), or any other JSON value, sent
	// as JSON.
	Body            json.RawMessage `json:"body,omitempty"`
	IsBase64Encoded bool            `json:"isBase64Encoded,omitempty"`
}

// hopHeaders are the connection's own: a function does not set them.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true}

// ParseHTTPAnswer reads a result of type ResultHTTP: its status, headers
// and body, or what is wrong with it.
func ParseHTTPAnswer(result string) (int, http.Header, []byte, error) {
	var a HTTPAnswer
	if err := json.Unmarshal([]byte(result), &a); err != nil {
		return 0, nil, nil, fmt.Errorf("the function's HTTP answer does not decode: %v", err)
	}
	if a.StatusCode < 100 || a.StatusCode > 599 {
		return 0, nil, nil, fmt.Errorf("the function's HTTP answer has statusCode %d, not between 100 and 599", a.StatusCode)
	}
	h := http.Header{}
	add := func(k, v string) error {
		if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			return fmt.Errorf("the function's HTTP answer has an invalid header %q", k)
		}
		if !hopHeaders[http.CanonicalHeaderKey(k)] {
			h.Add(k, v)
		}
		return nil
	}
	for k, v := range a.Headers {
		if err := add(k, v); err != nil {
			return 0, nil, nil, err
		}
	}
	for k, vs := range a.MultiValueHeaders {
		for _, v := range vs {
			if err := add(k, v); err != nil {
				return 0, nil, nil, err
			}
		}
	}
	var body []byte
	var s string
	switch {
	case len(a.Body) == 0 || string(a.Body) == "null":
	case json.Unmarshal(a.Body, &s) == nil:
		body = []byte(s)
		if a.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return 0, nil, nil, fmt.Errorf("the function's HTTP answer has isBase64Encoded and a body that is not base64: %v", err)
			}
			body = b
		}
	default:
		body = a.Body
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json")
		}
	}
	return a.StatusCode, h, body, nil
}

// WriteResult answers with a succeeded call's result: the HTTP answer it
// describes (ResultHTTP; 502 naming the mistake when it is not a valid
// one), JSON, or text. foreign marks an origin that is not the
// function's own (the apiserver): the answer may then set no cookie and
// is sandboxed, so that a function's page can act for nobody there.
func WriteResult(w http.ResponseWriter, result, typ string, foreign bool) {
	switch typ {
	case ResultHTTP:
		code, h, body, err := ParseHTTPAnswer(result)
		if err != nil {
			WriteError(w, http.StatusBadGateway, "BadFunctionAnswer", err.Error())
			return
		}
		for k, vs := range h {
			if foreign && (k == "Set-Cookie" || strings.HasPrefix(k, "Access-Control-")) {
				continue
			}
			w.Header()[k] = vs
		}
		if foreign {
			w.Header().Set("Content-Security-Policy", "sandbox")
			w.Header().Set("X-Content-Type-Options", "nosniff")
		}
		w.WriteHeader(code)
		_, _ = w.Write(body)
		return
	case ResultJSON:
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, result)
}
