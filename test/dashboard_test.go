package test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/containerdtest"
	"minik8s/test/framework"
)

// pageKeys lists the values of the data-ATTR attributes on the page: the
// dashboard marks each pod, function, node… it draws with its key.
func pageKeys(t *testing.T, b *framework.Browser, attr string) []string {
	t.Helper()
	keys := framework.Eval[[]string](t, b, fmt.Sprintf(`[...document.querySelectorAll('[data-%s]')].map(e => e.dataset.%s)`, attr, attr))
	slices.Sort(keys)
	return keys
}

// pageText is the text of the first element sel finds ("" when none).
func pageText(t *testing.T, b *framework.Browser, sel string) string {
	t.Helper()
	return framework.Eval[string](t, b, fmt.Sprintf(`(document.querySelector(%q) || {textContent: ''}).textContent`, sel))
}

func mustDo(t *testing.T, b *framework.Browser, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := b.Do(60*time.Second, actions...); err != nil {
		t.Fatal(err)
	}
}

// checkNoProblems fails the test for every console error, uncaught
// exception or failed load of the page but those allowed says it expects.
func checkNoProblems(t *testing.T, b *framework.Browser, allowed func(string) bool) {
	t.Helper()
	for _, p := range b.Problems() {
		if allowed == nil || !allowed(p) {
			t.Errorf("the page reported: %s", p)
		} else {
			t.Logf("the page reported, as expected: %s", p)
		}
	}
}

// idlePod is a pod that sleeps; nodeName places it without a scheduler.
func idlePod(name string) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "main", Image: containerdtest.PythonRuntimeImage,
			Command: []string{"python3", "-c", "import time; time.sleep(3600)"}}}}}
}

// TestDashboardInChromium: the dashboard at /ui/ of the local port, in
// headless Chromium, on a cluster running functions on real containerd:
// it loads with no console error, shows every function and every pod, an
// invoke from its form shows the result and draws the chain's two steps,
// and under a burst of calls the function's replica count changes on the
// page without a reload.
func TestDashboardInChromium(t *testing.T) {
	t.Parallel()
	s := clusterWith(t, "dash-1", "127.0.0.97", nil, nil)
	dashboardWorkloads(t, s)
	b := framework.StartBrowser(t)
	mustDo(t, b, chromedp.Navigate(s.URL+"/ui/"), chromedp.WaitVisible(`body[data-ready="true"]`))
	if who := pageText(t, b, "#who"); !strings.Contains(who, "local port") {
		t.Errorf("#who says %q: want the local port named", who)
	}
	checkShowsTheCluster(t, s, b)

	// The page is not reloaded from here on: this mark would go with it.
	framework.Eval[bool](t, b, `(window.__sameLoad = true)`)
	checkInvokeDrawsTheChain(t, b)
	checkBurstMovesReplicas(t, s, b)
	if !framework.Eval[bool](t, b, `window.__sameLoad === true`) {
		t.Error("the page was reloaded")
	}
	checkNoProblems(t, b, nil)
	saveScreenshot(t, b, "dashboard.png")
}

// dashboardWorkloads: three functions (burst with an empty pool, the chain
// greet → shout, each keeping a pod: the clusters' idle window is 2 s, and
// a pod that may go before the page is read is a race, which CI lost
// once), a pod, and a two-replica Deployment with an HPA.
func dashboardWorkloads(t *testing.T, s *framework.APIServer) {
	t.Helper()
	ctx := context.Background()
	funcTemplate(t, s, "burst", "import time\ndef run(arg):\n    time.sleep(1)\n    return arg\n", "RETURN", "RETURN",
		map[string]any{"initInstanceNum": 0, "minInstanceNum": 0, "maxInstanceNum": 3})
	funcTemplate(t, s, "greet", "def run(arg):\n    return 'hello ' + arg\n", "shout", "RETURN", map[string]any{"initInstanceNum": 1, "minInstanceNum": 1})
	funcTemplate(t, s, "shout", "def run(arg):\n    return arg.upper() + '!'\n", "RETURN", "RETURN", map[string]any{"initInstanceNum": 1, "minInstanceNum": 1})
	if _, err := s.Client.Pods("default").Create(ctx, idlePod("web")); err != nil {
		t.Fatal(err)
	}
	two, fifty := int32(2), int32(50)
	tmpl := idlePod("hello")
	tmpl.Spec.Containers[0].Resources.Requests = api.ResourceList{"cpu": "50m"}
	if _, err := s.Client.Deployments("default").Create(ctx, &api.Deployment{ObjectMeta: api.ObjectMeta{Name: "hello"},
		Spec: api.DeploymentSpec{Replicas: &two, Selector: &api.LabelSelector{MatchLabels: tmpl.Labels},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.HorizontalPodAutoscalers("default").Create(ctx, &api.HorizontalPodAutoscaler{ObjectMeta: api.ObjectMeta{Name: "hello"},
		Spec: api.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: api.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello"},
			MinReplicas:    &two, MaxReplicas: 4,
			Metrics: []api.MetricSpec{{Type: api.MetricSourceResource, Resource: &api.ResourceMetricSource{Name: "cpu",
				Target: api.MetricTarget{Type: api.MetricUtilization, AverageUtilization: &fifty}}}},
		}}); err != nil {
		t.Fatal(err)
	}
}

// checkShowsTheCluster: every function and every pod the API lists is on
// the page (once the pools' pods have started, the lists stand still), the
// node with its use from the metrics API, the Deployment and its HPA with
// desired against current replicas.
func checkShowsTheCluster(t *testing.T, s *framework.APIServer, b *framework.Browser) {
	t.Helper()
	ctx := context.Background()
	var want, got struct{ pods, funcs, nodes []string }
	defer func() {
		if t.Failed() {
			t.Logf("last seen: the API lists pods %v, functions %v; the page shows pods %v, functions %v, nodes %v",
				want.pods, want.funcs, got.pods, got.funcs, got.nodes)
			// What the pools were asked for, to tell a pool never raised
			// from pods that never started.
			rss, _, _ := s.Client.ReplicaSets("default").List(ctx, client.ListOptions{})
			for _, rs := range rss {
				t.Logf("replicaset %s: replicas %d, status %+v", rs.Name, *rs.Spec.Replicas, rs.Status)
			}
			fns, _, _ := s.Client.Funcs("default").List(ctx, client.ListOptions{})
			for _, f := range fns {
				t.Logf("func %s: status %+v", f.Name, f.Status)
			}
		}
	}()
	waitFor(t, "the page to show every function and pod", 120*time.Second, func() bool {
		pods, _, err := s.Client.Pods("").List(ctx, client.ListOptions{})
		if err != nil {
			return false
		}
		want.pods = nil
		scheduled := true
		for _, p := range pods {
			want.pods = append(want.pods, p.Namespace+"/"+p.Name)
			scheduled = scheduled && p.Spec.NodeName != ""
		}
		slices.Sort(want.pods)
		want.funcs = []string{"default/burst", "default/greet", "default/shout"}
		got.pods, got.funcs = pageKeys(t, b, "pod"), pageKeys(t, b, "func")
		// web, hello's two, and a pod for each of greet and shout, all
		// bound (an unbound one is drawn under "Not scheduled", a card
		// of its own).
		got.nodes = pageKeys(t, b, "node")
		return len(want.pods) >= 5 && scheduled && slices.Equal(want.pods, got.pods) && slices.Equal(want.funcs, got.funcs) &&
			slices.Equal(got.nodes, []string{"dash-1"})
	})
	t.Logf("the page shows pods %v and functions %v on nodes %v", got.pods, got.funcs, got.nodes)
	waitFor(t, "the node's CPU and memory on the page", 30*time.Second, func() bool {
		figures := framework.Eval[[]string](t, b, `[...document.querySelectorAll('[data-node="dash-1"] .usage .figure')].map(e => e.textContent)`)
		return len(figures) == 2 && !strings.HasPrefix(figures[0], "-") && !strings.HasPrefix(figures[1], "-")
	})
	waitFor(t, "hello's replicas on the page", 60*time.Second, func() bool {
		return pageText(t, b, `[data-deploy="default/hello"] .desired`) == "2" && pageText(t, b, `[data-deploy="default/hello"] .current`) == "2" &&
			pageText(t, b, `[data-hpa="default/hello"] .current`) == "2"
	})
	if row := pageText(t, b, `[data-hpa="default/hello"]`); !strings.Contains(row, "Deployment/hello") || !strings.Contains(row, "/50%") {
		t.Errorf("hello's HPA row says %q", row)
	}
}

// checkInvokeDrawsTheChain invokes greet from the form: the chain greet →
// shout gives the result, and the call view draws both steps.
func checkInvokeDrawsTheChain(t *testing.T, b *framework.Browser) {
	t.Helper()
	mustDo(t, b,
		chromedp.SetValue(`#invoke-func`, "default/greet"),
		chromedp.SendKeys(`#invoke-arg`, "class"),
		chromedp.Click(`#invoke-button`),
	)
	waitFor(t, "the invoke's result", 60*time.Second, func() bool {
		return pageText(t, b, "#invoke-result") == "Succeeded: HELLO CLASS!"
	})
	waitFor(t, "the call's two steps on the time line", 10*time.Second, func() bool {
		return framework.Eval[int](t, b, `document.querySelectorAll('svg.timeline g.step').length`) == 2
	})
	if steps := pageText(t, b, "table.steps"); !strings.Contains(steps, "greet") || !strings.Contains(steps, "shout") || !strings.Contains(steps, "dash-1") {
		t.Errorf("the steps table says %q: want greet then shout, on dash-1", steps)
	}
}

// checkBurstMovesReplicas: a burst of calls scales burst's pool up from
// zero and the count on the page moves; one of its calls, picked, is drawn.
func checkBurstMovesReplicas(t *testing.T, s *framework.APIServer, b *framework.Browser) {
	t.Helper()
	replicas := func() string { return pageText(t, b, `[data-func="default/burst"] .replicas`) }
	const before = "0/0" // its pool, made empty (initInstanceNum 0)
	waitFor(t, "burst's empty pool on the page", 30*time.Second, func() bool { return replicas() == before })
	for i := 0; i < 30; i++ {
		resp, err := http.Post(s.URL+"/api/funcs/burst", "text/plain", strings.NewReader(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("call %d: %s", i, resp.Status)
		}
	}
	seen := []string{before}
	waitFor(t, "burst's replica count to change on the page", 60*time.Second, func() bool {
		if r := replicas(); r != seen[len(seen)-1] {
			seen = append(seen, r)
		}
		return seen[len(seen)-1] != before && !strings.HasPrefix(seen[len(seen)-1], "0/")
	})
	waitFor(t, "burst's counter on the page", 60*time.Second, func() bool {
		return pageText(t, b, `[data-func="default/burst"] .counter`) != "0"
	})
	t.Logf("burst's replicas on the page went %v", seen)
	mustDo(t, b, chromedp.Click(`[data-func="default/burst"] .calls button`))
	waitFor(t, "the picked call of burst drawn", 10*time.Second, func() bool {
		return strings.Contains(pageText(t, b, "[data-instance-view] p"), "default/burst")
	})
}

// saveScreenshot keeps the whole page as a PNG in $MINIK8S_ARTIFACTS, when
// it is set, for people to look at.
func saveScreenshot(t *testing.T, b *framework.Browser, name string) {
	t.Helper()
	dir := os.Getenv("MINIK8S_ARTIFACTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// spkiHash is the base64 SHA-256 of the public key the TLS server at
// rawURL serves: what Chromium is told to trust.
func spkiHash(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true}) // only to read the key
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sum := sha256.Sum256(conn.ConnectionState().PeerCertificates[0].RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// TestDashboardSignsInOnTheSecurePort: on the secure port the page asks
// for a token, refuses a wrong one, reads the cluster as the user of a
// right one (watching over websockets that carry the token), signs out,
// and says what a user may not read.
func TestDashboardSignsInOnTheSecurePort(t *testing.T) {
	s := framework.StartSecureAPIServer(t, "alice-token,alice,u1,\"system:masters\"\nbob-token,bob,u2\n")
	ctx := context.Background()
	if _, err := s.Client.Pods("default").Create(ctx, idlePod("lonely")); err != nil {
		t.Fatal(err)
	}
	b := framework.StartBrowser(t, framework.TrustSPKI(spkiHash(t, s.SecureURL)))
	mustDo(t, b, chromedp.Navigate(s.SecureURL+"/ui/"), chromedp.WaitVisible(`#signin-form`))
	if !framework.Eval[bool](t, b, `document.getElementById('dashboard').hidden`) {
		t.Error("the dashboard shows before signing in")
	}
	signIn := func(token string) {
		mustDo(t, b, chromedp.SendKeys(`#token`, token), chromedp.Click(`#signin-form button[type=submit]`))
	}

	signIn("wrong-token")
	waitFor(t, "the wrong token refused", 10*time.Second, func() bool {
		return pageText(t, b, "#signin-error") == "That token is not valid."
	})

	signIn("alice-token")
	mustDo(t, b, chromedp.WaitVisible(`body[data-ready="true"]`))
	if who := pageText(t, b, "#who"); who != "signed in as alice" {
		t.Errorf("#who says %q", who)
	}
	if pods := pageKeys(t, b, "pod"); !slices.Equal(pods, []string{"default/lonely"}) {
		t.Errorf("pods on the page: %v", pods)
	}
	// A change arrives over the watch, with the token in its subprotocol.
	if _, err := s.Client.Pods("default").Create(ctx, idlePod("second")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new pod on the page", 10*time.Second, func() bool {
		return slices.Equal(pageKeys(t, b, "pod"), []string{"default/lonely", "default/second"})
	})
	// It came over the watch: the pods were listed once (a refused watch
	// would have made the page list them again).
	if n := framework.Eval[int](t, b, `performance.getEntriesByType('resource').filter(e => new URL(e.name).pathname === '/api/v1/pods').length`); n != 1 {
		t.Errorf("the page listed the pods %d times, want once", n)
	}

	mustDo(t, b, chromedp.Click(`#signout`), chromedp.WaitVisible(`#signin-form`))
	gone := func(when string) {
		t.Helper()
		if n := framework.Eval[int](t, b, `document.querySelectorAll('[data-pod], [data-node], [data-func]').length`); n != 0 {
			t.Errorf("%s, %d of alice's objects are still in the page", when, n)
		}
	}
	gone("after signing out")

	// bob may read nothing: the page says so instead of showing empty
	// lists, and nothing alice read is left for him.
	signIn("bob-token")
	waitFor(t, "bob told he may not read nodes", 10*time.Second, func() bool {
		return strings.Contains(pageText(t, b, "#nodes"), "Not allowed to read nodes")
	})
	gone("once bob signed in")
	// The page's own requests were refused only as the test asked: the
	// wrong token (401) and bob's reads (403).
	checkNoProblems(t, b, func(p string) bool {
		return strings.Contains(p, "status of 401") || strings.Contains(p, "status of 403")
	})
}

// TestDashboardFiles: the page's files are served from the binary to
// anyone (they hold no data), with a policy that keeps the page to its
// own origin; the session says who the page reads the cluster as.
func TestDashboardFiles(t *testing.T) {
	s := framework.StartSecureAPIServer(t, "alice-token,alice,u1,\"system:masters\"\n")
	noRedirect := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: clusterCA(t, s)}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(c *http.Client, url, token string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}
	for _, tc := range []struct {
		path, contentType, contains string
	}{
		{"/ui/", "text/html; charset=utf-8", `<script type="module" src="app.js">`},
		{"/ui/index.html", "text/html; charset=utf-8", "<title>minik8s</title>"},
		{"/ui/app.js", "text/javascript; charset=utf-8", "new Informer("},
		{"/ui/style.css", "text/css; charset=utf-8", ".nodes"},
	} {
		resp, body := get(noRedirect, s.SecureURL+tc.path, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.contentType || !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s without credentials: %s %q, want 200 %q with %q", tc.path, resp.Status, resp.Header.Get("Content-Type"), tc.contentType, tc.contains)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
		}
	}
	if resp, _ := get(noRedirect, s.SecureURL+"/ui", ""); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %s to %q, want 301 to /ui/", resp.Status, resp.Header.Get("Location"))
	}
	if resp, _ := get(noRedirect, s.SecureURL+"/ui/missing.js", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /ui/missing.js: %s, want 404", resp.Status)
	}
	// A new binary serves new files: the page revalidates them.
	resp, _ := get(noRedirect, s.SecureURL+"/ui/app.js", "")
	req, _ := http.NewRequest(http.MethodGet, s.SecureURL+"/ui/app.js", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	if again, err := noRedirect.Do(req); err != nil || again.StatusCode != http.StatusNotModified {
		t.Errorf("GET /ui/app.js again with its ETag: %v %v, want 304", again, err)
	} else {
		again.Body.Close()
	}
	// The files are public, the cluster is not.
	if resp, _ := get(noRedirect, s.SecureURL+"/api/v1/pods", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/pods without credentials: %s", resp.Status)
	}
	for _, tc := range []struct {
		name   string
		c      *http.Client
		url    string
		token  string
		code   int
		answer string
	}{
		{"secure port, no token", noRedirect, s.SecureURL, "", http.StatusOK, `{"signIn":true,"local":false}`},
		{"secure port, alice", noRedirect, s.SecureURL, "alice-token", http.StatusOK, `{"signIn":false,"user":"alice","groups":["system:masters","system:authenticated"],"local":false}`},
		{"secure port, a wrong token", noRedirect, s.SecureURL, "wrong", http.StatusUnauthorized, ""},
		{"local port", http.DefaultClient, s.URL, "", http.StatusOK, `{"signIn":false,"user":"system:admin","groups":["system:masters","system:authenticated"],"local":true}`},
	} {
		resp, body := get(tc.c, tc.url+"/ui/session", tc.token)
		if resp.StatusCode != tc.code || (tc.answer != "" && strings.TrimSpace(body) != tc.answer) {
			t.Errorf("%s: /ui/session answered %s %s, want %d %s", tc.name, resp.Status, body, tc.code, tc.answer)
		}
	}
}
