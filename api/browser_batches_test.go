package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/browsertest"
	"github.com/airlock-dev/airlock/wire"
)

// gatedItems is a dispatcher for batch items that the test paces: each
// call waits for a token on release. A call whose context ends (a cancel)
// waits for stopped to close before it returns, so the batch is seen
// "cancelling" for as long as the test needs. Code "n = N" prints
// "lines N*10" and takes 100+10N ms; code with "boom" fails on the first
// attempt.
type gatedItems struct {
	release chan struct{}
	stopped chan struct{}
	mu      sync.Mutex
	calls   []dispatcher.Call
}

var itemN = regexp.MustCompile(`n = (\d+)`)

func (g *gatedItems) run(ctx context.Context, call dispatcher.Call) dispatcher.Result {
	g.mu.Lock()
	g.calls = append(g.calls, call)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
		<-g.stopped
		return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusError, Content: "stopped",
			Sandbox: &core.Result{Status: core.StatusError, ExitCode: -1, Message: "stopped"}}
	}
	var args struct{ Code string }
	_ = json.Unmarshal(call.Arguments, &args)
	n := 0
	if m := itemN.FindStringSubmatch(args.Code); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	sb := &core.Result{Status: core.StatusOK, Stdout: fmt.Sprintf("lines %d\nfiles %d\n", n*10, n), DurationMS: int64(100 + 10*n)}
	if strings.Contains(args.Code, "boom") && strings.HasSuffix(call.IdempotencyKey, "/1") {
		sb.Status, sb.ExitCode, sb.Stdout = core.StatusError, 1, ""
		sb.Stderr = "Traceback (most recent call last):\n  File \"<cell>\", line 1\nZeroDivisionError: division by zero\n"
	}
	return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.Status(sb.Status), Content: "status: " + string(sb.Status), Sandbox: sb, DurationMS: sb.DurationMS}
}

// batchLine is one JSONL item running code.
func batchLine(id, code string) string {
	b, _ := json.Marshal(map[string]any{"custom_id": id, "tool_call": map[string]any{"type": "function",
		"function": map[string]any{"name": "run_python", "arguments": map[string]any{"code": code}}}})
	return string(b) + "\n"
}

// TestBrowserBatches drives the Batches view in real Chromium against a
// server with the real batch manager (memory store) and a paced fake
// dispatcher: a bad JSONL file is refused naming its line; a dropped file
// (a synthetic DataTransfer) is submitted; the list's progress bar moves
// live from the SSE stream while items finish; the drill-down lists the
// items, filters the errors and shows one item in full; results, errors
// and the report download with the API key and match the API; Retry
// failed reruns the failed item; Cancel shows "cancelling" and then
// "cancelled"; text contrast is AA in both themes and 390 px has no page
// overflow. The screenshot goes to $AIRLOCK_SCREENSHOTS/ui-batches.png.
func TestBrowserBatches(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	br := chromium.Start(t, 1200, 1400, 3*time.Minute)
	g := &gatedItems{release: make(chan struct{}), stopped: make(chan struct{})}
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { close(g.stopped) }) }
	defer stop()
	h := newHarness(t, func(_ *Config, d *Deps) {
		d.BatchConfig = batch.Config{LeaseTTL: time.Second} // progress every 200 ms
	})
	h.disp.run = g.run
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
	release := func(n int) {
		t.Helper()
		for range n {
			select {
			case g.release <- struct{}{}:
			case <-ctx.Done():
				t.Fatal("no batch item took a release token")
			}
		}
	}
	downloads := t.TempDir()
	br.AllowDownloads(downloads)
	downloaded := func(name string) []byte {
		t.Helper()
		p := filepath.Join(downloads, name)
		for ctx.Err() == nil {
			if b, err := os.ReadFile(p); err == nil {
				if _, err := os.Stat(p + ".crdownload"); os.IsNotExist(err) {
					return b
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s was not downloaded", name)
		return nil
	}

	br.Do("open the batches view",
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("key-input")),
		chromedp.SendKeys(chromedp.ID("key-input"), keyAlice),
		chromedp.Click(chromedp.ID("key-save")),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.Click(chromedp.ID("welcome-close")),
		chromedp.Click(chromedp.ID("tab-batches")),
	)
	br.Poll("empty list", `document.getElementById('batches-status').textContent.includes('No batches yet')`)

	// A bad file from the picker: refused, naming the line.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(batchLine("ok", "n = 1")+`{"custom_id":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	br.Do("submit a bad file", chromedp.SetUploadFiles(chromedp.ID("batch-file"), []string{bad}), chromedp.Click(chromedp.ID("batch-submit")))
	br.Poll("refusal shown", `document.getElementById('batch-submit-status').className === 'error'`)
	if msg := eval(`document.getElementById('batch-submit-status').textContent`); !strings.Contains(msg, "bad.jsonl") || !strings.Contains(msg, "line 2") {
		t.Fatalf("refusal %q does not name the file and line 2", msg)
	}

	// The good file is dropped (a synthetic drop with a DataTransfer).
	var jsonl strings.Builder
	for i := 1; i <= 6; i++ {
		code := fmt.Sprintf("n = %d; print(count())", i)
		if i == 4 {
			code = "n = 4; boom = 1 / 0"
		}
		jsonl.WriteString(batchLine(fmt.Sprintf("repo-%02d", i), code))
	}
	text, _ := json.Marshal(jsonl.String())
	drop := fmt.Sprintf(`(() => { const dt = new DataTransfer(); dt.items.add(new File([%s], 'repos.jsonl', {type: 'application/jsonl'}));
		const f = document.getElementById('batch-form');
		for (const t of ['dragenter', 'dragover', 'drop']) f.dispatchEvent(new DragEvent(t, {dataTransfer: dt, bubbles: true, cancelable: true}));
		return document.getElementById('batch-submit-status').textContent; })()`, text)
	if st := eval(drop); !strings.Contains(st, "repos.jsonl") || !strings.Contains(st, "ready") {
		t.Fatalf("after the drop: %q", st)
	}
	br.Do("submit the dropped file", chromedp.SendKeys(chromedp.ID("batch-concurrency"), "2"), chromedp.Click(chromedp.ID("batch-submit")))
	br.Poll("batch created and open", `document.querySelectorAll('#batches tbody tr[data-batch-id]').length === 1 && !document.getElementById('batch-detail').hidden`)
	id := eval(`document.querySelector('#batches tbody tr').dataset.batchId`)
	api := h.do(keyAlice, "GET", "/v1/batches/"+id, nil).must(t, http.StatusOK).JSON(t)
	if api["concurrency"] != 2.0 || api["request_counts"].(map[string]any)["total"] != 6.0 {
		t.Fatalf("created batch %v: want concurrency 2 and 6 items", api)
	}
	row := `document.querySelector('#batches tr[data-batch-id="` + id + `"]')`
	progress := func() string {
		return eval(`(() => { const r = ` + row + `; const p = r.querySelector('progress'); return p.value + '/' + p.max + ' ' + r.dataset.status; })()`)
	}
	if got := progress(); got != "0/6 in_progress" {
		t.Fatalf("progress before any item finished: %q", got)
	}

	// Three items finish: the bar moves without a reload, from the stream.
	release(3)
	br.Poll("3 of 6 done", row+`.querySelector('progress').value === 3`)
	// Which three ran depends on which waiting call took a token; repo-04
	// may be among them.
	if got := eval(`String(batchUI.streams.has('` + id + `')) + ' ' + String(batchUI.poll) + ' ' + ` + row + `.querySelector('.counts').textContent`); got != "true null  3 of 6 done (50%) · 3 ok · 0 failed" && got != "true null  3 of 6 done (50%) · 2 ok · 1 failed" {
		t.Fatalf("stream, poll, counts: %q", got)
	}
	br.Poll("the open item table follows", `document.querySelectorAll('#batch-items tbody tr').length === 3`)
	release(3)
	br.Poll("completed", row+`.dataset.status === 'completed' && document.querySelectorAll('#batch-items tbody tr').length === 6`)
	if got := progress(); got != "6/6 completed" {
		t.Fatalf("progress at the end: %q", got)
	}
	if got := eval(`document.getElementById('batch-counts').textContent + ' | ' + document.getElementById('batch-retry').disabled + ' ' + document.getElementById('batch-cancel').disabled`); got != "6 of 6 done (100%) · 5 ok · 1 failed | false true" {
		t.Fatalf("detail counts and buttons: %q", got)
	}
	itemCells := func(custom string) string {
		return eval(`[...document.querySelector('#batch-items tr[data-custom-id="` + custom + `"]').children].map((c) => c.textContent.trim()).join('|')`)
	}
	if got := itemCells("repo-03"); got != "repo-03|n = 3; print(count())|ok|130 ms|0|lines 30" {
		t.Fatalf("item row repo-03: %q", got)
	}
	if got := itemCells("repo-04"); got != "repo-04|n = 4; boom = 1 / 0|error|140 ms|1|ZeroDivisionError: division by zero" {
		t.Fatalf("item row repo-04: %q", got)
	}

	// Errors only, then the failed item in full.
	br.Do("errors only", chromedp.Click(chromedp.ID("batch-errors-only")))
	br.Poll("one failed item", `document.querySelectorAll('#batch-items tbody tr').length === 1`)
	br.Do("open the failed item", chromedp.Click(chromedp.CSS(`#batch-items tr[data-custom-id="repo-04"] button`)))
	br.Poll("item shown", `!document.getElementById('batch-item').hidden`)
	if got := eval(`document.getElementById('batch-item-title').textContent + ' | ' + document.querySelector('#batch-item-body .badge').textContent + ' | ' + document.querySelector('#batch-item-body pre.stderr').textContent.trim().split('\n').pop() + ' | ' + document.querySelector('#batch-item-body .result-head').textContent`); got != "Item repo-04 | error | ZeroDivisionError: division by zero | error exit 1 · 140 ms" {
		t.Fatalf("item view: %q", got)
	}
	if got := eval(`document.querySelector('#batch-item-body .item-code').textContent`); got != "Coden = 4; boom = 1 / 0" {
		t.Errorf("item code: %q", got)
	}
	shots := os.Getenv("AIRLOCK_SCREENSHOTS")
	shot := func(name string, docs bool) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		dir := shots
		if dir == "" || !docs {
			dir = browsertest.ArtifactDir(t)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	br.Do("all items again", chromedp.Click(chromedp.ID("batch-errors-only")))
	br.Poll("six items", `document.querySelectorAll('#batch-items tbody tr').length === 6 && document.querySelector('#batch-items tr.selected') !== null`)
	shot("ui-batches.png", true)

	// Downloads carry the key (the routes answer 401 without it) and match
	// the API's answers.
	br.Do("download results, errors and report",
		chromedp.Click(chromedp.ID("batch-dl-results")),
		chromedp.Click(chromedp.ID("batch-dl-errors")),
		chromedp.Click(chromedp.ID("batch-dl-report")),
	)
	for _, f := range []struct{ route, file string }{{"results", "results.jsonl"}, {"errors", "errors.jsonl"}} {
		got := downloaded(id + "-" + f.file)
		want := h.do(keyAlice, "GET", "/v1/batches/"+id+"/"+f.route, nil).must(t, http.StatusOK).Body
		if string(got) != string(want) {
			t.Errorf("%s: downloaded\n%s\nwant\n%s", f.file, got, want)
		}
	}
	var lines []wire.BatchLine
	for _, l := range strings.Split(strings.TrimSpace(string(downloaded(id+"-results.jsonl"))), "\n") {
		var bl wire.BatchLine
		if err := json.Unmarshal([]byte(l), &bl); err != nil {
			t.Fatalf("results line %q: %v", l, err)
		}
		lines = append(lines, bl)
	}
	if len(lines) != 6 {
		t.Fatalf("results.jsonl has %d lines, want 6", len(lines))
	}
	for _, l := range lines {
		n, _ := strconv.Atoi(strings.TrimPrefix(l.CustomID, "repo-"))
		if want := fmt.Sprintf("lines %d\n", n*10); l.CustomID != "repo-04" && !strings.HasPrefix(l.Stdout, want) {
			t.Errorf("%s stdout %q, want %q", l.CustomID, l.Stdout, want)
		}
	}
	if errs := strings.TrimSpace(string(downloaded(id + "-errors.jsonl"))); strings.Count(errs, "\n") != 0 || !strings.Contains(errs, `"custom_id":"repo-04"`) {
		t.Errorf("errors.jsonl: %s", errs)
	}
	if rep := string(downloaded(id + "-report.html")); !strings.Contains(rep, "<html") || !strings.Contains(rep, "repo-04") || !strings.Contains(rep, "repo-06") {
		t.Errorf("report.html lacks the page or the items: %.300s", rep)
	}
	reportRow := func(custom string) string {
		for _, r := range strings.Split(string(downloaded(id+"-report.html")), "<tr>") {
			if strings.HasPrefix(r, "<td>"+custom+"</td>") {
				return r
			}
		}
		return ""
	}
	if r := reportRow("repo-04"); !strings.Contains(r, `<pre class="code">n = 4; boom = 1 / 0</pre>`) || !strings.Contains(r, `<td class="bad">ZeroDivisionError: division by zero</td>`) {
		t.Errorf("report.html row of the failed item without its code or error: %s", r)
	}
	if r := reportRow("repo-03"); !strings.Contains(r, `<pre class="code">n = 3; print(count())</pre>`) || !strings.Contains(r, `<td class="bad"></td>`) {
		t.Errorf("report.html row of an ok item without its code, or with an error: %s", r)
	}
	h.do("", "GET", "/v1/batches/"+id+"/results", nil).must(t, http.StatusUnauthorized)

	// Contrast: AA in both themes, with the item open.
	for _, theme := range []string{"light", "dark"} {
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}}}); err != nil {
			t.Fatal(err)
		}
		if bad := eval(contrastJS); bad != "" {
			t.Errorf("%s theme: text under 4.5:1: %s", theme, bad)
		}
	}

	// Retry failed: only repo-04 runs again, and now succeeds.
	g.mu.Lock()
	before := len(g.calls)
	g.mu.Unlock()
	br.Do("retry failed", chromedp.Click(chromedp.ID("batch-retry")))
	br.Poll("retrying", row+`.dataset.status === 'in_progress'`)
	release(1)
	br.Poll("completed again", row+`.dataset.status === 'completed' && document.querySelector('#batch-items tr[data-custom-id="repo-04"]').dataset.status === 'ok'`)
	g.mu.Lock()
	retried := g.calls[before:]
	g.mu.Unlock()
	if len(retried) != 1 || !strings.HasSuffix(retried[0].IdempotencyKey, "/repo-04/2") {
		t.Fatalf("retry ran %d calls (%v), want repo-04 attempt 2", len(retried), retried)
	}
	if got := eval(`document.getElementById('batch-counts').textContent + ' ' + document.getElementById('batch-item-title').textContent`); got != "6 of 6 done (100%) · 6 ok · 0 failed Item repo-04 (attempt 2)" {
		t.Fatalf("after retry: %q", got)
	}

	// A second batch from the picker, cancelled mid-way from its row.
	var small strings.Builder
	for i := 1; i <= 4; i++ {
		small.WriteString(batchLine(fmt.Sprintf("file-%d", i), fmt.Sprintf("n = %d", i)))
	}
	second := filepath.Join(t.TempDir(), "files.jsonl")
	if err := os.WriteFile(second, []byte(small.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	br.Do("submit from the picker",
		chromedp.Evaluate[chromedp.Void](`document.getElementById('batch-concurrency').value = '1'`),
		chromedp.SetUploadFiles(chromedp.ID("batch-file"), []string{second}),
		chromedp.Click(chromedp.ID("batch-submit")),
	)
	br.Poll("second batch listed and open", `document.querySelectorAll('#batches tbody tr[data-batch-id]').length === 2 && batchUI.open !== '`+id+`'`)
	id2 := eval(`batchUI.open`)
	row2 := `document.querySelector('#batches tr[data-batch-id="` + id2 + `"]')`
	release(1)
	br.Poll("1 of 4 done", row2+`.querySelector('progress').value === 1`)
	// A list answer that left the server before that snapshot and arrives
	// after it must not take the row back: no later snapshot would come.
	stale := `(() => { const b = batchUI.list.get('` + id2 + `'); updateBatch({...b, request_counts: {...b.request_counts, completed: 0}}); return String(` + row2 + `.querySelector('progress').value); })()`
	if got := eval(stale); got != "1" {
		t.Fatalf("a stale list answer took the row back to %s of 4 done", got)
	}
	br.Do("cancel from the row", chromedp.Click(chromedp.CSS(`#batches tr[data-batch-id="`+id2+`"] .batch-cancel`)))
	br.Poll("cancelling shown", row2+`.dataset.status === 'cancelling'`)
	if got := eval(row2 + `.querySelector('.batch-cancel').textContent + ' ' + ` + row2 + `.querySelector('.batch-cancel').disabled + ' | ' + document.getElementById('batch-status-badge').textContent + ' | ' + document.getElementById('batch-note').textContent`); got != "Cancelling… true | cancelling | Cancel requested: running items are being stopped and queued ones dropped." {
		t.Fatalf("while cancelling: %q", got)
	}
	stop() // the item in flight stops
	br.Poll("cancelled", row2+`.dataset.status === 'cancelled' && document.querySelectorAll('#batch-items tbody tr').length === 4`)
	if got := eval(`[...document.querySelectorAll('#batch-items tbody tr')].map((r) => r.dataset.customId + '=' + r.dataset.status).sort().join(' ') + ' | ' + ` + row2 + `.querySelector('.counts').textContent + ' | ' + !` + row2 + `.querySelector('.batch-cancel')`); got != "file-1=ok file-2=cancelled file-3=cancelled file-4=cancelled |  1 of 4 done (25%) · 1 ok · 0 failed | true" {
		t.Fatalf("after the cancel: %q", got)
	}

	// 390 px: the first batch's drill-down opens from the URL, with no
	// sideways scroll of the page.
	br.Do("narrow", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Navigate(ts.URL+"/?view=batches&batch="+id), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	br.Poll("drill-down from the URL", `document.querySelectorAll('#batch-items tbody tr').length === 6 && document.querySelectorAll('#batches tbody tr').length === 2`)
	if over := eval(`String(document.documentElement.scrollWidth - document.documentElement.clientWidth)`); over != "0" {
		t.Errorf("page is %spx wider than 390 px; too wide: %s", over, eval(`[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).filter((e) => !e.parentElement || e.parentElement.getBoundingClientRect().right <= document.documentElement.clientWidth + 0.5).slice(0, 6).map((e) => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right) + ' "' + e.textContent.slice(0, 30) + '"').join('; ')`))
	}
	shot("ui-batches-narrow.png", false)
	if errs := br.JSErrors(); len(errs) > 0 {
		t.Fatalf("JavaScript errors: %v", errs)
	}
}
