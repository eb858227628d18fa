package api

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/internal/browsertest"
)

// TestBrowserConversation: a reload in the middle of a run (waiting for an
// approval) re-attaches to it from the URL and the run goes on; a
// follow-up question carries the previous run (previous_run_id, or the
// earlier answer in the goal on a server without follow-ups); Cancel ends
// in "cancelled", not "running".
func TestBrowserConversation(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	br := chromium.Start(t, 1100, 1200, 2*time.Minute)
	h := newHarness(t, nil)
	h.runs.mu.Lock()
	h.runs.script = approvalScript
	h.runs.mu.Unlock()
	ts := httptest.NewServer(h.srv)
	defer browsertest.CloseServer(ts)
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(br.Ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	br.Do("ask",
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("key-input")),
		chromedp.SendKeys(chromedp.ID("key-input"), keyAlice),
		chromedp.Click(chromedp.ID("key-save")),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.SendKeys(chromedp.ID("question"), "List the files"),
		chromedp.Click(chromedp.ID("ask")),
		chromedp.WaitVisible(chromedp.CSS(".approval .reject")),
	)
	url := eval(`location.href`)
	if !strings.Contains(url, "run=") {
		t.Fatalf("URL lacks the run: %s", url)
	}
	// Reload mid-run: the conversation and the waiting card come back, and
	// approving there finishes the run.
	br.Do("reload mid-run", chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.WaitVisible(chromedp.CSS(".approval .approve")))
	if q := eval(`document.querySelector('.turn .question-text').textContent`); q != "List the files" {
		t.Fatalf("question after reload %q", q)
	}
	if d := eval(`String(document.getElementById('cancel').disabled)`); d != "false" {
		t.Fatal("Cancel is not offered for the re-attached run")
	}
	br.Do("approve after reload", chromedp.Click(chromedp.CSS(".approval .approve")))
	br.Poll("answer after reload", `(document.querySelector('.turn .final') || {textContent: ''}).textContent.includes('The folder is empty.')`)
	if n := eval(`String(document.querySelectorAll('.turn .final:not([hidden])').length)`); n != "1" {
		t.Fatalf("%s answers shown", n)
	}
	first := eval(`new URLSearchParams(location.search).get('run')`)

	// A follow-up question carries the first run.
	h.runs.mu.Lock()
	h.runs.script = simpleScript
	h.runs.mu.Unlock()
	br.Do("follow up",
		chromedp.SendKeys(chromedp.ID("question"), "And the biggest one?"),
		chromedp.Click(chromedp.ID("ask")),
	)
	br.Poll("second answer", `document.querySelectorAll('.turn').length === 2 && !document.querySelectorAll('.turn')[1].querySelector('.final').hidden`)
	h.runs.mu.Lock()
	req := fmt.Sprintf("%+v", h.runs.lastReq)
	h.runs.mu.Unlock()
	if !strings.Contains(req, first) && !strings.Contains(req, "The folder is empty.") {
		t.Fatalf("the follow-up carries neither the previous run %s nor its answer: %s", first, req)
	}
	if !strings.Contains(req, "And the biggest one?") {
		t.Fatalf("follow-up request %s", req)
	}
	if errs := br.JSErrors(); len(errs) > 0 {
		t.Fatalf("JavaScript errors: %v", errs)
	}
}
