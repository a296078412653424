package test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/pkg/errdefs"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// secretsScript prints what a pod gets of its Secret volume, its env from
// keys and its service account, then calls the API with the mounted
// token, trusting the mounted CA. It asks again while the answer is 403,
// for a while: an RBAC binding reaches the authorizer shortly after it is
// written.
const secretsScript = `import base64, json, os, ssl, sys, time, urllib.error, urllib.request
vol = "/etc/creds/password"
print("volume:", open(vol).read(), oct(os.stat(vol).st_mode & 0o777), flush=True)
try:
    open("/etc/creds/x", "w")
    print("volume writable", flush=True)
except OSError:
    print("volume read-only", flush=True)
print("env:", os.environ.get("DB_PASSWORD"), os.environ.get("LOG_LEVEL"), os.environ.get("EXTRA_MODE"), flush=True)
pd = "/etc/projected"
vault = open(pd + "/vault-token").read().split(".")[1]
aud = json.loads(base64.urlsafe_b64decode(vault + "=" * (-len(vault) % 4)))["aud"]
print("projected:", open(pd + "/level").read(), open(pd + "/password").read(), open(pd + "/pod").read(), aud, flush=True)
print("service:", os.environ.get("KUBERNETES_SERVICE_HOST", "-"), os.environ.get("KUBERNETES_SERVICE_PORT", "-"), flush=True)
d = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(d + "/token").read()
print("namespace:", open(d + "/namespace").read(), flush=True)
print("token parts:", len(token.split(".")), flush=True)
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
url = sys.argv[1] + "/api/v1/namespaces/default/pods"
req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
deadline = time.time() + float(sys.argv[2])
while True:
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            body = r.read().decode()
            print("status:", r.status, "lists itself:", os.environ["POD_NAME"] in body, flush=True)
            break
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        if e.code != 403 or time.time() > deadline:
            print("status:", e.code, body, flush=True)
            break
    time.sleep(0.5)
`

// TestPodSecretsAndServiceAccountToken: a pod on a node of the secure port
// (whose credentials read only what its pods use) gets a Secret as files and keys of a Secret and a ConfigMap
// as env, and its service account's token with the cluster CA; with the
// token it is the service account to the API: forbidden until a binding
// gives the account the view role.
func TestPodSecretsAndServiceAccountToken(t *testing.T) {
	t.Parallel()
	ctd := containerdtest.StartContainerd(t)
	ctd.ImportPythonRuntime(t)
	s := framework.StartSecureAPIServer(t, "")
	framework.SecureKubelet(t, s, ctd, "secrets-node", "127.0.0.74")
	ctx := context.Background()
	c := s.Client

	// No controller runs here to make the default service account.
	sa := &api.ServiceAccount{ObjectMeta: api.ObjectMeta{Name: api.DefaultServiceAccount, Namespace: "default"}}
	if _, err := c.ServiceAccounts("default").Create(ctx, sa); err != nil && !errdefs.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	secret := &api.Secret{ObjectMeta: api.ObjectMeta{Name: "db", Namespace: "default"}, StringData: map[string]string{"password": "s3cret"}}
	if _, err := c.Secrets("default").Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]map[string]string{"settings": {"level": "debug"}, "extra": {"MODE": "on"}} {
		cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Data: data}
		if _, err := c.ConfigMaps("default").Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	service := "service: - -"
	if svc, err := c.Services("default").Get(ctx, "kubernetes"); err == nil {
		service = fmt.Sprintf("service: %s 443", svc.Spec.ClusterIP)
	}

	out := runSecretsPod(t, c, "secrets-1", s.SecureURL, 0)
	for _, want := range []string{
		"volume: s3cret 0o400", "volume read-only", "env: s3cret debug on", "projected: debug s3cret secrets-1 ['vault']", service, "namespace: default", "token parts: 3",
		"status: 403", "system:serviceaccount:default:default",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first pod's log lacks %q:\n%s", want, out)
		}
	}

	rb := &api.RoleBinding{ObjectMeta: api.ObjectMeta{Name: "default-view", Namespace: "default"},
		Subjects: []api.Subject{{Kind: api.ServiceAccountKind, Name: api.DefaultServiceAccount, Namespace: "default"}},
		RoleRef:  api.RoleRef{APIGroup: api.RBACGroup, Kind: api.ClusterRoleKind, Name: "view"}}
	if _, err := c.RoleBindings("default").Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	out = runSecretsPod(t, c, "secrets-2", s.SecureURL, 20)
	if !strings.Contains(out, "status: 200 lists itself: True") {
		t.Errorf("second pod, bound to view, did not list the pods:\n%s", out)
	}
}

// runSecretsPod runs secretsScript to its end and returns its log;
// retry403 is how many seconds it asks again while forbidden.
func runSecretsPod(t *testing.T, c *client.Client, name, secureURL string, retry403 int) string {
	t.Helper()
	ctx := context.Background()
	p := pythonPod(name, "secrets-node", secretsScript)
	p.Spec.RestartPolicy = api.RestartPolicyNever
	ctr := &p.Spec.Containers[0]
	ctr.Args = []string{secureURL, fmt.Sprint(retry403)}
	p.Spec.Volumes = []api.Volume{{Name: "creds", Secret: &api.SecretVolumeSource{SecretName: "db", DefaultMode: ptrTo(int32(0o400))}}}
	// One projected volume: a ConfigMap's key, a Secret's, the pod's name
	// and a token of its service account for another audience.
	vault := corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "vault-token", ExpirationSeconds: ptrTo(int64(600))}
	p.Spec.Volumes = append(p.Spec.Volumes, api.Volume{Name: "all", Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "pod", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		{ServiceAccountToken: &vault}}}})
	ctr.VolumeMounts = []api.VolumeMount{{Name: "creds", MountPath: "/etc/creds"}, {Name: "all", MountPath: "/etc/projected"}}
	ctr.Env = []api.EnvVar{
		{Name: "DB_PASSWORD", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.KeySelector{Name: "db", Key: "password"}}},
		{Name: "LOG_LEVEL", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: &api.KeySelector{Name: "settings", Key: "level"}}},
	}
	// A ConfigMap only envFrom names: the node's credentials read it too.
	ctr.EnvFrom = []corev1.EnvFromSource{{Prefix: "EXTRA_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}}}}
	if _, err := c.Pods("default").Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	end := waitPod(t, c, name, 2*time.Minute, "finished", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
	})
	r, err := c.PodLogs(ctx, "default", name, client.LogOptions{})
	if err != nil {
		t.Fatalf("logs of %s: %v", name, err)
	}
	defer r.Close()
	data, _ := io.ReadAll(r)
	if end.Status.Phase != api.PodSucceeded {
		t.Fatalf("pod %s: %s\n%s", name, statusString(end), data)
	}
	return string(data)
}

func ptrTo[T any](v T) *T { return &v }
