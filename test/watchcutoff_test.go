package test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"minik8s/apiserver"
	"minik8s/pkg/api"
	"minik8s/pkg/client"
	"minik8s/test/framework"
)

// stallProxy forwards connections to an apiserver; while stalled it
// passes nothing back to the clients, as a client that stopped reading,
// and reads from the server with a small receive buffer, so the server
// cannot hand the kernel much.
type stallProxy struct {
	addr  string
	stall sync.RWMutex // held while stalled
}

func startStallProxy(t *testing.T, upstream string) *stallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := &stallProxy{addr: l.Addr().String()}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		_ = c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return nil
	}}
	go func() {
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			up, err := d.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			go func() {
				_, _ = io.Copy(up, down)
				up.Close()
			}()
			go func() {
				defer down.Close()
				buf := make([]byte, 4096)
				for {
					n, err := up.Read(buf)
					p.stall.RLock() // waits out a stall
					p.stall.RUnlock()
					if n > 0 {
						if _, werr := down.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// cutOffs reads the server's count of watches cut off.
func cutOffs(t *testing.T, s *framework.APIServer) int {
	t.Helper()
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "apiserver_watches_cut_off_total "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	t.Fatalf("no apiserver_watches_cut_off_total in /metrics")
	return 0
}

// TestWatchCutOffResumes: a watch whose client stops reading while large
// changes go by is cut off once what waits for it passes its bound, and
// both pkg/client's watch and client-go's informer resume from the last
// version they got: every change arrives, once, in order.
func TestWatchCutOffResumes(t *testing.T) {
	t.Parallel()
	s := framework.StartAPIServerWith(t, func(c *apiserver.Config) {
		c.MaxWatchBytes, c.MaxWatchBytesPerClient = 256<<10, 256<<10
	})
	proxy := startStallProxy(t, s.Addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	value := strings.Repeat("x", 100<<10)
	const changes = 40
	// burst makes the changes in ns with the client stalled, until the
	// server has cut a watch off.
	burst := func(t *testing.T, ns string) {
		t.Helper()
		before := cutOffs(t, s)
		proxy.stall.Lock()
		for i := range changes {
			cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("c-%02d", i)}, Data: map[string]string{"v": value}}
			if _, err := s.Client.ConfigMaps(ns).Create(ctx, cm); err != nil {
				proxy.stall.Unlock()
				t.Fatal(err)
			}
		}
		waitUntil(t, 30*time.Second, "the stalled watch cut off", func() bool { return cutOffs(t, s) > before })
		proxy.stall.Unlock()
	}
	for _, ns := range []string{"pkgclient", "clientgo"} {
		if _, err := s.Client.Namespaces().Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("pkg/client", func(t *testing.T) {
		c := client.New("http://" + proxy.addr)
		ch := c.ConfigMaps("pkgclient").Watch(ctx, client.ListOptions{})
		if _, err := s.Client.ConfigMaps("pkgclient").Create(ctx, &api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "a-first"}}); err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, ch); ev.Object.Name != "a-first" {
			t.Fatalf("first event %s %s", ev.Type, ev.Object.Name)
		}
		burst(t, "pkgclient")
		for i := range changes {
			ev := nextEvent(t, ch)
			if want := fmt.Sprintf("c-%02d", i); ev.Type != api.Added || ev.Object.Name != want {
				t.Fatalf("event %d after the cut: %s %s, want ADDED %s", i, ev.Type, ev.Object.Name, want)
			}
		}
	})

	t.Run("client-go informer", func(t *testing.T) {
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + proxy.addr})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		adds := map[string]int{}
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("clientgo"))
		inf := factory.Core().V1().ConfigMaps().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
			mu.Lock()
			defer mu.Unlock()
			adds[o.(*corev1.ConfigMap).Name]++
		}}); err != nil {
			t.Fatal(err)
		}
		factory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("informer never synced")
		}
		// The informer's watch is open once a change reaches it.
		if _, err := cs.CoreV1().ConfigMaps("clientgo").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a-first"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 30*time.Second, "the informer seeing a-first", func() bool { mu.Lock(); defer mu.Unlock(); return adds["a-first"] == 1 })
		burst(t, "clientgo")
		waitUntil(t, time.Minute, "the informer seeing every change after the cut", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(adds) == changes+1
		})
		mu.Lock()
		defer mu.Unlock()
		for name, n := range adds {
			if n != 1 {
				t.Errorf("%s added %d times", name, n)
			}
		}
	})
}
