package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/browsertest"
	"github.com/airlock-dev/airlock/wire"
)

// markdownScript answers in Markdown with a <script> that must not run,
// then waits for an approval (of rm -rf) before finishing.
func markdownScript(req agent.RunRequest) [][]wire.RunEvent {
	return [][]wire.RunEvent{
		{
			ev(wire.EventStepStarted, 1, map[string]any{}),
			ev(wire.EventApprovalNeeded, 1, map[string]any{"token": "apv-9", "id": "call_9", "name": "execute_shell", "arguments": `{"command":"rm -rf /work/old"}`}),
		},
		{
			ev(wire.EventToolResult, 1, map[string]any{"id": "call_9", "name": "execute_shell", "status": "rejected", "reason": "not now"}),
			ev(wire.EventFinalAnswer, 1, map[string]any{"content": "The best month was **2024-11**.\n\n| month | sales |\n|---|---|\n| 2024-11 | 99 |\n\n<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">"}),
			ev(wire.EventRunFinished, 1, map[string]any{"status": "done", "steps": 1}),
		},
	}
}

// TestBrowserWorkbench: Shift+Enter runs a cell and moves on; a DataFrame's
// HTML bundle renders as a table; a reload and a second tab restore the
// session's cells and outputs from the URL; Markdown renders while a
// <script> in model output does not run; the approval card focuses Reject
// and takes a reason; text contrast is AA in both themes; 390 px has no
// page overflow. Screenshots go to $AIRLOCK_SCREENSHOTS when set.
func TestBrowserWorkbench(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	br := chromium.Start(t, 1200, 1400, 3*time.Minute)
	h := newHarness(t, nil)
	table := "<table class=\"dataframe\"><thead><tr><th></th><th>month</th><th>sales</th></tr></thead><tbody>"
	for i := range 60 {
		table += fmt.Sprintf("<tr><th>%d</th><td>2024-%02d</td><td>%d</td></tr>", i, i%12+1, 100+i)
	}
	table += "</tbody></table>"
	h.disp.run = func(ctx context.Context, call dispatcher.Call) dispatcher.Result {
		code := string(call.Arguments)
		sb := &core.Result{Status: core.StatusOK, ExecutionCount: 1}
		switch {
		case strings.Contains(code, "df"):
			sb.ExecutionCount = 2
			sb.Display = []core.Display{{Data: map[string]string{"text/html": table, "text/plain": "repr"}}}
			sb.Stderr = "FutureWarning: something will change\n"
		case strings.Contains(code, "find"):
			sb.Stdout = "12\tdata.csv\n"
		default:
			sb.Stdout = "hello\n"
		}
		return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusOK, Content: "status: ok --- model text", Sandbox: sb}
	}
	h.runs.mu.Lock()
	h.runs.script = markdownScript
	h.runs.mu.Unlock()
	ts := httptest.NewServer(h.srv)
	defer browsertest.CloseServer(ts)
	ctx := br.Ctx
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	shots := os.Getenv("AIRLOCK_SCREENSHOTS")
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100) /* 100: PNG */)
		if err != nil {
			t.Fatal(err)
		}
		dir := shots
		if dir == "" || !strings.HasPrefix(name, "ui") || strings.Contains(name, "narrow") {
			dir = browsertest.ArtifactDir(t)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	br.Do("open the notebook",
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("key-input")),
		chromedp.SendKeys(chromedp.ID("key-input"), keyAlice),
		chromedp.Click(chromedp.ID("key-save")),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.Click(chromedp.ID("welcome-close")),
		chromedp.Click(chromedp.ID("tab-notebook")),
	)
	// Shift+Enter in the first cell: it runs, and the focus moves to a new
	// (Python) cell, where Shift+Enter runs the DataFrame cell.
	eval(`document.querySelector('.cell .CodeMirror').CodeMirror.setValue("print('hello')"), document.querySelector('.cell .CodeMirror').CodeMirror.focus(), ''`)
	shiftEnter := func() {
		t.Helper()
		// A raw key press, as a keyboard sends it (chromedp.KeyEvent adds a
		// separate "char" event that no page can cancel).
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: typ, Key: "Enter", Code: "Enter",
				WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Modifiers: 8 /* Shift */}); err != nil {
				t.Fatalf("shift+enter: %v", err)
			}
		}
	}
	shiftEnter()
	br.Poll("first cell ran, a second cell has the focus", `document.querySelectorAll('.cell').length === 2 && document.querySelectorAll('.cell')[1].contains(document.activeElement) && document.querySelector('.cell .output').textContent.includes('hello')`)
	br.Do("type the second cell", chromedp.KeyEvent("df"))
	shiftEnter()
	br.Poll("table rendered", `!!document.querySelector('.cells, #cells') && !!document.querySelectorAll('.cell')[1].querySelector('.table-wrap table')`)
	if got := eval(`String(document.querySelectorAll('.cell')[1].querySelectorAll('tbody tr:not([hidden])').length) + ' ' + document.querySelectorAll('.cell')[1].querySelector('.exec-count').textContent + ' ' + !!document.querySelector('.cell pre.stderr.warning') + ' ' + document.getElementById('cells').textContent.includes('model text')`); got != "50 [2] true false" {
		t.Fatalf("visible rows, count, amber warning, model text: %q", got)
	}
	br.Do("show all", chromedp.Click(chromedp.CSS(".cell .show-all")))
	if got := eval(`String(document.querySelectorAll('.cell')[1].querySelectorAll('tbody tr:not([hidden])').length)`); got != "60" {
		t.Fatalf("rows after show all: %s", got)
	}
	url := eval(`location.href`)
	if !strings.Contains(url, "session=ses_") {
		t.Fatalf("URL lacks the session: %s", url)
	}
	sid := eval(`new URLSearchParams(location.search).get('session')`)
	if label := eval(`document.getElementById('session-label').textContent`); !strings.Contains(label, sid) {
		t.Fatalf("label %q lacks the full id %s", label, sid)
	}
	br.Poll("saved", `document.getElementById('save-status').textContent.startsWith('saved')`)
	shot("ui-notebook.png")

	// A reload restores cells and outputs; so does a second tab.
	br.Do("reload", chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	br.Poll("restored", `document.querySelectorAll('.cell').length >= 2 && !!document.querySelector('.cell .table-wrap table') && document.querySelector('.cell .CodeMirror').CodeMirror.getValue() === "print('hello')" && document.querySelectorAll('.cell .CodeMirror')[1].CodeMirror.getValue() === "df"`)
	tab2, cancel2 := chromedp.NewContext(ctx)
	defer cancel2()
	if err := chromedp.Do(tab2, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`))); err != nil {
		t.Fatalf("second tab: %v", err)
	}
	if _, err := chromedp.Run(tab2, chromedp.Poll[bool](`document.querySelectorAll('.cell').length >= 2 && document.querySelector('.cell .output').textContent.includes('hello')`)); err != nil {
		t.Fatalf("second tab: %v", err)
	}

	// The assistant: Reject is focused, the reason travels, Markdown renders
	// and the <script> does not run.
	br.Do("ask",
		chromedp.Click(chromedp.ID("tab-assistant")),
		chromedp.SendKeys(chromedp.ID("question"), "Which month had the highest sales?"),
		chromedp.Click(chromedp.ID("ask")),
		chromedp.WaitVisible(chromedp.CSS(".approval .reject")),
	)
	if f := eval(`document.activeElement.className`); f != "reject" {
		t.Fatalf("focused %q, want the Reject button", f)
	}
	br.Do("reject with a reason",
		chromedp.SendKeys(chromedp.CSS(".approval .reason"), "not now"),
		chromedp.Click(chromedp.CSS(".approval .reject")),
	)
	br.Poll("answer", `!!document.querySelector('.turn .final .md strong')`)
	time.Sleep(300 * time.Millisecond) // an onerror handler would have run by now (not a timing assertion on the product)
	if got := eval(`String(window.pwned) + ' ' + document.querySelector('.turn .final .md strong').textContent + ' ' + !!document.querySelector('.turn .final table') + ' ' + document.querySelectorAll('.turn .final').length + ' ' + document.querySelector('.approval').dataset.state`); got != "undefined 2024-11 true 1 rejected" {
		t.Fatalf("pwned, bold, table, answers, card state: %q", got)
	}
	shot("ui.png")

	// Contrast: every visible text element is AA against its background, in
	// both themes.
	for _, theme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}}}); err != nil {
			t.Fatal(err)
		}
		if bad := eval(contrastJS); bad != "" {
			t.Errorf("%s theme: text under 4.5:1: %s", theme, bad)
		}
	}
	// 390 px: no sideways scroll of the page.
	br.Do("narrow", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)), chromedp.Click(chromedp.ID("tab-notebook")))
	br.Poll("restored narrow", `!!document.querySelector('.cell .table-wrap table')`)
	if over := eval(`String(document.documentElement.scrollWidth - document.documentElement.clientWidth)`); over != "0" {
		t.Errorf("page is %spx wider than 390 px", over)
	}
	shot("ui-narrow.png")
	if errs := br.JSErrors(); len(errs) > 0 {
		t.Fatalf("JavaScript errors: %v", errs)
	}
}

// contrastJS lists visible text elements whose colour is under 4.5:1
// against the first opaque background behind them.
const contrastJS = `(() => {
  const parse = (c) => { const m = c.match(/[\d.]+/g) || [0,0,0,0]; return m.map(Number).concat(m.length < 4 ? [1] : []); };
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const bg = (e) => { for (; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c[3] > 0.5) return c; } return parse(getComputedStyle(document.body).backgroundColor); };
  const bad = [];
  for (const e of document.querySelectorAll('body *')) {
    if (!e.offsetParent || e.closest('[hidden], .CodeMirror, img, svg')) continue;
    if (![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    const s = getComputedStyle(e);
    if (parseFloat(s.opacity) < 1 || e.disabled) continue;
    const a = lum(parse(s.color)), b = lum(bg(e));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) bad.push(e.tagName + '.' + e.className + ' ' + ratio.toFixed(2) + ' "' + e.textContent.trim().slice(0, 20) + '"');
  }
  return bad.slice(0, 8).join('; ');
})()`
