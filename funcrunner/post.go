package funcrunner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
	"minik8s/pkg/function"
	"minik8s/pkg/function/call"
)

const (
	// Step records keep this much of an argument or result; the final
	// result is kept whole.
	maxRecordBytes = 16 << 10
	// A step's output is kept as the runtime cuts it (after 1 MiB), and a
	// record keeps at most maxRecordOutputBytes of output over all its
	// steps, so that a chain of 100 chatty steps still fits in etcd.
	maxOutputBytes       = 1 << 20
	maxRecordOutputBytes = 2 << 20
	// maxAnswerBytes bounds a runtime's answer: a result over the limit
	// must still be read to be refused by its size, and the answer is
	// JSON, where a control character of the result or of the output
	// (cut by the runtime after 1 Mi characters) takes six bytes.
	maxAnswerBytes = 6*(call.MaxArgBytes+1) + 6*(1<<20) + 64<<10
)

// errNotServed marks a call the pod refused before running it.
var errNotServed = errors.New("pod did not take the call")

// errPodLost marks a call whose connection to its pod broke before the
// answer (the pod died under it, or closed the connection): it may have
// run, or not; it is run again elsewhere.
var errPodLost = errors.New("the pod was lost before it answered")

// newPodClient returns the HTTP client of calls to function pods: calls
// reuse kept-alive connections, and a pod that is gone fails fast.
func newPodClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     60 * time.Second,
	}}
}

// postStep sends one call to a runtime. An error wrapping errNotServed means
// the call did not run there.
func postStep(ctx context.Context, hc *http.Client, ip string, port int32, f *api.Func, call stepCall) (*function.Result, error) {
	timeout := function.TimeoutSeconds(&f.Spec)
	rctx, cancel := context.WithTimeout(ctx, time.Duration(timeout+10)*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort(ip, strconv.Itoa(int(port))) + function.InvokePath
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, strings.NewReader(call.arg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	for k, v := range call.header {
		req.Header[k] = v
	}
	req.Header.Set(function.TimeoutHeader, strconv.Itoa(timeout))
	if call.send != nil {
		req.Header.Set(function.HeaderSends, function.SendsStream)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, fmt.Errorf("%w: %v", errNotServed, err)
		}
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("the pod at %s did not answer within %ds: %w", ip, timeout+10, errdefs.ErrTimeout)
		}
		return nil, fmt.Errorf("calling the pod at %s: %w: %v", ip, errPodLost, err)
	}
	defer resp.Body.Close()
	if call.send != nil && resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson") {
		return readStream(rctx, hc, ip, port, resp.Body, call.send)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer of the pod at %s: %w: %v", ip, errPodLost, err)
	}
	if len(body) > maxAnswerBytes {
		return nil, fmt.Errorf("the pod at %s answered more than %d bytes", ip, maxAnswerBytes)
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		return nil, fmt.Errorf("%w: %s", errNotServed, bytes.TrimSpace(body))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the pod at %s answered %s: %s", ip, resp.Status, bytes.TrimSpace(body))
	}
	var res function.Result
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("the pod at %s answered something that is not a result: %v", ip, err)
	}
	return &res, nil
}

// podPort is the allocated number of a named container port.
func podPort(p *api.Pod, name string) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		for _, port := range cs.Ports {
			if port.Name == name && port.ContainerPort != 0 {
				return port.ContainerPort
			}
		}
	}
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == name && port.ContainerPort != 0 {
				return port.ContainerPort
			}
		}
	}
	return 0
}
