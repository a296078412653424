package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// StatusError is an error answer of the apiserver, as opposed to a failure
// to reach it; tools (mkctl) print the two differently. It unwraps to the
// errdefs class, so errdefs.IsNotFound and friends work on it.
type StatusError struct {
	Code int
	// Reason is the class word: NotFound, AlreadyExists, Invalid, ...
	Reason  string
	Field   string
	Message string
	err     error
}

func (e *StatusError) Error() string { return e.Message }
func (e *StatusError) Unwrap() error { return e.err }

// TransportError is a failure to reach the apiserver at all.
type TransportError struct {
	Server string
	Err    error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("cannot reach the apiserver at %s: %v", e.Server, e.Err)
}

// Unwrap makes it an ErrUnavailable.
func (e *TransportError) Unwrap() error { return errdefs.ErrUnavailable }

// Dynamic is CRUD and watch on any resource of api.Resources, with objects
// made at run time by res.New, for tools that treat every kind alike.
type Dynamic struct {
	c   *Client
	res api.Resource
	ns  string
}

// Resource returns a dynamic client of res in namespace ns; ns == "" on a
// namespaced resource lists and watches all namespaces.
func (c *Client) Resource(res api.Resource, ns string) *Dynamic {
	if !res.Namespaced {
		ns = ""
	}
	return &Dynamic{c: c, res: res, ns: ns}
}

func (d *Dynamic) path(name string) string {
	if name == "" {
		return d.res.Path(d.ns, "")
	}
	return d.res.Path(d.ns, url.PathEscape(name))
}

// do sends in as JSON and decodes the answer into out; an error answer
// comes back as *StatusError, a transport failure as ErrUnavailable.
func (d *Dynamic) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding request: %w", err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.c.base+path, body)
	if err != nil {
		return errdefs.BadRequest("", "building request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &TransportError{Server: d.c.base, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		remote := decodeError(resp)
		_, reason := errdefs.HTTPStatus(remote)
		return &StatusError{Code: resp.StatusCode, Reason: reason, Field: errdefs.Field(remote), Message: remote.Error(), err: remote}
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decoding answer: %w", method, path, err)
	}
	return nil
}

func (d *Dynamic) Get(ctx context.Context, name string) (api.Object, error) {
	out := d.res.New()
	if err := d.do(ctx, http.MethodGet, d.path(name), nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// List returns the matching objects and the version they were read at.
func (d *Dynamic) List(ctx context.Context, opts ListOptions) ([]api.Object, string, error) {
	var list struct {
		api.ListMeta `json:"metadata"`
		Items        []json.RawMessage `json:"items"`
	}
	path := d.path("") + opts.query(false)
	if err := d.do(ctx, http.MethodGet, path, nil, &list); err != nil {
		return nil, "", err
	}
	out := make([]api.Object, 0, len(list.Items))
	for _, raw := range list.Items {
		obj := d.res.New()
		if err := json.Unmarshal(raw, obj); err != nil {
			return nil, "", fmt.Errorf("GET %s: decoding item: %w", path, err)
		}
		out = append(out, obj)
	}
	return out, list.ResourceVersion, nil
}

// Create creates obj in the client's namespace (or obj's, when the client
// has none).
func (d *Dynamic) Create(ctx context.Context, obj api.Object) (api.Object, error) {
	out := d.res.New()
	if err := d.do(ctx, http.MethodPost, d.in(obj).path(""), obj, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Update replaces obj; a resourceVersion on it makes the update conditional.
func (d *Dynamic) Update(ctx context.Context, obj api.Object) (api.Object, error) {
	out := d.res.New()
	if err := d.do(ctx, http.MethodPut, d.in(obj).path(obj.GetObjectMeta().Name), obj, out); err != nil {
		return nil, err
	}
	return out, nil
}

// in is the client for obj's namespace when this one has none.
func (d *Dynamic) in(obj api.Object) *Dynamic {
	if d.res.Namespaced && d.ns == "" {
		ns := obj.GetObjectMeta().Namespace
		if ns == "" {
			ns = api.DefaultNamespace
		}
		return &Dynamic{c: d.c, res: d.res, ns: ns}
	}
	return d
}

// Delete deletes the object (a bound pod is only marked; its kubelet
// removes it) and returns its last state.
func (d *Dynamic) Delete(ctx context.Context, name string, opts DeleteOptions) (api.Object, error) {
	path := d.path(name)
	body := opts.body()
	out := d.res.New()
	if err := d.do(ctx, http.MethodDelete, path, body, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Watch follows the matching objects with the typed client's resuming watch
// (see ResourceClient.Watch) until ctx ends.
func (d *Dynamic) Watch(ctx context.Context, opts ListOptions) (<-chan Event[api.Object], error) {
	w, ok := dynamicWatchers[d.res.Name]
	if !ok {
		return nil, fmt.Errorf("watch of %s is not supported: %w", d.res.Name, errdefs.ErrBadRequest)
	}
	return w(ctx, d, opts), nil
}

type dynamicWatcher func(context.Context, *Dynamic, ListOptions) <-chan Event[api.Object]

// dynamicWatchers has one entry per kind of api.Resources: the watch loop is
// generic over the Go type, which only a table can pick at run time.
var dynamicWatchers = map[string]dynamicWatcher{
	api.NodesResource.Name:         watchAs[api.Node],
	api.PodsResource.Name:          watchAs[api.Pod],
	api.ReplicaSetsResource.Name:   watchAs[api.ReplicaSet],
	api.ServicesResource.Name:      watchAs[api.Service],
	api.EndpointsResource.Name:     watchAs[api.Endpoints],
	api.ConfigMapsResource.Name:    watchAs[api.ConfigMap],
	api.FuncsResource.Name:         watchAs[api.Func],
	api.FuncInstancesResource.Name: watchAs[api.FuncInstance],
	api.LeasesResource.Name:        watchAs[api.Lease],
}

func watchAs[T any, PT Object[T]](ctx context.Context, d *Dynamic, opts ListOptions) <-chan Event[api.Object] {
	typed := &ResourceClient[T, PT]{c: d.c, res: d.res, ns: d.ns}
	in := typed.Watch(ctx, opts)
	out := make(chan Event[api.Object])
	go func() {
		defer close(out)
		for ev := range in {
			select {
			case out <- Event[api.Object]{Type: ev.Type, Object: ev.Object}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
