package browsertest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// Browser is one test's Chromium tab.
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

// Chromium is one headless Chromium a test binary shares (TestMain makes
// it and closes it after the tests): launched by the first Start, each test
// then gets a tab in a browser context of its own (cookies, storage and
// cache of its own, disposed with the tab). A Chromium start costs about
// 1.7 s of CPU, paid once per binary instead of once per browser test.
type Chromium struct {
	mu       sync.Mutex
	browser  context.Context // the first tab, which holds the browser; nil until launched
	shutdown func()
}

// NewChromium returns a Chromium that launches at its first Start.
func NewChromium() *Chromium { return &Chromium{} }

// launched returns the browser's first tab, launching Chromium from exe on
// the first call and again after a crash: chromedp ends the browser's
// context when it loses the connection, and a dead browser would fail
// every later test of the binary instead of the one that met the crash.
func (c *Chromium) launched(exe string) (context.Context, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.browser != nil && c.browser.Err() == nil {
		return c.browser, nil
	}
	c.stop()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1200, 1400))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil { // starts the browser; no timeout on this context
		bcancel()
		acancel()
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	c.browser, c.shutdown = bctx, func() { bcancel(); acancel() }
	return bctx, nil
}

// Close stops Chromium if it was launched.
func (c *Chromium) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stop()
}

// stop ends the launched Chromium, if any; the caller holds c.mu.
func (c *Chromium) stop() {
	if c.shutdown != nil {
		c.shutdown()
		c.browser, c.shutdown = nil, nil
	}
}

// Start returns a new tab of width×height in a browser context of its own,
// whose Ctx ends after guard, scaled by testscale (a hang guard, not a
// timing assertion). The tab and its browser context close at the end of
// the test; a second tab opened from Ctx (chromedp.NewContext) shares its
// browser context, as a second tab of one user's browser would.
func (c *Chromium) Start(t testing.TB, width, height int, guard time.Duration) *Browser {
	t.Helper()
	bctx, err := c.launched(ChromiumPath(t))
	if err != nil {
		t.Fatal(err)
	}
	tab, closeTab := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	t.Cleanup(closeTab)
	// The first action creates the tab, which lives as long as tab.
	if err := chromedp.Do(tab, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("open a chromium tab: %v", err)
	}
	b := &Browser{t: t}
	if err := chromedp.Listen(tab, func(ev any) {
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
	ctx, cancel := context.WithTimeout(tab, testscale.D(guard))
	t.Cleanup(cancel)
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

// AllowDownloads saves the tab's downloads in dir (a test's temp dir). It
// names the tab's own browser context: tests sharing the browser download
// each into their own folder.
func (b *Browser) AllowDownloads(dir string) {
	b.t.Helper()
	id := chromedp.FromContext(b.Ctx).BrowserContextID
	if _, err := chromedp.Call(b.Ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir, BrowserContextID: id}); err != nil {
		b.t.Fatalf("allow downloads: %v", err)
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
