package volume

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// ServiceAccountMountPath is where every container of a pod finds its
// service account's token, the cluster CA and its namespace, as in
// Kubernetes.
const ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// TokenTTL is the lifetime the kubelet asks for a pod's token (Kubernetes'
// kubelet asks an hour too); the token is renewed at 80% of it.
const TokenTTL = time.Hour

// TokenSource is what the service account volume needs of the apiserver.
type TokenSource interface {
	// ClusterCA is the cluster CA (PEM). ErrNotFound: the apiserver serves
	// no secure port, so it has no CA and signs no tokens.
	ClusterCA(ctx context.Context) ([]byte, error)
	// CreateToken asks a token of a service account (TokenRequest).
	CreateToken(ctx context.Context, namespace, serviceAccount string, req *api.TokenRequest) (*api.TokenRequest, error)
	GetServiceAccount(ctx context.Context, namespace, name string) (*api.ServiceAccount, error)
}

// ErrNoToken: the pod is to run without a token, as the apiserver cannot
// give one to its default service account (it signs none, or the account
// does not exist because no controller made it). Failing such pods would
// fail every pod of a cluster without a secure port.
var ErrNoToken = errors.New("no service account token")

// Token is a written service account volume.
type Token struct {
	Dir string
	// RefreshAt is when 80% of the token's life has passed.
	RefreshAt time.Time
}

// AutomountToken tells whether the pod gets its service account's token.
func AutomountToken(p *api.Pod) bool {
	return p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken
}

// ServiceAccountName is the pod's service account ("default" unless named).
func ServiceAccountName(p *api.Pod) string {
	if p.Spec.ServiceAccountName == "" {
		return api.DefaultServiceAccount
	}
	return p.Spec.ServiceAccountName
}

// ServiceAccountToken (re)writes the pod's service account volume under
// its volumes dir with a fresh token bound to the pod: the files token,
// ca.crt and namespace, swapped in at once. An error wrapping ErrNoToken
// asks the pod to run without; another fails its containers' start.
func ServiceAccountToken(ctx context.Context, p *api.Pod, podDir string, src TokenSource) (*Token, error) {
	sa := ServiceAccountName(p)
	isDefault := sa == api.DefaultServiceAccount
	ca, err := src.ClusterCA(ctx)
	if errdefs.IsNotFound(err) {
		return nil, noSecurePort(ctx, p, sa, src)
	}
	if err != nil {
		return nil, fmt.Errorf("service account token: reading the cluster CA: %w", err)
	}
	token, refreshAt, err := boundToken(ctx, p, int64(TokenTTL/time.Second), nil, src)
	switch {
	case err == nil:
	case transient(err):
		return nil, fmt.Errorf("asking a token of service account %q: %w", sa, err)
	case isDefault:
		return nil, fmt.Errorf("asking a token of service account %q: %v: %w", sa, err, ErrNoToken)
	case errdefs.IsNotFound(err):
		return nil, fmt.Errorf("service account %q of pod %s/%s not found: %w", sa, p.Namespace, p.Name, err)
	default:
		return nil, fmt.Errorf("asking a token of service account %q: %w", sa, err)
	}
	dir := filepath.Join(Dir(podDir), "kube-api-access")
	files := map[string][]byte{"token": []byte(token), "ca.crt": ca, "namespace": []byte(p.Namespace)}
	if err := WriteFiles(dir, files, 0o644); err != nil {
		return nil, fmt.Errorf("writing the service account token: %w", err)
	}
	return &Token{Dir: dir, RefreshAt: refreshAt}, nil
}

// boundToken asks a token of the pod's service account, bound to the pod,
// for secs and the audiences (the apiserver's own when none), and says
// when to ask again: at 80% of its life.
func boundToken(ctx context.Context, p *api.Pod, secs int64, audiences []string, src TokenRequester) (string, time.Time, error) {
	req := &api.TokenRequest{Spec: api.TokenRequestSpec{ExpirationSeconds: &secs, Audiences: audiences,
		BoundObjectRef: &api.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}}}
	asked := time.Now()
	tr, err := src.CreateToken(ctx, p.Namespace, ServiceAccountName(p), req)
	if err != nil {
		return "", time.Time{}, err
	}
	expires := tr.Status.ExpirationTimestamp
	if !expires.After(asked) {
		expires = asked.Add(time.Duration(secs) * time.Second)
	}
	return tr.Status.Token, asked.Add(expires.Sub(asked) * 8 / 10), nil
}

// noSecurePort: an apiserver without a secure port signs no tokens, so
// pods run without; but a service account the pod names must exist.
func noSecurePort(ctx context.Context, p *api.Pod, sa string, src TokenSource) error {
	if sa != api.DefaultServiceAccount {
		if _, err := src.GetServiceAccount(ctx, p.Namespace, sa); err != nil {
			if errdefs.IsNotFound(err) {
				return fmt.Errorf("service account %q of pod %s/%s not found: %w", sa, p.Namespace, p.Name, err)
			}
			return fmt.Errorf("reading service account %q: %w", sa, err)
		}
	}
	return fmt.Errorf("the apiserver serves no secure port, so it signs no tokens: %w", ErrNoToken)
}

// transient errors are worth a retry rather than a verdict.
func transient(err error) bool {
	return errdefs.IsUnavailable(err) || errdefs.IsTooManyRequests(err) || errors.Is(err, errdefs.ErrTimeout) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
