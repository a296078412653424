package volume

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/errdefs"
)

// TokenRequester asks the apiserver for a token of a service account.
type TokenRequester interface {
	CreateToken(ctx context.Context, namespace, serviceAccount string, req *api.TokenRequest) (*api.TokenRequest, error)
}

// defaultProjectedTokenSeconds is a projected token's life unless its
// source says otherwise, as in Kubernetes.
const defaultProjectedTokenSeconds = 3600

// Projected writes volume i of the pod, a projected one, under the pod's
// volumes dir: every source's files in one directory, swapped in at once,
// as Kubernetes' projected volumes. A service account token source is a
// token of the pod's service account for the source's audience, bound to
// the pod; the volume's RefreshAt is then when 80% of the shortest-lived
// token's life has passed, and the kubelet writes it again (the files
// change under the running containers, as Kubernetes' do).
func Projected(ctx context.Context, pod *api.Pod, podDir string, i int, src Getter, allocatable api.ResourceList) (Volume, error) {
	v := pod.Spec.Volumes[i]
	field := fmt.Sprintf("spec.volumes[%d].projected", i)
	p := v.Projected
	mode := os.FileMode(corev1.ProjectedVolumeSourceDefaultMode)
	if p.DefaultMode != nil {
		m, err := fileMode(p.DefaultMode, field+".defaultMode")
		if err != nil {
			return Volume{}, err
		}
		mode = m
	}
	files, modes := map[string][]byte{}, map[string]os.FileMode{}
	var refreshAt time.Time
	for j, s := range p.Sources {
		at := fmt.Sprintf("%s.sources[%d]", field, j)
		var f map[string][]byte
		var m map[string]os.FileMode
		var err error
		switch {
		case s.ConfigMap != nil:
			f, m, err = projectedKeys(ctx, pod.Namespace, at+".configMap", "configMap", s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, mode, src)
		case s.Secret != nil:
			f, m, err = projectedKeys(ctx, pod.Namespace, at+".secret", "secret", s.Secret.Name, s.Secret.Items, s.Secret.Optional, mode, src)
		case s.DownwardAPI != nil:
			f, m, err = downwardFiles(pod, s.DownwardAPI.Items, mode, at+".downwardAPI", allocatable)
		case s.ServiceAccountToken != nil:
			var at2 time.Time
			f, at2, err = projectedToken(ctx, pod, at+".serviceAccountToken", s.ServiceAccountToken, src)
			m = map[string]os.FileMode{s.ServiceAccountToken.Path: mode}
			if refreshAt.IsZero() || at2.Before(refreshAt) {
				refreshAt = at2
			}
		default:
			err = errdefs.Invalid(at, "names no source minik8s projects (configMap, secret, downwardAPI, serviceAccountToken)")
		}
		if err != nil {
			return Volume{}, err
		}
		for name, data := range f {
			if _, ok := files[name]; ok {
				return Volume{}, errdefs.Invalid(at, "path %q is projected twice", name)
			}
			files[name], modes[name] = data, m[name]
		}
	}
	dir := filepath.Join(Dir(podDir), "projected", v.Name)
	if err := writeFiles(dir, files, func(name string) os.FileMode { return modes[name] }); err != nil {
		return Volume{}, fmt.Errorf("%s: %w", field, err)
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		if err := SetGroup(dir, *sc.FSGroup, true); err != nil {
			return Volume{}, fmt.Errorf("%s: giving the volume to fsGroup %d: %w", field, *sc.FSGroup, err)
		}
	}
	return Volume{HostPath: dir, ReadOnly: true, RefreshAt: refreshAt}, nil
}

// projectedKeys are a ConfigMap's or Secret's keys as a projected source
// names them; a missing object of an optional source gives none.
func projectedKeys(ctx context.Context, ns, field, kind, name string, items []corev1.KeyToPath, optional *bool, mode os.FileMode,
	src Getter) (map[string][]byte, map[string]os.FileMode, error) {
	data, err := objectData(ctx, ns, kind, name, field, optional, src, src)
	if err != nil {
		return nil, nil, err
	}
	m := int32(mode)
	return keyFileSet(data, keySource{field, kind + " " + strconv.Quote(name), items, &m, optional})
}

// projectedToken asks a token of the pod's service account for the
// source's audience and life, bound to the pod, and says when to ask
// again.
func projectedToken(ctx context.Context, pod *api.Pod, field string, s *corev1.ServiceAccountTokenProjection, src TokenRequester) (map[string][]byte, time.Time, error) {
	if err := checkPath(s.Path); err != nil {
		return nil, time.Time{}, errdefs.Invalid(field+".path", "%q must be a relative path without '..'", s.Path)
	}
	secs := int64(defaultProjectedTokenSeconds)
	if s.ExpirationSeconds != nil {
		secs = *s.ExpirationSeconds
	}
	var audiences []string
	if s.Audience != "" {
		audiences = []string{s.Audience}
	}
	token, refreshAt, err := boundToken(ctx, pod, secs, audiences, src)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%s: asking a token of service account %q: %w", field, ServiceAccountName(pod), err)
	}
	return map[string][]byte{s.Path: []byte(token)}, refreshAt, nil
}
