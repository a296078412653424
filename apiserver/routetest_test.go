package apiserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"minik8s/pkg/api"
	"minik8s/pkg/rbac"
	"minik8s/pkg/storage"
	"minik8s/pkg/storage/etcd/etcdtest"
)

// The helpers of the tests that drive the engine as a client would: a
// server over embedded etcd whose store records what each request read
// and wrote, and which tells what authorization judged.

// touch is one store access of a request.
type touch struct {
	write bool
	key   string
}

// touches are a request's store accesses.
type touches struct {
	mu  sync.Mutex
	all []touch
}

func (t *touches) list() []touch {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]touch(nil), t.all...)
}

type touchesKey struct{}

func record(ctx context.Context, write bool, keys ...string) {
	t, ok := ctx.Value(touchesKey{}).(*touches)
	if !ok {
		return // the server's own work, not a request's
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		t.all = append(t.all, touch{write: write, key: k})
	}
}

// tracedStore records the keys requests touch.
type tracedStore struct{ storage.Interface }

func (s tracedStore) Create(ctx context.Context, key string, obj api.Object, ttl time.Duration) error {
	record(ctx, true, key)
	return s.Interface.Create(ctx, key, obj, ttl)
}

func (s tracedStore) CreateMany(ctx context.Context, items []storage.Item, ttl time.Duration) error {
	for _, it := range items {
		record(ctx, true, it.Key)
	}
	return s.Interface.CreateMany(ctx, items, ttl)
}

func (s tracedStore) Get(ctx context.Context, key string, out api.Object) error {
	record(ctx, false, key)
	return s.Interface.Get(ctx, key, out)
}

func (s tracedStore) List(ctx context.Context, prefix string, newObj storage.NewFunc) ([]api.Object, int64, error) {
	record(ctx, false, prefix)
	return s.Interface.List(ctx, prefix, newObj)
}

func (s tracedStore) ListAt(ctx context.Context, prefix string, rev int64, newObj storage.NewFunc) ([]api.Object, error) {
	record(ctx, false, prefix)
	return s.Interface.(storage.RevisionLister).ListAt(ctx, prefix, rev, newObj)
}

func (s tracedStore) Update(ctx context.Context, key string, obj api.Object) error {
	record(ctx, true, key)
	return s.Interface.Update(ctx, key, obj)
}

func (s tracedStore) GuaranteedUpdate(ctx context.Context, key string, newObj storage.NewFunc, fn storage.UpdateFunc) (api.Object, error) {
	record(ctx, true, key)
	return s.Interface.GuaranteedUpdate(ctx, key, newObj, fn)
}

func (s tracedStore) Delete(ctx context.Context, key string, out api.Object, rv string) error {
	record(ctx, true, key)
	return s.Interface.Delete(ctx, key, out, rv)
}

func (s tracedStore) Watch(ctx context.Context, prefix string, from int64, newObj storage.NewFunc) (<-chan storage.Event, error) {
	record(ctx, false, prefix)
	return s.Interface.Watch(ctx, prefix, from, newObj)
}

// observedKey holds where a request's authorized attributes are written
// once it reaches its handler.
type observedKey struct{}

// engineTest drives a server's engine.
type engineTest struct {
	t      *testing.T
	s      *Server
	engine *gin.Engine
}

// Users of the engine tests, by bearer token.
const (
	runnerToken = "runner-token" // the function runners' role
	editAToken  = "edit-a-token" // edit in team-a only
	editBToken  = "edit-b-token" // edit in team-b only
)

func newEngineTest(t *testing.T) *engineTest {
	t.Helper()
	store := tracedStore{etcdtest.Start(t)}
	s := New(Config{AuditLogPath: "-", DataDir: t.TempDir()}, store)
	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	t.Cleanup(func() { cancel(); bg.Wait() })
	if err := s.namespaces.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	for _, fn := range []func(context.Context){s.namespaces.Run, s.authz.Run, s.calls.Run} {
		bg.Add(1)
		go func() { defer bg.Done(); fn(ctx) }()
	}
	s.tokens = map[string]rbac.User{
		runnerToken: {Name: "system:funcrunner:r1", Groups: []string{rbac.FuncRunnersGroup, rbac.AllAuthenticated}},
		editAToken:  {Name: "alice", Groups: []string{rbac.AllAuthenticated}},
		editBToken:  {Name: "bob", Groups: []string{rbac.AllAuthenticated}},
	}
	et := &engineTest{t: t, s: s}
	s.metrics = prometheus.NewRegistry() // New registered the first engine's
	et.engine = s.routes(func(c *gin.Context) {
		if slot, ok := c.Request.Context().Value(observedKey{}).(*rbac.Attributes); ok {
			*slot = requestAttributes(c)
			slot.User = rbac.UserOf(c.Request.Context())
		}
	})
	for _, ns := range []string{"team-a", "team-b"} {
		et.mustDo("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`"}}`, http.StatusCreated)
	}
	et.bind("alice", "team-a")
	et.bind("bob", "team-b")
	return et
}

// bind gives user the edit role in ns and waits until the authorizer
// follows.
func (et *engineTest) bind(user, ns string) {
	et.t.Helper()
	et.mustDo("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings",
		`{"metadata":{"name":"edit-`+user+`"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},`+
			`"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"`+user+`"}]}`, http.StatusCreated)
	want := rbac.Attributes{User: rbac.User{Name: user, Groups: []string{rbac.AllAuthenticated}}, Verb: "create",
		Resource: api.ConfigMapsResource.Name, Namespace: ns, ResourceRequest: true}
	deadline := time.Now().Add(30 * time.Second)
	for !et.s.authz.Allows(want) {
		if time.Now().After(deadline) {
			et.t.Fatalf("the authorizer never saw %s's binding in %s", user, ns)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// answer is what a request got and did.
type answer struct {
	code int
	body string
	// attrs are what authorization judged when the handler ran (nil: no
	// handler ran).
	attrs   *rbac.Attributes
	touches []touch
}

// do sends a request as the admin of the local port (token "") or as a
// token's user, with a JSON body when body is not empty.
func (et *engineTest) do(method, target, body, token string) answer {
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	return et.doType(method, target, body, ct, token)
}

func (et *engineTest) doType(method, target, body, contentType, token string) answer {
	et.t.Helper()
	seen, tt := &rbac.Attributes{}, &touches{}
	// A bound for what a request may take here (a watch ends with it).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctx = context.WithValue(context.WithValue(ctx, touchesKey{}, tt), observedKey{}, seen)
	if token == "" {
		ctx = context.WithValue(ctx, localPortKey{}, true)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, "http://127.0.0.1"+target, rd).WithContext(ctx)
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	et.engine.ServeHTTP(w, r)
	a := answer{code: w.Code, body: w.Body.String(), touches: tt.list()}
	if seen.Verb != "" || seen.Path != "" {
		a.attrs = seen
	}
	return a
}

func (et *engineTest) mustDo(method, target, body string, want int) answer {
	et.t.Helper()
	a := et.do(method, target, body, "")
	if a.code != want {
		et.t.Fatalf("%s %s: %d %s, want %d", method, target, a.code, a.body, want)
	}
	return a
}

// writes are the keys a request wrote.
func (a answer) writes() []string {
	var out []string
	for _, t := range a.touches {
		if t.write {
			out = append(out, t.key)
		}
	}
	return out
}
