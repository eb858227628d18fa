package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/browsertest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/wire"
)

// The workbench's second pass (issue 32): one browser test per problem.

// longLine is a 300-character line without a break opportunity.
var longLine = strings.Repeat("x", 300)

// workbench is one browser tab on a harness server, past the key prompt.
type workbench struct {
	*browsertest.Browser
	t   *testing.T
	h   *harness
	url string
}

// openWorkbench starts a browser of width×height on a fresh harness
// (mut as in newHarness) and opens the UI with alice's key.
func openWorkbench(t *testing.T, width, height int, mut func(*harness)) *workbench {
	t.Helper()
	br := chromium.Start(t, width, height, 3*time.Minute)
	h := newHarness(t, nil)
	if mut != nil {
		mut(h)
	}
	ts := httptest.NewServer(h.srv)
	t.Cleanup(ts.Close)
	w := &workbench{Browser: br, t: t, h: h, url: ts.URL}
	w.Do("open the workbench",
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("key-input")),
		chromedp.SendKeys(chromedp.ID("key-input"), keyAlice),
		chromedp.Click(chromedp.ID("key-save")),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.Click(chromedp.ID("welcome-close")),
	)
	return w
}

// eval evaluates a JavaScript expression to a string.
func (w *workbench) eval(expr string) string {
	w.t.Helper()
	return evalIn(w.t, w.Ctx, expr)
}

// evalIn evaluates a JavaScript expression to a string in tab ctx.
func evalIn(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// setCell puts code in cell i (0-based) of the notebook.
func (w *workbench) setCell(i int, code string) {
	w.t.Helper()
	b, _ := json.Marshal(code)
	w.eval(`document.querySelectorAll('.cell .CodeMirror')[` + itoa(i) + `].CodeMirror.setValue(` + string(b) + `), ''`)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// overflow is how far the page is wider than its viewport, in px.
const overflowJS = `String(Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - document.documentElement.clientWidth)`

// answerScript answers with a 300-character line; the model's last
// message (same text) also comes as the step's assistant message, as the
// agent loop sends it.
func answerScript(agent.RunRequest) [][]wire.RunEvent {
	answer := "The answer is unique-answer-text.\n\n" + longLine
	return [][]wire.RunEvent{{
		ev(wire.EventStepStarted, 1, map[string]any{}),
		ev(wire.EventAssistantMessage, 1, map[string]any{"content": answer}),
		ev(wire.EventFinalAnswer, 1, map[string]any{"content": answer}),
		ev(wire.EventRunFinished, 1, map[string]any{"status": "done", "steps": 1, "final_answer": answer}),
	}}
}

// TestBrowserPhoneFits: at 390 px a 300-character line in a cell (its
// code and its output) and in an answer scrolls inside its box: the page
// never scrolls sideways, and a resize from desktop does not zoom out.
func TestBrowserPhoneFits(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 900, func(h *harness) {
		h.runs.script = answerScript
		h.disp.run = func(_ context.Context, call dispatcher.Call) dispatcher.Result {
			return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusOK, Content: longLine,
				Sandbox: &core.Result{Status: core.StatusOK, Stdout: longLine + "\n", ExecutionCount: 1}}
		}
	})
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.setCell(0, "print('"+longLine+"')")
	w.Do("run", chromedp.Click(chromedp.CSS(".cell .run")))
	w.Poll("cell ran", `document.querySelector('.cell .output').textContent.includes('xxxxxxxxxx')`)
	w.Do("ask", chromedp.Click(chromedp.ID("tab-assistant")), chromedp.SendKeys(chromedp.ID("question"), "long?"), chromedp.Click(chromedp.ID("ask")))
	w.Poll("answer", `!!document.querySelector('.turn .final .md')`)
	// Resize the open page from desktop to a phone, then check both views.
	w.Do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	for _, view := range []string{"assistant", "notebook"} {
		w.Do(view, chromedp.Click(chromedp.ID("tab-"+view)))
		if over := w.eval(overflowJS); over != "0" {
			t.Errorf("%s after a resize: the page is %s px wider than 390 px", view, over)
		}
		if iw := w.eval(`String(window.innerWidth)`); iw != "390" {
			t.Errorf("%s after a resize: the layout viewport is %s px (zoomed out), want 390", view, iw)
		}
	}
	w.Do("reload on the phone", chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	for _, view := range []string{"notebook", "assistant"} {
		w.Do(view, chromedp.Click(chromedp.ID("tab-"+view)))
		if view == "notebook" {
			w.Poll("restored", `document.querySelector('.cell .output').textContent.includes('xxxxxxxxxx')`)
		}
		if over := w.eval(overflowJS); over != "0" {
			t.Errorf("%s after a reload: the page is %s px wider than 390 px", view, over)
		}
	}
	if errs := w.JSErrors(); len(errs) > 0 {
		t.Fatalf("JavaScript errors: %v", errs)
	}
}

// kernelLike imitates the python kernel's two conventions for a cell's
// value: with Notebook the value comes once, as a result display (richest
// representation plus text/plain); without, it is printed and displayed.
func kernelLike(_ context.Context, call dispatcher.Call) dispatcher.Result {
	code := string(call.Arguments)
	bundle := map[string]string{"text/plain": "42"}
	if strings.Contains(code, "df") {
		bundle = map[string]string{"text/plain": "   month  sales\n0  jan   10 df-text-repr",
			"text/html": "<table class=\"dataframe\"><thead><tr><th></th><th>month</th><th>sales</th></tr></thead><tbody><tr><th>0</th><td>jan</td><td>10</td></tr></tbody></table>"}
	}
	sb := &core.Result{Status: core.StatusOK, ExecutionCount: 1}
	if call.Notebook {
		sb.Display = []core.Display{{Data: bundle, Result: true}}
	} else {
		sb.Stdout = bundle["text/plain"] + "\n"
		sb.Display = []core.Display{{Data: bundle}}
	}
	return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusOK, Content: "status: ok\n" + bundle["text/plain"], Sandbox: sb}
}

// TestBrowserValueShownOnce: `x + 1` shows 42 once and a DataFrame comes
// once, as its table (the cell runs with the notebook convention, so the
// server sends the value once).
func TestBrowserValueShownOnce(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, func(h *harness) { h.disp.run = kernelLike })
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.setCell(0, "x = 41\nx + 1")
	w.Do("run", chromedp.Click(chromedp.CSS(".cell .run")))
	w.Poll("ran", `document.querySelector('.cell').dataset.status === 'ok'`)
	w.Do("add a cell", chromedp.Click(chromedp.ID("add-cell")))
	w.setCell(1, "df")
	w.Do("run the DataFrame cell", chromedp.Click(chromedp.CSS(".cell:nth-child(2) .run")))
	w.Poll("ran", `document.querySelectorAll('.cell')[1].dataset.status === 'ok'`)
	if got := w.eval(`String(document.querySelectorAll('.cell')[0].querySelector('.output').textContent.split('42').length - 1)`); got != "1" {
		t.Errorf("42 is shown %s times, want once", got)
	}
	out := `document.querySelectorAll('.cell')[1].querySelector('.output')`
	if got := w.eval(`String(` + out + `.querySelectorAll('table').length) + ' ' + ` + out + `.textContent.includes('df-text-repr')`); got != "1 false" {
		t.Errorf("DataFrame: tables, text copy shown: %q, want one table and no text copy", got)
	}
	if !w.h.disp.lastCall().Notebook {
		t.Errorf("the cell's call lacks the notebook convention")
	}
}

// TestBrowserAnswerOnce: the model's last message is shown once, in the
// Answer box, not also as the last step's message.
func TestBrowserAnswerOnce(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, func(h *harness) { h.runs.script = answerScript })
	w.Do("ask", chromedp.SendKeys(chromedp.ID("question"), "what?"), chromedp.Click(chromedp.ID("ask")))
	w.Poll("answer", `!!document.querySelector('.turn .final .md') && document.getElementById('run-status').textContent.startsWith('done')`)
	if got := w.eval(`String(document.querySelector('.turn').textContent.split('unique-answer-text').length - 1)`); got != "1" {
		t.Errorf("the answer is shown %s times, want once", got)
	}
	w.Do("reload", chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	w.Poll("answer restored", `!!document.querySelector('.turn .final .md')`)
	if got := w.eval(`String(document.querySelector('.turn').textContent.split('unique-answer-text').length - 1)`); got != "1" {
		t.Errorf("after a reload the answer is shown %s times, want once", got)
	}
}

// TestBrowserCellTimeoutIsTheSessions: a cell's timeout is the session's
// own limit, named in the cell, and the UI sends none, so a 40 s cell
// (here: a call that times out when given any limit under 40 s) finishes.
func TestBrowserCellTimeoutIsTheSessions(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, func(h *harness) {
		h.disp.run = func(_ context.Context, call dispatcher.Call) dispatcher.Result {
			if call.Limits.Timeout > 0 && call.Limits.Timeout < 40*time.Second {
				return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusTimeout, Content: "timeout",
					Sandbox: &core.Result{Status: core.StatusTimeout, Stderr: "KeyboardInterrupt\n"}}
			}
			return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusOK, Content: "done",
				Sandbox: &core.Result{Status: core.StatusOK, Stdout: "slept 40 s\n", ExecutionCount: 1}}
		}
	})
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.setCell(0, "import time; time.sleep(40); print('slept 40 s')")
	w.Do("run", chromedp.Click(chromedp.CSS(".cell .run")))
	w.Poll("finished", `!!document.querySelector('.cell').dataset.status && document.querySelector('.cell').dataset.status !== 'running'`)
	if got := w.eval(`document.querySelector('.cell').dataset.status`); got != "ok" {
		t.Errorf("the 40 s cell ended %q, want ok", got)
	}
	if c := w.h.disp.lastCall(); c.Limits.Timeout != 0 {
		t.Errorf("the UI sent a timeout of %s; the session's own applies when it sends none", c.Limits.Timeout)
	}
	// The session's limit (the session call timeout, 2 minutes by default:
	// the UI opens its session with none) is named in the cell and in the
	// notebook's box.
	if got := w.eval(`document.querySelector('.cell .cell-timeout').placeholder + ' | ' + document.getElementById('nb-timeout').placeholder`); got != "120 s | 120 s" {
		t.Errorf("timeouts shown %q, want the session's 120 s in the cell and the notebook", got)
	}
	w.Do("reload", chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)), chromedp.Click(chromedp.ID("tab-notebook")))
	w.Poll("limit shown after a reload", `document.querySelector('.cell .cell-timeout').placeholder === '120 s'`)
}

// TestBrowserReloadReattaches: a reload while a cell runs does not stop
// it: the call runs on under its idempotency key, the reloaded page
// re-attaches to it and shows its output when it ends, and the variable
// it set exists afterwards.
func TestBrowserReloadReattaches(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	release := make(chan struct{})
	var mu sync.Mutex
	vars := map[string]bool{}
	cancelled := 0
	w := openWorkbench(t, 1200, 1000, func(h *harness) {
		h.disp.run = func(ctx context.Context, call dispatcher.Call) dispatcher.Result {
			code := string(call.Arguments)
			res := dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusOK, Content: "ok"}
			switch {
			case strings.Contains(code, "sleep"):
				select {
				case <-release:
				case <-ctx.Done():
					mu.Lock()
					cancelled++
					mu.Unlock()
					res.Status, res.Err, res.Content = dispatcher.StatusUnavailable, ctx.Err(), "cancelled"
					return res
				}
				mu.Lock()
				vars["v"] = true
				mu.Unlock()
				res.Sandbox = &core.Result{Status: core.StatusOK, Stdout: "slept and set v\n", ExecutionCount: 1}
			default:
				mu.Lock()
				set := vars["v"]
				mu.Unlock()
				if !set {
					res.Status = dispatcher.StatusError
					res.Sandbox = &core.Result{Status: core.StatusError, ExitCode: 1, Error: &core.ExecError{Name: "NameError", Value: "name 'v' is not defined"}}
				} else {
					res.Sandbox = &core.Result{Status: core.StatusOK, Stdout: "v is 7\n", ExecutionCount: 2}
				}
			}
			return res
		}
	})
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.setCell(0, "import time\nv = 7\ntime.sleep(10)\nprint('slept and set v')")
	w.Do("run", chromedp.Click(chromedp.CSS(".cell .run")))
	w.Poll("running", `document.querySelector('.cell').dataset.status === 'running' && new URLSearchParams(location.search).has('session')`)
	sid := w.eval(`new URLSearchParams(location.search).get('session')`)
	// The call and its key are saved with the cell before the reload.
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for !strings.Contains(string(w.h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/notebook", nil).Body), `"pending"`) {
		if time.Now().After(deadline) {
			t.Fatal("the running cell's call was never saved with the notebook")
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.Do("reload", chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)), chromedp.Click(chromedp.ID("tab-notebook")))
	w.Poll("re-attached", `document.querySelector('.cell').dataset.status === 'running'`)
	close(release)
	w.Poll("output after the call ended", `document.querySelector('.cell .output').textContent.includes('slept and set v') && document.querySelector('.cell').dataset.status === 'ok'`)
	mu.Lock()
	n := cancelled
	mu.Unlock()
	if n != 0 {
		t.Errorf("the reload cancelled the call %d times", n)
	}
	w.Do("add a cell", chromedp.Click(chromedp.ID("add-cell")))
	w.setCell(1, "print(f'v is {v}')")
	w.Do("run it", chromedp.Click(chromedp.CSS(".cell:nth-child(2) .run")))
	w.Poll("variable exists", `document.querySelectorAll('.cell')[1].querySelector('.output').textContent.includes('v is 7')`)
	var runs int
	w.h.disp.mu.Lock()
	for _, c := range w.h.disp.calls {
		if strings.Contains(string(c.Arguments), "sleep") {
			runs++
		}
	}
	w.h.disp.mu.Unlock()
	if runs != 1 {
		t.Errorf("the sleeping cell ran %d times, want once (re-attached, not re-run)", runs)
	}
}

// TestBrowserTwoTabsKeepBothCells: two tabs on one session each add a
// cell; both cells remain on the server and in both tabs (a save on a
// stale version merges instead of overwriting).
func TestBrowserTwoTabsKeepBothCells(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, nil)
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.setCell(0, "first = 1")
	w.Do("run", chromedp.Click(chromedp.CSS(".cell .run")))
	w.Poll("saved", `document.querySelector('.cell').dataset.status === 'ok' && document.getElementById('save-status').textContent.startsWith('saved')`)
	url := w.eval(`location.href`)
	sid := w.eval(`new URLSearchParams(location.search).get('session')`)
	tab2, cancel := chromedp.NewContext(w.Ctx)
	defer cancel()
	if err := chromedp.Do(tab2, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`))); err != nil {
		t.Fatalf("second tab: %v", err)
	}
	if _, err := chromedp.Run(tab2, chromedp.Poll[bool](`document.querySelectorAll('.cell .CodeMirror').length === 1`)); err != nil {
		t.Fatalf("second tab restored: %v", err)
	}
	// Tab 1 adds a cell and saves; then tab 2, which never saw it, adds its own.
	w.Do("tab 1 adds a cell", chromedp.Click(chromedp.ID("add-cell")))
	w.setCell(1, "added_in_tab_one = 1")
	w.Poll("tab 1 saved", `document.getElementById('save-status').textContent.startsWith('saved') && !document.querySelector('#cells').dataset.dirty`)
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for !strings.Contains(string(w.h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/notebook", nil).Body), "added_in_tab_one") {
		if time.Now().After(deadline) {
			t.Fatal("tab 1's cell was never saved")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := chromedp.Do(tab2, chromedp.Click(chromedp.ID("tab-notebook")), chromedp.Click(chromedp.ID("add-cell"))); err != nil {
		t.Fatal(err)
	}
	evalIn(t, tab2, `document.querySelectorAll('.cell .CodeMirror')[1].CodeMirror.setValue("added_in_tab_two = 2"), ''`)
	deadline = time.Now().Add(testscale.D(10 * time.Second))
	for {
		body := string(w.h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/notebook", nil).Body)
		if strings.Contains(body, "added_in_tab_two") {
			if !strings.Contains(body, "added_in_tab_one") || !strings.Contains(body, "first = 1") {
				t.Fatalf("tab 2's save dropped a cell: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("tab 2's cell was never saved")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cells := `[...document.querySelectorAll('.cell .CodeMirror')].map((e) => e.CodeMirror.getValue()).join(' | ')`
	if _, err := chromedp.Run(tab2, chromedp.Poll[bool](cells+` === "first = 1 | added_in_tab_one = 1 | added_in_tab_two = 2"`)); err != nil {
		t.Fatalf("tab 2 shows %q: %v", evalIn(t, tab2, cells), err)
	}
	// Tab 1 takes in tab 2's cell when it comes back into view.
	w.eval(`window.dispatchEvent(new Event('focus')), ''`)
	w.Poll("tab 1 shows both", cells+` === "first = 1 | added_in_tab_one = 1 | added_in_tab_two = 2"`)
}

// TestBrowserOneWorkspaceSession: the assistant and the notebook share one
// session by default: a file uploaded in the Assistant is listed in the
// Notebook's Files panel, the header names the session, the assistant's
// run uses it; restored cell editors render at full height.
func TestBrowserOneWorkspaceSession(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, nil)
	csv := filepath.Join(t.TempDir(), "sales.csv")
	if err := os.WriteFile(csv, []byte("month,sales\njan,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Do("upload in the assistant",
		chromedp.SetUploadFiles(chromedp.ID("upload-files"), []string{csv}),
		chromedp.Click(chromedp.ID("upload")),
	)
	w.Poll("uploaded", `document.querySelector('#uploaded').textContent.includes('sales.csv') && !document.querySelector('#uploaded').textContent.includes('uploading')`)
	w.Do("ask", chromedp.SendKeys(chromedp.ID("question"), "sum?"), chromedp.Click(chromedp.ID("ask")))
	w.Poll("answer", `!!document.querySelector('.turn .final .md')`)
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.Poll("listed in the notebook", `document.querySelector('#uploaded').textContent.includes('sales.csv')`)
	sid := w.eval(`new URLSearchParams(location.search).get('session') || ''`)
	if sid == "" {
		t.Fatal("no session in the URL after an upload in the Assistant")
	}
	if got := w.eval(`document.getElementById('session-label').textContent + ' | ' + document.getElementById('files-session').textContent`); strings.Count(got, sid) != 2 {
		t.Errorf("header and Files panel %q, want both to name %s", got, sid)
	}
	w.h.runs.mu.Lock()
	runSession := w.h.runs.lastReq.SessionID
	w.h.runs.mu.Unlock()
	if runSession != sid {
		t.Errorf("the assistant ran in %q, the notebook's session is %q", runSession, sid)
	}
	// Restored cells' editors have their full height.
	w.setCell(0, "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6")
	w.Poll("saved", `document.getElementById('save-status').textContent.startsWith('saved')`)
	w.Do("reload in the assistant", chromedp.Navigate(w.url+"/?session="+sid), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	w.Poll("files of the shared session", `document.querySelector('#uploaded').textContent.includes('sales.csv')`)
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.Poll("editor at full height", `(() => { const e = document.querySelector('.cell .CodeMirror'); return !!e && e.CodeMirror.getValue().startsWith('a = 1') && e.getBoundingClientRect().height >= 6 * 16; })()`)
	if errs := w.JSErrors(); len(errs) > 0 {
		t.Fatalf("JavaScript errors: %v", errs)
	}
}

// TestBrowserCellControl: the notebook's toolbar stays in view while a
// lower cell runs, the running cell has its own Stop (an interrupt that
// ends it), and the Files panel shows a file a cell wrote without a
// manual refresh.
func TestBrowserCellControl(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 700, nil)
	h := w.h
	h.disp.run = func(ctx context.Context, call dispatcher.Call) dispatcher.Result {
		code := string(call.Arguments)
		res := dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusOK, Content: "ok",
			Sandbox: &core.Result{Status: core.StatusOK, ExecutionCount: 1}}
		switch {
		case strings.Contains(code, "sleep"):
			h.sess.mu.Lock()
			h.sess.busy[call.SessionID] = true
			h.sess.mu.Unlock()
			defer func() { h.sess.mu.Lock(); h.sess.busy[call.SessionID] = false; h.sess.mu.Unlock() }()
			for {
				h.sess.mu.Lock()
				n := h.sess.interrupts
				h.sess.mu.Unlock()
				if n > 0 {
					res.Status = dispatcher.StatusError
					res.Sandbox = &core.Result{Status: core.StatusError, ExitCode: 130, Error: &core.ExecError{Name: "KeyboardInterrupt", Value: ""}}
					return res
				}
				select {
				case <-ctx.Done():
					res.Status, res.Err = dispatcher.StatusUnavailable, ctx.Err()
					return res
				case <-time.After(20 * time.Millisecond):
				}
			}
		case strings.Contains(code, "to_csv"):
			h.sess.mu.Lock()
			h.sess.files[call.SessionID+"/written_by_cell.csv"] = []byte("a,b\n")
			h.sess.mu.Unlock()
		}
		return res
	}
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.setCell(0, "df.to_csv('written_by_cell.csv')")
	w.Do("run", chromedp.Click(chromedp.CSS(".cell .run")))
	w.Poll("the Files panel lists the file", `document.querySelector('#uploaded').textContent.includes('written_by_cell.csv')`)
	for i := 1; i < 8; i++ {
		w.Do("add a cell", chromedp.Click(chromedp.ID("add-cell")))
		w.setCell(i, "x = 1\ny = 2\nz = 3\n")
	}
	w.setCell(7, "import time\ntime.sleep(60)")
	w.eval(`document.querySelectorAll('.cell')[7].querySelector('.run').click(), ''`)
	w.Poll("running", `document.querySelectorAll('.cell')[7].dataset.status === 'running'`)
	w.eval(`document.querySelectorAll('.cell')[7].scrollIntoView({block: 'end'}), ''`)
	if got := w.eval(`(() => { const r = document.querySelector('.kernel-bar').getBoundingClientRect(); return String(window.scrollY > 0) + ' ' + String(r.top >= -1 && r.bottom <= innerHeight); })()`); got != "true true" {
		t.Errorf("scrolled, toolbar in view: %q, want the toolbar to stay in view", got)
	}
	if got := w.eval(`String(!document.querySelectorAll('.cell')[7].querySelector('.stop').hidden) + ' ' + String(document.querySelectorAll('.cell')[0].querySelector('.stop').hidden)`); got != "true true" {
		t.Errorf("Stop shown on the running cell, hidden on an idle one: %q", got)
	}
	w.eval(`document.querySelectorAll('.cell')[7].querySelector('.stop').click(), ''`)
	w.Poll("stopped", `document.querySelectorAll('.cell')[7].dataset.status === 'error' && document.querySelectorAll('.cell')[7].querySelector('.output').textContent.includes('KeyboardInterrupt')`)
}

// ApproveFor runs the held fake call: it answers as if the cell ran.
func (f *fakeDispatcher) ApproveFor(_ context.Context, owner, token string) (dispatcher.Call, dispatcher.Result, error) {
	if token != "tok-1" || owner != "alice" {
		return dispatcher.Call{}, dispatcher.Result{}, dispatcher.ErrApprovalNotFound
	}
	call := f.lastCall()
	return call, dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusOK, Content: "ran",
		Sandbox: &core.Result{Status: core.StatusOK, Stdout: "approved and ran\n", ExecutionCount: 3}}, nil
}

// RejectFor resolves the held fake call without running it.
func (f *fakeDispatcher) RejectFor(_ context.Context, owner, token, reason string) (dispatcher.Call, dispatcher.Result, error) {
	if token != "tok-1" || owner != "alice" {
		return dispatcher.Call{}, dispatcher.Result{}, dispatcher.ErrApprovalNotFound
	}
	call := f.lastCall()
	return call, dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusRejected, Reason: "approval_rejected", Content: "rejected: " + reason}, nil
}

// TestBrowserCellApproval: with approvals on, a notebook cell held at
// pending_approval is approved in place and shows its output.
func TestBrowserCellApproval(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, nil)
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.setCell(0, "# approval needed\nprint('hi')")
	w.Do("run", chromedp.Click(chromedp.CSS(".cell .run")))
	w.Poll("held", `document.querySelector('.cell').dataset.status === 'pending_approval' && !!document.querySelector('.cell .approval .approve')`)
	if f := w.eval(`document.activeElement.className`); f != "reject" {
		t.Errorf("focused %q, want Reject", f)
	}
	w.Do("approve", chromedp.Click(chromedp.CSS(".cell .approval .approve")))
	w.Poll("ran", `document.querySelector('.cell').dataset.status === 'ok' && document.querySelector('.cell .output').textContent.includes('approved and ran') && document.querySelector('.cell .exec-count').textContent === '[3]'`)
	// Another key cannot decide alice's held call.
	r := w.h.do(keyBob, "POST", "/v1/tool-calls/approvals/tok-1", map[string]any{"approve": true})
	if r.Code != 404 {
		t.Errorf("bob deciding alice's call: %d %s, want 404", r.Code, r.Body)
	}
}

// sortScript answers with a Markdown table.
func sortScript(agent.RunRequest) [][]wire.RunEvent {
	answer := "Sales:\n\n| month | sales |\n|---|---|\n| feb | 9 |\n| jan | 120 |\n| mar | 30 |\n"
	return [][]wire.RunEvent{{
		ev(wire.EventStepStarted, 1, map[string]any{}),
		ev(wire.EventFinalAnswer, 1, map[string]any{"content": answer}),
		ev(wire.EventRunFinished, 1, map[string]any{"status": "done", "steps": 1, "final_answer": answer}),
	}}
}

// TestBrowserAnswerTableSorts: a table in an answer sorts by a column on
// a click of its header, numbers as numbers.
func TestBrowserAnswerTableSorts(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, func(h *harness) { h.runs.script = sortScript })
	w.Do("ask", chromedp.SendKeys(chromedp.ID("question"), "sales?"), chromedp.Click(chromedp.ID("ask")))
	w.Poll("answer", `!!document.querySelector('.turn .final table th button.sort')`)
	col := `[...document.querySelectorAll('.turn .final tbody tr')].map((r) => r.children[0].textContent).join(',')`
	w.eval(`document.querySelectorAll('.turn .final th button.sort')[1].click(), ''`)
	if got := w.eval(col); got != "feb,mar,jan" {
		t.Errorf("sorted by sales ascending: %s", got)
	}
	w.eval(`document.querySelectorAll('.turn .final th button.sort')[1].click(), ''`)
	if got := w.eval(col + ` + ' ' + document.querySelectorAll('.turn .final th')[1].getAttribute('aria-sort')`); got != "jan,mar,feb descending" {
		t.Errorf("sorted by sales descending: %s", got)
	}
}

// TestBrowserMarkdownCell: a Markdown cell renders (sanitised) without a
// call to the server, and renders again after a reload.
func TestBrowserMarkdownCell(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, nil)
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.setCell(0, "print(1)")
	w.Do("run", chromedp.Click(chromedp.CSS(".cell .run")))
	w.Poll("ran", `document.querySelector('.cell').dataset.status === 'ok'`)
	w.h.disp.mu.Lock()
	before := len(w.h.disp.calls)
	w.h.disp.mu.Unlock()
	w.Do("add a Markdown cell", chromedp.Click(chromedp.ID("add-md-cell")))
	w.setCell(1, "# Findings\n\nSales **rose**.<img src=x onerror=\"window.pwned = 1\">")
	w.eval(`document.querySelectorAll('.cell')[1].querySelector('.run').click(), ''`)
	w.Poll("rendered", `!!document.querySelectorAll('.cell')[1].querySelector('.output .md h1')`)
	w.Poll("saved", `document.getElementById('save-status').textContent.startsWith('saved')`)
	time.Sleep(700 * time.Millisecond) // the debounced save (not a timing assertion on the product)
	w.Poll("saved", `document.getElementById('save-status').textContent.startsWith('saved')`)
	w.h.disp.mu.Lock()
	after := len(w.h.disp.calls)
	w.h.disp.mu.Unlock()
	if after != before {
		t.Errorf("a Markdown cell made %d calls", after-before)
	}
	w.Do("reload", chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)), chromedp.Click(chromedp.ID("tab-notebook")))
	w.Poll("rendered after a reload", `document.querySelectorAll('.cell').length === 2 && !!document.querySelectorAll('.cell')[1].querySelector('.output .md strong') && document.querySelectorAll('.cell')[1].querySelector('.lang').value === 'markdown'`)
	if got := w.eval(`String(window.pwned)`); got != "undefined" {
		t.Errorf("a handler in a Markdown cell ran: %s", got)
	}
}

// TestBrowserIpynb: a Jupyter notebook imports as cells (Markdown, Python,
// %%bash as shell) and the cells export as nbformat 4 with their outputs.
func TestBrowserIpynb(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, func(h *harness) { h.disp.run = kernelLike })
	nb := filepath.Join(t.TempDir(), "analysis.ipynb")
	src := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
 {"cell_type": "markdown", "metadata": {}, "source": ["# Imported\n", "text"]},
 {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [], "source": ["x = 41\n", "x + 1"]},
 {"cell_type": "code", "metadata": {}, "execution_count": null, "outputs": [], "source": "%%bash\nls -la"}]}`
	if err := os.WriteFile(nb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.eval(`document.querySelector('.cell .delete').click(), ''`) // the starter cell
	w.Do("import", chromedp.SetUploadFiles(chromedp.ID("import-ipynb"), []string{nb}))
	w.Poll("imported", `document.querySelectorAll('.cell').length === 3`)
	if got := w.eval(`[...document.querySelectorAll('.cell')].map((c) => c.querySelector('.lang').value + ':' + c.querySelector('.CodeMirror').CodeMirror.getValue().split('\n')[0]).join(' | ')`); got != "markdown:# Imported | python:x = 41 | shell:ls -la" {
		t.Errorf("imported cells: %q", got)
	}
	w.eval(`document.querySelectorAll('.cell')[1].querySelector('.run').click(), ''`)
	w.Poll("ran", `document.querySelectorAll('.cell')[1].dataset.status === 'ok'`)
	// Export: catch the file the page hands to the browser.
	w.eval(`URL.createObjectURL = (b) => { b.text().then((t) => { window.exported = t; }); return 'blob:caught'; }, ''`)
	w.Do("export", chromedp.Click(chromedp.ID("export-ipynb")))
	w.Poll("exported", `typeof window.exported === 'string'`)
	var got struct {
		NBFormat int `json:"nbformat"`
		Cells    []struct {
			CellType string   `json:"cell_type"`
			Source   []string `json:"source"`
			Outputs  []struct {
				OutputType string              `json:"output_type"`
				Data       map[string][]string `json:"data"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal([]byte(w.eval(`window.exported`)), &got); err != nil {
		t.Fatalf("export is not JSON: %v", err)
	}
	if got.NBFormat != 4 || len(got.Cells) != 3 || got.Cells[0].CellType != "markdown" || got.Cells[2].Source[0] != "%%bash\n" {
		t.Fatalf("export: %+v", got)
	}
	if o := got.Cells[1].Outputs; len(o) != 1 || o[0].OutputType != "execute_result" || strings.Join(o[0].Data["text/plain"], "") != "42" {
		t.Errorf("the value's output: %+v", o)
	}
}

// TestBrowserConversationList: past conversations are listed and one
// reopens with its questions and answers.
func TestBrowserConversationList(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 1000, nil)
	ask := func(q string) {
		t.Helper()
		w.eval(`document.getElementById('question').value = '', ''`)
		w.Do("ask "+q, chromedp.SendKeys(chromedp.ID("question"), q), chromedp.Click(chromedp.ID("ask")))
		w.Poll("answer to "+q, `document.querySelectorAll('.turn').length === 1 && !!document.querySelector('.turn .final .md') && document.querySelector('.turn .question-text').textContent === '`+q+`'`)
	}
	ask("first question")
	w.Do("new conversation", chromedp.Click(chromedp.ID("new-conversation")))
	ask("second question")
	w.Poll("listed", `document.querySelectorAll('#convs li').length === 2 && !document.getElementById('convs-box').hidden`)
	if got := w.eval(`[...document.querySelectorAll('#convs li button')].map((b) => b.textContent).join(' | ')`); got != "second question | first question" {
		t.Errorf("listed %q, newest first", got)
	}
	w.Do("open the list", chromedp.Click(chromedp.CSS("#convs-box summary")))
	w.Do("reopen the first", chromedp.Click(chromedp.CSS("#convs li:nth-child(2) button")))
	w.Poll("first conversation shown", `document.querySelectorAll('.turn').length === 1 && document.querySelector('.turn .question-text').textContent === 'first question' && !!document.querySelector('.turn .final .md')`)
}
