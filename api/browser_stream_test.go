package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/browsertest"
)

// TestBrowserNotebookLiveOutput: a notebook cell shows each line as the
// call emits it, long before the call ends; Interrupt reaches the session
// while the cell runs, and Restart restarts it.
func TestBrowserNotebookLiveOutput(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	br := chromium.Start(t, 1000, 1200, 2*time.Minute)
	h := newHarness(t, nil)
	step := make(chan struct{})
	h.disp.run = func(ctx context.Context, call dispatcher.Call) dispatcher.Result {
		h.sess.setBusy(call.SessionID, true)
		defer h.sess.setBusy(call.SessionID, false)
		var out strings.Builder
		for i := range 3 {
			line := fmt.Sprintf("line %d\n", i)
			emit(ctx, core.Event{Kind: "stdout", Text: line})
			out.WriteString(line)
			select {
			case <-step:
			case <-ctx.Done():
				return dispatcher.Result{CallID: call.ID, Status: dispatcher.StatusUnavailable, Err: ctx.Err()}
			}
		}
		emit(ctx, core.Event{Kind: "stderr", Text: "KeyboardInterrupt\n"})
		return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusError, Content: out.String(),
			Sandbox: &core.Result{Status: core.StatusError, ExitCode: 1, Stdout: out.String(), Stderr: "KeyboardInterrupt\n", ExecutionCount: 1,
				Error: &core.ExecError{Name: "KeyboardInterrupt", Value: "", Traceback: []string{"KeyboardInterrupt"}}}}
	}
	ts := httptest.NewServer(h.srv)
	defer browsertest.CloseServer(ts)

	br.Do("open the notebook",
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("key-input")),
		chromedp.SendKeys(chromedp.ID("key-input"), keyAlice),
		chromedp.Click(chromedp.ID("key-save")),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.Click(chromedp.ID("tab-notebook")),
		chromedp.WaitVisible(chromedp.CSS(".cell .run")),
		chromedp.Click(chromedp.CSS(".cell .run")),
	)
	live := `(document.querySelector('.cell .output .live') || {textContent: ''}).textContent`
	text := func() string {
		t.Helper()
		v, err := chromedp.Run(br.Ctx, chromedp.Evaluate[string](live))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	br.Poll("first line shown while the call runs", live+`.includes('line 0')`)
	if got := text(); strings.Contains(got, "line 1") {
		t.Fatalf("a line shown before it was printed: %q", got)
	}
	step <- struct{}{}
	br.Poll("second line", live+`.includes('line 1')`)

	// Interrupt while the cell runs: the request reaches the session.
	br.Do("interrupt", chromedp.Click(chromedp.ID("interrupt")))
	br.Poll("interrupt answered", `document.getElementById('kernel-status').textContent === 'interrupted'`)
	h.sess.mu.Lock()
	n := h.sess.interrupts
	h.sess.mu.Unlock()
	if n != 1 {
		t.Fatalf("interrupts reaching the session: %d", n)
	}
	step <- struct{}{}
	step <- struct{}{}
	br.Poll("final result", `!!document.querySelector('.cell .output .exc')`)
	v, err := chromedp.Run(br.Ctx, chromedp.Evaluate[string](`document.querySelector('.cell .output').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v, "line 2") || !strings.Contains(v, "KeyboardInterrupt") || strings.Contains(v, "running") {
		t.Fatalf("final output %q", v)
	}
	if d, _ := chromedp.Run(br.Ctx, chromedp.Evaluate[bool](`document.getElementById('interrupt').disabled`)); !d {
		t.Fatal("Interrupt stays enabled after the cell ended")
	}

	br.Do("restart", chromedp.Click(chromedp.ID("restart")))
	br.Poll("restart answered", `document.getElementById('kernel-status').textContent.startsWith('restarted')`)
	h.sess.mu.Lock()
	restarts := 0
	for _, r := range h.sess.restarts {
		restarts += r
	}
	h.sess.mu.Unlock()
	if restarts != 1 {
		t.Fatalf("restarts %d", restarts)
	}
	if errs := br.JSErrors(); len(errs) > 0 {
		t.Fatalf("JavaScript errors: %v", errs)
	}
}
