package framework

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"minik8s/test/harness"
)

// ChromiumBinary is Debian's chromium package.
const ChromiumBinary = "/usr/bin/chromium"

// Browser is a headless Chromium driven over the DevTools protocol by
// chromedp, with one tab (Ctx). It records what the page reports as
// wrong: console errors, uncaught exceptions, failed loads (the browser
// log's errors).
type Browser struct {
	// Ctx runs chromedp actions in the tab.
	Ctx context.Context

	mu       sync.Mutex
	problems []string
}

// BrowserOption adds to Chromium's command line.
type BrowserOption = chromedp.ExecAllocatorOption

// TrustSPKI makes Chromium accept TLS certificates whose public key has
// one of these SHA-256 hashes (base64): the cluster's serving certificate,
// which the machine's store does not know.
func TrustSPKI(hashes ...string) BrowserOption {
	return chromedp.Flag("ignore-certificate-errors-spki-list", strings.Join(hashes, ","))
}

// StartBrowser starts Chromium (as root it runs without its sandbox) with
// its profile in the run dir, so that a sweep finds what an aborted binary
// left; it resolves no name but loopback's and goes nowhere else on its
// own. The browser and every process it forked stop when the test ends.
// Without Chromium the test is skipped, or failed when MINIK8S_E2E=1.
func StartBrowser(t testing.TB, opts ...BrowserOption) *Browser {
	t.Helper()
	harness.HoldIfAborting()
	if _, err := os.Stat(ChromiumBinary); err != nil {
		harness.NeedE2E(t, "no %s (Debian's chromium package: apt-get install chromium)", ChromiumBinary)
	}
	dir := t.TempDir()
	all := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumBinary), chromedp.UserDataDir(dir), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000),
		// Tests reach loopback only: no proxy, no name resolved but
		// localhost, none of Chromium's own services.
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.*"),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
	)
	all = append(all, opts...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), all...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &Browser{Ctx: ctx}
	harness.Track(t, "chromium", func(errorf func(string, ...any)) {
		cancel()
		cancelAlloc() // kills the browser and waits for it, then removes leftovers using dir
		if left := harness.StillRunning(harness.ProcsReferring(dir)); len(left) > 0 {
			errorf("chromium left %d processes: %v", len(left), left)
			_ = harness.KillProcs(left)
		}
	})
	// The first action starts the browser; it must not have a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", ChromiumBinary, err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// Problems are the console errors, uncaught exceptions and failed loads
// the page reported so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// Do runs chromedp actions in the tab, in order, within d.
func (b *Browser) Do(d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.Ctx, d)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its value.
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}
