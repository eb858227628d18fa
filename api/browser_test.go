package api

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/internal/browsertest"
)

// TestBrowserUI drives the real web UI in headless Chromium against a live
// server with fakes: key prompt, notebook cell with a PNG plot, file
// upload, an assistant run with steps and a final answer, an approval, and
// the no-model banner.
func TestBrowserUI(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	br := chromium.Start(t, 1000, 1500, 3*time.Minute)
	ctx := br.Ctx
	h := newHarness(t, nil)
	ts := httptest.NewServer(h.srv)
	defer browsertest.CloseServer(ts)

	do := br.Do
	poll := br.Poll
	evalInt := func(expr string) int {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	textCSS := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	text := func(id string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("text of #%s: %v", id, err)
		}
		return v
	}

	csv := filepath.Join(t.TempDir(), "data.csv")
	if err := os.WriteFile(csv, []byte("month,sales\njan,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The page loads without a key and asks for one.
	do("open and enter the key",
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("key-input")),
		chromedp.SendKeys(chromedp.ID("key-input"), keyAlice),
		chromedp.Click(chromedp.ID("key-save")),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
	)

	// Notebook: the first cell draws a plot; the PNG must render.
	do("run a notebook cell",
		chromedp.Click(chromedp.ID("tab-notebook")),
		chromedp.WaitVisible(chromedp.CSS(".cell .run")),
		chromedp.Click(chromedp.CSS(".cell .run")),
	)
	poll("plot rendered", `(() => { const i = document.querySelector('.cell .output img'); return !!i && i.complete && i.naturalWidth > 0; })()`)
	if w := evalInt(`document.querySelector('.cell .output img').naturalWidth`); w != 64 {
		t.Fatalf("plot naturalWidth %d, want 64", w)
	}
	if c := h.disp.lastCall(); c.Name != "run_python" || c.SessionID == "" || !strings.Contains(string(c.Arguments), "plt.plot") {
		t.Fatalf("cell call %+v", c)
	}

	// Assistant: upload a file, ask, watch the steps and the answer.
	do("upload a file",
		chromedp.Click(chromedp.ID("tab-assistant")),
		chromedp.SetUploadFiles(chromedp.ID("upload-files"), []string{csv}),
		chromedp.Click(chromedp.ID("upload")),
	)
	poll("upload done", `!document.getElementById('upload').disabled && document.querySelector('#uploaded li') !== null && !document.querySelector('#uploaded').textContent.includes('uploading')`)
	h.sess.mu.Lock()
	nfiles := len(h.sess.files)
	h.sess.mu.Unlock()
	if nfiles != 1 {
		t.Fatalf("uploaded files: %d", nfiles)
	}
	do("ask a question",
		chromedp.SendKeys(chromedp.ID("question"), "What were the total sales?"),
		chromedp.Click(chromedp.ID("ask")),
		chromedp.WaitVisible(chromedp.CSS(".turn .final")),
	)
	poll("step plot rendered", `(() => { const i = document.querySelector('#conversation .tool-call img'); return !!i && i.complete && i.naturalWidth > 0; })()`)
	finalText, stepsText := textCSS(".turn:last-child .final"), textCSS(".turn:last-child .steps")
	steps := evalInt(`document.querySelectorAll('.turn:last-child .step').length`)
	keywords := evalInt(`document.querySelectorAll('#conversation .hljs-keyword').length`)
	stepImg := evalInt(`document.querySelector('#conversation .tool-call img').naturalWidth`)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(browsertest.ArtifactDir(t), "airlock-ui.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot written to %s", shot)
	if !strings.Contains(finalText, "1234") || steps != 2 || keywords == 0 || stepImg != 64 {
		t.Fatalf("final %q, %d steps, %d keyword spans, step image width %d", finalText, steps, keywords, stepImg)
	}
	for _, want := range []string{"Let me look at the data.", "run_python", "1234", "Step 2"} {
		if !strings.Contains(stepsText, want) {
			t.Errorf("steps lack %q:\n%s", want, stepsText)
		}
	}
	h.runs.mu.Lock()
	req := h.runs.lastReq
	h.runs.script = approvalScript // the next run waits for an approval
	h.runs.mu.Unlock()
	if req.SessionID == "" || req.Goal != "What were the total sales?" {
		t.Fatalf("run request %+v", req)
	}

	// An approval: the run waits until the person approves.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('question').value = ''`)); err != nil {
		t.Fatal(err)
	}
	do("approve a pending call",
		chromedp.SendKeys(chromedp.ID("question"), "List the files"),
		chromedp.Click(chromedp.ID("ask")),
		chromedp.WaitVisible(chromedp.CSS(".turn:last-child .approval button.approve")),
		chromedp.Click(chromedp.CSS(".turn:last-child .approval button.approve")),
	)
	poll("answer after approval", `(document.querySelector('.turn:last-child .final .md') || {textContent: ''}).textContent.includes('empty')`)
	if got := strings.TrimSpace(textCSS(".turn:last-child .final .md")); got != "The folder is empty." {
		t.Fatalf("final after approval %q", got)
	}

	// Without a model the banner says how to configure one.
	h.runs.mu.Lock()
	h.runs.configured = false
	h.runs.mu.Unlock()
	do("reload without a model",
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
	)
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('model-banner').hidden`)); err != nil || hidden {
		t.Fatalf("banner hidden=%v (%v)", hidden, err)
	}
	if banner := text("model-banner"); !strings.Contains(banner, "OPENAI_BASE_URL") || !strings.Contains(banner, "AIRLOCK_MODEL") {
		t.Fatalf("banner %q", banner)
	}
	// Narrow screen: nothing scrolls sideways, and the notebook still works.
	do("narrow viewport",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.Click(chromedp.ID("tab-notebook")),
		chromedp.Click(chromedp.CSS(".cell .run")),
	)
	poll("plot rendered on a narrow screen", `(() => { const i = document.querySelector('.cell .output img'); return !!i && i.complete && i.naturalWidth > 0; })()`)
	if over := evalInt(`document.documentElement.scrollWidth - document.documentElement.clientWidth`); over > 0 {
		t.Errorf("page is %dpx wider than a 390px screen", over)
	}
	narrow, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(browsertest.ArtifactDir(t), "airlock-ui-narrow.png"), narrow, 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := br.JSErrors(); len(errs) > 0 {
		t.Fatalf("JavaScript errors: %s", fmt.Sprint(errs))
	}
}
