package browsertest

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestRelaunchAfterCrash kills the shared Chromium with SIGKILL between two
// tests of one binary: the second test gets a working tab from a new
// Chromium instead of failing on the dead one.
func TestRelaunchAfterCrash(t *testing.T) {
	ChromiumPath(t) // skips (fails in CI) without Chromium
	c := NewChromium()
	t.Cleanup(c.Close)
	var first int
	t.Run("before", func(t *testing.T) {
		b := c.Start(t, 400, 300, time.Minute)
		if n, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](`6 * 7`)); err != nil || n != 42 {
			t.Fatalf("6 * 7 evaluated to %d, %v", n, err)
		}
		first = chromedp.FromContext(c.browser).Browser.Process().Pid
	})
	if first == 0 {
		t.Fatal("the first Chromium did not start")
	}
	browser := c.browser
	if err := chromedp.FromContext(browser).Browser.Process().Kill(); err != nil {
		t.Fatalf("kill -9 chromium: %v", err)
	}
	select {
	case <-browser.Done():
	case <-time.After(testscale.D(30 * time.Second)):
		t.Fatal("chromedp did not notice the killed browser")
	}
	t.Run("after", func(t *testing.T) {
		b := c.Start(t, 400, 300, time.Minute)
		if n, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](`6 * 7`)); err != nil || n != 42 {
			t.Fatalf("6 * 7 evaluated to %d, %v after the crash", n, err)
		}
		if pid := chromedp.FromContext(c.browser).Browser.Process().Pid; pid == first {
			t.Fatalf("still the killed Chromium (pid %d)", pid)
		}
	})
}
