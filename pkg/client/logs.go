package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// LogOptions choose the container and whether to follow its output.
type LogOptions struct {
	Container string
	Follow    bool
}

// PodLogs streams a container's log through the apiserver (which asks the
// pod's kubelet). With Follow the stream lasts until the container stops or
// ctx ends. The caller closes the reader. An error answer comes back as
// *StatusError, a transport failure as *TransportError.
func (c *Client) PodLogs(ctx context.Context, namespace, pod string, opts LogOptions) (io.ReadCloser, error) {
	if namespace == "" {
		namespace = api.DefaultNamespace
	}
	q := url.Values{}
	if opts.Container != "" {
		q.Set("container", opts.Container)
	}
	if opts.Follow {
		q.Set("follow", "true")
	}
	path := api.PodsResource.Path(namespace, url.PathEscape(pod)) + "/log"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, errdefs.BadRequest("", "building request: %v", err)
	}
	resp, err := c.stream.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("GET %s: %w", path, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &TransportError{Server: c.base, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		defer resp.Body.Close()
		remote := decodeError(resp)
		_, reason := errdefs.HTTPStatus(remote)
		return nil, &StatusError{Code: resp.StatusCode, Reason: reason, Field: errdefs.Field(remote), Message: remote.Error(), err: remote}
	}
	return resp.Body, nil
}
