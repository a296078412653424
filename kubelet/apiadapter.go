package kubelet

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"minik8s/kubelet/pod"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
)

// noCARecheck is how long the kubelet believes an apiserver that said it
// has no CA (no secure port) before asking again.
const noCARecheck = time.Minute

// apiAdapter gives pod workers the apiserver calls they need.
type apiAdapter struct {
	c *client.Client
	// caData is the cluster CA the kubelet was given, if any.
	caData []byte

	mu        sync.Mutex
	ca        []byte    // fetched from /cacerts
	noCAUntil time.Time // the apiserver said it has no CA; believed until then
}

func (a *apiAdapter) GetConfigMap(ctx context.Context, ns, name string) (*api.ConfigMap, error) {
	return a.c.ConfigMaps(ns).Get(ctx, name)
}

func (a *apiAdapter) GetSecret(ctx context.Context, ns, name string) (*api.Secret, error) {
	return a.c.Secrets(ns).Get(ctx, name)
}

func (a *apiAdapter) GetClaim(ctx context.Context, ns, name string) (*api.PersistentVolumeClaim, error) {
	return a.c.PersistentVolumeClaims(ns).Get(ctx, name)
}

func (a *apiAdapter) GetVolume(ctx context.Context, name string) (*api.PersistentVolume, error) {
	return a.c.PersistentVolumes().Get(ctx, name)
}

func (a *apiAdapter) GetService(ctx context.Context, ns, name string) (*api.Service, error) {
	return a.c.Services(ns).Get(ctx, name)
}

func (a *apiAdapter) GetServiceAccount(ctx context.Context, ns, name string) (*api.ServiceAccount, error) {
	return a.c.ServiceAccounts(ns).Get(ctx, name)
}

func (a *apiAdapter) CreateToken(ctx context.Context, ns, sa string, req *api.TokenRequest) (*api.TokenRequest, error) {
	return a.c.ServiceAccounts(ns).CreateToken(ctx, sa, req)
}

// ClusterCA is the CA the kubelet was given, else the one the apiserver
// serves at /cacerts (to anyone, on either port), read once.
func (a *apiAdapter) ClusterCA(ctx context.Context) ([]byte, error) {
	if len(a.caData) > 0 {
		return a.caData, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ca != nil {
		return a.ca, nil
	}
	if time.Now().Before(a.noCAUntil) {
		return nil, errdefs.ErrNotFound
	}
	var pem []byte
	err := a.c.Do(ctx, http.MethodGet, "/cacerts", nil, &pem)
	switch {
	case errdefs.IsNotFound(err):
		// Remembered a while, so that the pods starting meanwhile do not
		// each ask again.
		a.noCAUntil = time.Now().Add(noCARecheck)
		return nil, err
	case err != nil:
		return nil, err
	case len(pem) == 0:
		return nil, fmt.Errorf("the apiserver served an empty CA: %w", errdefs.ErrNotFound)
	}
	a.ca = pem
	return pem, nil
}

func (a *apiAdapter) UpdatePodStatus(ctx context.Context, p *api.Pod) error {
	_, err := a.c.Pods(p.Namespace).UpdateStatus(ctx, p)
	return err
}

func (a *apiAdapter) DeletePod(ctx context.Context, ns, name, uid string) error {
	zero := int64(0)
	_, err := a.c.Pods(ns).Delete(ctx, name, client.DeleteOptions{GracePeriodSeconds: &zero, UID: uid})
	return err
}

var _ pod.API = (*apiAdapter)(nil)
