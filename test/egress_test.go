package test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// TestCallbackCannotReachThePlatform is issue 25's hole 1 played as
// written, on the default settings of the apiserver and the runner: a
// function-invoker on the secure port calls a real function with a
// ConfigMap as the argument and X-Callback-Url naming the local port's
// configmaps route of a namespace it may not touch. Named by address (in
// any spelling) the callback is 400 at once; named by a name that
// resolves there, the call runs and the runner refuses the callback at
// the dial, recorded on the instance. No ConfigMap is ever created.
func TestCallbackCannotReachThePlatform(t *testing.T) {
	s := framework.StartSecureAPIServer(t, secureTokens)
	framework.StartFuncRunner(t, s)
	ctx := context.Background()
	code := "def run(arg):\n    return arg\n"
	funcTemplate(t, s, "relay", code, "RETURN", "RETURN", nil)
	publish(t, s, "relay", runtime(t, code))
	if _, err := s.Client.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	rbacObject(t, s, "/namespaces/default/rolebindings", binding("RoleBinding", "default", "invokers", "ClusterRole", "function-invoker",
		userSubject("invoker-a")))
	a := newCaller(t, s, "invoker-a-token")
	waitAllowed(t, a, "GET", "/api/funcs/template")

	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"pwned","namespace":"other"},"data":{"by":"invoker-a"}}`
	route := "/api/v1/namespaces/other/configmaps"
	a.expect("POST", route, cm, http.StatusForbidden, `User \"invoker-a\" cannot create resource \"configmaps\"`)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	_, securePort, _ := net.SplitHostPort(strings.TrimPrefix(s.SecureURL, "https://"))

	call := func(t *testing.T, url string) (int, string, []byte) {
		t.Helper()
		return invokeCallbackAs(t, a.hc, a.base, a.token, "relay", cm, url)
	}

	t.Run("named by address: 400 at the call", func(t *testing.T) {
		for _, url := range []string{
			s.URL + route, // exactly as the issue has it
			"http://127.1:" + port + route,
			"http://2130706433:" + port + route,
			"http://0x7f.0.0.1:" + port + route,
			"http://0177.0.0.1:" + port + route,
			"http://[::ffff:127.0.0.1]:" + port + route,
			"http://[::1]:" + port + route,
			"http://0.0.0.0:" + port + route,
			s.SecureURL + route,
			"http://169.254.169.254/latest/meta-data/",
			"http://127.0.0.2:" + port + "/", // a receiver on loopback needs the operator's allowance
			"http://admin@example.com/",
		} {
			code, _, data := call(t, url)
			if code != http.StatusBadRequest || !strings.Contains(string(data), "X-Callback-Url") {
				t.Errorf("X-Callback-Url %s: %d %s, want 400 naming X-Callback-Url", url, code, data)
			}
		}
	})

	t.Run("named by a name: refused at the dial", func(t *testing.T) {
		for _, url := range []string{
			"http://localhost:" + port + route,
			"https://localhost:" + securePort + route,
		} {
			code, id, data := call(t, url)
			if code != http.StatusAccepted || id == "" {
				t.Fatalf("X-Callback-Url %s: %d %s, want 202 (a name is judged at the dial)", url, code, data)
			}
			if v := result(t, s, id, 30*time.Second); v.Status != api.InstanceSucceeded || string(v.Result) != cm {
				t.Fatalf("instance %s: %+v, want Succeeded with the ConfigMap as its result", id, v)
			}
			st := callbackStatus(t, s, id)
			if st.Delivered || st.Attempts != 1 || st.StatusCode != 0 ||
				!strings.Contains(st.Error, "callback refused") || !strings.Contains(st.Error, "loopback") {
				t.Errorf("X-Callback-Url %s: status.callback %+v, want refused at the first attempt, not retried", url, st)
			}
		}
	})

	cms, _, err := s.Client.ConfigMaps("other").List(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms) != 0 {
		t.Fatalf("namespace other holds %d ConfigMaps (%s): a callback reached the local port", len(cms), cms[0].Name)
	}
}
