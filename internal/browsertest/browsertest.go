package browsertest

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// Browser is one headless Chromium tab for one test.
type Browser struct {
	// Ctx runs chromedp actions; it ends at the hang guard given to Start.
	Ctx      context.Context
	t        testing.TB
	mu       sync.Mutex
	jsErrors []string
}

// ChromiumPath finds Chromium: $AIRLOCK_CHROMIUM or /usr/bin/chromium.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	p := os.Getenv("AIRLOCK_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium not found at %s (CI=true, so this fails): install Debian's chromium or set AIRLOCK_CHROMIUM", p)
		}
		t.Skipf("skipping the browser test: chromium not found at %s (install Debian's chromium or set AIRLOCK_CHROMIUM)", p)
	}
	return p
}

// ArtifactDir is where screenshots go: $AIRLOCK_TEST_ARTIFACTS, else a
// folder under the system temp dir that outlives the test.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("AIRLOCK_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "airlock-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Start launches Chromium with a window of width×height and returns a tab
// whose context ends after guard, scaled by testscale (a hang guard, not a
// timing assertion).
// Everything is torn down at the end of the test.
func Start(t testing.TB, width, height int, guard time.Duration) *Browser {
	t.Helper()
	exe := ChromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(width, height))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(acancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil { // starts the browser; no timeout on this context
		t.Fatalf("start chromium: %v", err)
	}
	b := &Browser{t: t}
	if err := chromedp.Listen(bctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			msg := e.ExceptionDetails.Text
			if x := e.ExceptionDetails.Exception; x != nil && x.Description != "" {
				msg += " " + x.Description
			}
			b.mu.Lock()
			b.jsErrors = append(b.jsErrors, msg)
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	ctx, tcancel := context.WithTimeout(bctx, testscale.D(guard))
	t.Cleanup(tcancel)
	b.Ctx = ctx
	return b
}

// Do runs actions, failing the test with name on error.
func (b *Browser) Do(name string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.Ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", name, err)
	}
}

// Poll waits until the JavaScript expression is true.
func (b *Browser) Poll(name, expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.Ctx, chromedp.Poll[bool](expr)); err != nil {
		b.t.Fatalf("%s: %v", name, err)
	}
}

// JSErrors returns the page's uncaught JavaScript exceptions so far.
func (b *Browser) JSErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.jsErrors...)
}

// CloseServer closes a test server the browser talks to: its client
// connections first, so a handler the page still holds open (an SSE
// stream) ends, then the server. A plain Close run while Chromium is
// still connected (a test that failed before its cleanups) waits forever.
func CloseServer(ts *httptest.Server) {
	ts.CloseClientConnections()
	ts.Close()
}
