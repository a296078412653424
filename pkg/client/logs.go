package client

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"minik8s/pkg/api"
)

// LogOptions choose the container and whether to follow its output.
type LogOptions struct {
	Container string
	Follow    bool
}

// PodLogs streams a container's log through the apiserver (which asks the
// pod's kubelet). With Follow the stream lasts until the container stops or
// ctx ends. The caller closes the reader.
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
	resp, err := c.send(ctx, c.stream, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
