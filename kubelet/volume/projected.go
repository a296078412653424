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
	var data map[string][]byte
	var err error
	if kind == "configMap" {
		var cm *api.ConfigMap
		if cm, err = src.GetConfigMap(ctx, ns, name); err == nil {
			data = configMapFiles(cm)
		}
	} else {
		var s *api.Secret
		if s, err = src.GetSecret(ctx, ns, name); err == nil {
			data = s.Data
		}
	}
	switch {
	case errdefs.IsNotFound(err) && optional != nil && *optional:
	case err != nil:
		return nil, nil, fmt.Errorf("%s: %s %q: %w", field, kind, name, err)
	}
	m := int32(mode)
	return keyFileSet(data, keySource{field, kind + " " + strconv.Quote(name), items, &m, optional})
}

// projectedToken asks a token of the pod's service account for the
// source's audience and life, bound to the pod, and says when to ask
// again.
func projectedToken(ctx context.Context, pod *api.Pod, field string, s *corev1.ServiceAccountTokenProjection, src TokenRequester) (map[string][]byte, time.Time, error) {
	if err := checkFileName(s.Path); err != nil {
		return nil, time.Time{}, errdefs.Invalid(field+".path", "%q: minik8s writes a volume's files at its top, as plain names", s.Path)
	}
	secs := int64(defaultProjectedTokenSeconds)
	if s.ExpirationSeconds != nil {
		secs = *s.ExpirationSeconds
	}
	req := &api.TokenRequest{Spec: api.TokenRequestSpec{ExpirationSeconds: &secs,
		BoundObjectRef: &api.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}
	if s.Audience != "" {
		req.Spec.Audiences = []string{s.Audience}
	}
	sa := ServiceAccountName(pod)
	asked := time.Now()
	tr, err := src.CreateToken(ctx, pod.Namespace, sa, req)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%s: asking a token of service account %q: %w", field, sa, err)
	}
	expires := tr.Status.ExpirationTimestamp
	if !expires.After(asked) {
		expires = asked.Add(time.Duration(secs) * time.Second)
	}
	return map[string][]byte{s.Path: []byte(tr.Status.Token)}, asked.Add(expires.Sub(asked) * 8 / 10), nil
}
