package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/airlock-dev/airlock/internal/browsertest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// realWorkbench is a browser tab on a real `airlock serve` (Docker
// sandboxes), with the notebook view open.
type realWorkbench struct {
	*browsertest.Browser
	t   *testing.T
	srv *server
}

// openRealWorkbench starts serve and a browser and opens the notebook.
func openRealWorkbench(t *testing.T) *realWorkbench {
	t.Helper()
	requireDocker(t)
	srv := startServe(t)
	br := chromium.Start(t, 1200, 1200, testscale.D(8*time.Minute))
	w := &realWorkbench{Browser: br, t: t, srv: srv}
	w.Do("open the page",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.Click(chromedp.ID("tab-notebook")),
		chromedp.WaitVisible(chromedp.CSS("#cells .cell .CodeMirror")),
	)
	return w
}

// poll waits for a JavaScript condition, as long as a cold sandbox on a
// loaded machine may need (a hang guard, not a timing assertion).
func (w *realWorkbench) poll(name, expr string) {
	w.t.Helper()
	if _, err := chromedp.Run(w.Ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(testscale.D(3*time.Minute)))); err != nil {
		w.t.Fatalf("%s: %v (page: %s)", name, err, w.eval(`document.getElementById('cells').textContent.slice(0, 2000)`))
	}
}

// eval evaluates a JavaScript expression to a string.
func (w *realWorkbench) eval(expr string) string {
	w.t.Helper()
	v, err := chromedp.Run(w.Ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		w.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// cell is the selector of cell n (1-based).
func cell(n int) string { return fmt.Sprintf("#cells .cell:nth-child(%d)", n) }

// setCell puts code in cell n.
func (w *realWorkbench) setCell(n int, code string) {
	w.t.Helper()
	w.eval(fmt.Sprintf("document.querySelector('%s .CodeMirror').CodeMirror.setValue(%q), ''", cell(n), code))
}

// runCell runs cell n and waits for it to end with status ok.
func (w *realWorkbench) runCell(n int) {
	w.t.Helper()
	w.Do("run cell", chromedp.Click(chromedp.CSS(cell(n)+" .run")))
	w.poll("cell ended", fmt.Sprintf(`(() => { const s = document.querySelector('%s').dataset.status; return !!s && s !== 'running'; })()`, cell(n)))
	if st := w.eval(fmt.Sprintf(`document.querySelector('%s').dataset.status`, cell(n))); st != "ok" {
		w.t.Fatalf("cell %d status %q: %s", n, st, w.eval(fmt.Sprintf(`document.querySelector('%s .output').textContent`, cell(n))))
	}
}

// TestBrowserKernelHelp: in a real session (Jedi in the python image),
// typing `are` and Tab in a cell completes the session's own function
// area, typing `(` after it shows its signature and docstring, Ctrl-Space
// after `df.` lists the DataFrame's columns and methods, and the variable
// panel lists df as a DataFrame of shape (5, 1) after the cell that made
// it, without changing the session (its execution count stays).
func TestBrowserKernelHelp(t *testing.T) {
	t.Parallel()
	w := openRealWorkbench(t)
	w.setCell(1, "import pandas as pd\ndf = pd.DataFrame({'a': range(5)})\ndef area(radius):\n    \"\"\"The area of a circle of this radius.\"\"\"\n    return 3.14159 * radius ** 2")
	w.runCell(1)

	// The variable panel refreshes after the cell.
	w.poll("df in the variable panel", `!!document.querySelector('#vars tr[data-name="df"]')`)
	row := w.eval(`[...document.querySelectorAll('#vars tr[data-name="df"] td')].map((td) => td.textContent).join('|')`)
	if f := strings.Split(row, "|"); len(f) != 4 || f[0] != "df" || f[1] != "DataFrame" || f[2] != "(5, 1)" || f[3] == "" {
		t.Errorf("df row %q, want df|DataFrame|(5, 1)|size", row)
	}
	if w.eval(`String(!!document.querySelector('#vars tr[data-name="pd"]'))`) != "false" {
		t.Errorf("the module pd is listed as a variable")
	}
	if fn := w.eval(`(document.querySelector('#vars tr[data-name="area"] td:nth-child(2)') || {}).textContent || ''`); fn != "function" {
		t.Errorf("area's type %q, want function", fn)
	}

	// The same from the command line.
	sid := w.eval(`new URLSearchParams(location.search).get('session')`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"variables", "--server", w.srv.URL, sid}, `"type": "DataFrame"`},
		{[]string{"complete", "--server", w.srv.URL, sid, "are"}, `"area"`},
		{[]string{"complete", "--server", w.srv.URL, sid, "area("}, `"label": "area(radius)"`},
	} {
		out, err := exec.Command(airlockBin, append([]string{"session"}, c.args...)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("airlock session %v: %v\n%s\nwant %s", c.args, err, out, c.want)
		}
	}

	// Completion: `are` + Tab gives area (the only match: inserted).
	w.Do("add a cell", chromedp.Click(chromedp.ID("add-cell")), chromedp.WaitVisible(chromedp.CSS(cell(2)+" .CodeMirror")))
	ta := cell(2) + " .CodeMirror textarea"
	w.Do("type are, Tab", chromedp.Click(chromedp.CSS(cell(2)+" .CodeMirror-lines")), chromedp.SendKeys(chromedp.CSS(ta), "are"), chromedp.SendKeys(chromedp.CSS(ta), kb.Tab))
	w.poll("area completed", fmt.Sprintf(`document.querySelector('%s .CodeMirror').CodeMirror.getValue() === 'area' || [...document.querySelectorAll('#completions li')].some((li) => li.textContent === 'area')`, cell(2)))
	if v := w.eval(fmt.Sprintf(`document.querySelector('%s .CodeMirror').CodeMirror.getValue()`, cell(2))); v != "area" {
		// A list: choose area from it.
		w.eval(`[...document.querySelectorAll('#completions li')].find((li) => li.textContent === 'area').dispatchEvent(new MouseEvent('mousedown', {bubbles: true})), ''`)
	}
	w.poll("cell reads area", fmt.Sprintf(`document.querySelector('%s .CodeMirror').CodeMirror.getValue() === 'area'`, cell(2)))

	// Signature help on `(`.
	w.Do("type (", chromedp.SendKeys(chromedp.CSS(ta), "("))
	w.poll("signature shown", `!!document.querySelector('.signature-help')`)
	if sig := w.eval(`document.querySelector('.signature-help').textContent`); !strings.Contains(sig, "area(radius)") || !strings.Contains(sig, "The area of a circle") {
		t.Errorf("signature help %q, want area(radius) and its docstring", sig)
	}
	w.Do("close the call", chromedp.SendKeys(chromedp.CSS(ta), "2)"))
	w.poll("signature closed", `!document.querySelector('.signature-help')`)

	// Ctrl-Space after df. lists the frame's attributes.
	w.Do("type df.", chromedp.SendKeys(chromedp.CSS(ta), "\ndf."), chromedp.KeyEvent(" ", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	w.poll("df attributes listed", `[...document.querySelectorAll('#completions li')].some((li) => li.textContent === 'describe')`)
	w.Do("Escape", chromedp.KeyEvent(kb.Escape))
	w.poll("list closed", `!document.getElementById('completions')`)

	// Nothing of this ran in the session: the next cell is execution 2.
	w.setCell(2, "area(2)")
	w.runCell(2)
	if n := w.eval(fmt.Sprintf(`document.querySelector('%s .exec-count').textContent`, cell(2))); n != "[2]" {
		t.Errorf("execution count %q after completions, want [2]", n)
	}
	if out := w.eval(fmt.Sprintf(`document.querySelector('%s .output').textContent`, cell(2))); !strings.Contains(out, "12.56636") {
		t.Errorf("area(2) printed %q", out)
	}
	if errs := w.JSErrors(); len(errs) > 0 {
		t.Errorf("JavaScript errors: %v", errs)
	}
}

// TestBrowserReloadReattachesRealServer: against a real server and
// sandbox, a reload while a 10 s cell runs does not stop it: the reloaded
// page re-attaches to the call (same idempotency key), shows its output
// when it ends, and the variable it set exists in the session; the cell
// ran once (the next cell is execution 2).
func TestBrowserReloadReattachesRealServer(t *testing.T) {
	t.Parallel()
	w := openRealWorkbench(t)
	w.setCell(1, "import time\nv = 7\nprint('started', flush=True)\ntime.sleep(10)\nprint('slept and set v')")
	w.Do("run", chromedp.Click(chromedp.CSS(cell(1)+" .run")))
	w.poll("running", `document.querySelector('#cells .cell').dataset.status === 'running' && new URLSearchParams(location.search).has('session') && (document.querySelector('#cells .cell .output .live') || {textContent: ''}).textContent.includes('started')`)
	sid := w.eval(`new URLSearchParams(location.search).get('session')`)
	// The call and its key are saved with the cell before the reload.
	poll(t, testscale.D(10*time.Second), "the running cell's call saved with the notebook", func() bool {
		return strings.Contains(string(do(t, "GET", w.srv.URL+"/v1/sessions/"+sid+"/notebook", nil).Body), `"pending"`)
	})
	w.Do("reload", chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)), chromedp.Click(chromedp.ID("tab-notebook")))
	w.poll("re-attached", `document.querySelector('#cells .cell').dataset.status === 'running' && document.querySelector('#cells .cell .cell-status').textContent.startsWith('re-attached')`)
	w.poll("output after the call ended", `document.querySelector('#cells .cell').dataset.status === 'ok' && document.querySelector('#cells .cell .output').textContent.includes('slept and set v')`)
	if n := w.eval(`document.querySelector('#cells .cell .exec-count').textContent`); n != "[1]" {
		t.Errorf("the re-attached cell's execution count %q, want [1]", n)
	}
	w.Do("add a cell", chromedp.Click(chromedp.ID("add-cell")), chromedp.WaitVisible(chromedp.CSS(cell(2)+" .CodeMirror")))
	w.setCell(2, "print(f'v is {v}')")
	w.runCell(2)
	if out := w.eval(fmt.Sprintf(`document.querySelector('%s .output').textContent`, cell(2))); !strings.Contains(out, "v is 7") {
		t.Errorf("after the re-attached cell: %q, want v is 7", out)
	}
	if n := w.eval(fmt.Sprintf(`document.querySelector('%s .exec-count').textContent`, cell(2))); n != "[2]" {
		t.Errorf("the next cell is execution %q, want [2] (the sleeping cell ran once)", n)
	}
	if strings.Contains(w.srv.stderr.String(), "context canceled") {
		t.Errorf("the server logged a cancelled job:\n%s", tail(w.srv.stderr.String(), 3000))
	}
}

// TestBrowserSessionsDialogRealServer: against a real server, the
// Sessions dialog's Fork gives a session with the original's variables
// (a snapshot restored in a new sandbox) and cells, which goes on alone;
// Export notebook downloads the original's call log as nbformat 4.
func TestBrowserSessionsDialogRealServer(t *testing.T) {
	t.Parallel()
	w := openRealWorkbench(t)
	downloads := t.TempDir()
	w.AllowDownloads(downloads)
	w.setCell(1, "x = 41")
	w.runCell(1)
	sid := w.eval(`new URLSearchParams(location.search).get('session')`)

	w.Do("open the dialog", chromedp.Click(chromedp.ID("sessions-button")))
	item := `#sessions-list li[data-id="` + sid + `"]`
	w.poll("listed", `!!document.querySelector('`+item+`')`)
	w.Do("export", chromedp.Click(chromedp.CSS(item+" .session-export")))
	var nb struct {
		NBFormat int `json:"nbformat"`
		Cells    []struct {
			CellType string   `json:"cell_type"`
			Source   []string `json:"source"`
		} `json:"cells"`
	}
	poll(t, testscale.D(30*time.Second), "the notebook downloaded", func() bool {
		data, err := os.ReadFile(filepath.Join(downloads, sid+".ipynb"))
		return err == nil && json.Unmarshal(data, &nb) == nil
	})
	if nb.NBFormat != 4 || len(nb.Cells) != 1 || strings.Join(nb.Cells[0].Source, "") != "x = 41" {
		t.Errorf("exported notebook %+v, want nbformat 4 with the cell x = 41", nb)
	}

	w.Do("fork", chromedp.Click(chromedp.CSS(item+" .session-fork")))
	w.poll("forked", `document.getElementById('sessions-note').textContent.startsWith('Forked into ')`)
	fork := strings.TrimSuffix(strings.Fields(w.eval(`document.getElementById('sessions-note').textContent`))[2], ".")
	w.poll("fork listed", `!!document.querySelector('#sessions-list li[data-id="`+fork+`"] button')`)
	w.Do("open the fork", chromedp.Click(chromedp.CSS(`#sessions-list li[data-id="`+fork+`"] button`)))
	w.poll("the fork's cells", `new URLSearchParams(location.search).get('session') === '`+fork+`' && !!document.querySelector('#cells .CodeMirror') && document.querySelector('#cells .CodeMirror').CodeMirror.getValue() === 'x = 41'`)
	w.Do("add a cell", chromedp.Click(chromedp.ID("add-cell")), chromedp.WaitVisible(chromedp.CSS(cell(2)+" .CodeMirror")))
	w.setCell(2, "x += 1\nprint(x)")
	w.runCell(2)
	if out := w.eval(fmt.Sprintf(`document.querySelector('%s .output').textContent`, cell(2))); !strings.Contains(out, "42") {
		t.Errorf("the fork's x + 1 printed %q, want 42", out)
	}
	// The original is unchanged.
	r := do(t, "POST", w.srv.URL+"/v1/sessions/"+sid+"/tool-calls", map[string]any{"type": "function", "function": map[string]any{"name": "run_python", "arguments": map[string]any{"code": "print(x)"}}})
	if !strings.Contains(string(r.Body), `41\n`) {
		t.Errorf("the original after the fork changed: %s", r.Body)
	}
}
