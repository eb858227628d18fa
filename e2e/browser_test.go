package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/internal/browsertest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// plotCode is what the scripted assistant runs: it reads the uploaded CSV,
// prints the best month and draws a bar chart.
const plotCode = `import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv('data.csv')
best = df.loc[df['sales'].idxmax()]
print('BEST', best['month'], int(best['sales']))
df.plot.bar(x='month', y='sales')
plt.title('sales per month')
plt.show()`

var bestLine = regexp.MustCompile(`BEST (\S+) (\d+)`)

// TestBrowserRealStack drives the web UI in headless Chromium against a
// real `airlock serve` (Docker sandboxes, in-process queue) whose model is
// the scripted fake: a notebook cell draws a matplotlib plot that renders;
// a CSV uploaded through the page is summed with pandas in a cell; an
// assistant question runs run_python with a plot, and the steps, the plot
// and the final answer (carrying the sandbox's number) appear.
func TestBrowserRealStack(t *testing.T) {
	t.Parallel()
	requireDocker(t)

	// A CSV with random sales; the test knows the sum and the best month.
	rng := rand.New(rand.NewPCG(rand.Uint64(), 7))
	values := rng.Perm(900)[:8]
	var csv strings.Builder
	csv.WriteString("month,sales\n")
	sum, bestMonth, bestValue := 0, "", -1
	for i, v := range values {
		v += 100
		month := fmt.Sprintf("m%02d", i+1)
		fmt.Fprintf(&csv, "%s,%d\n", month, v)
		sum += v
		if v > bestValue {
			bestMonth, bestValue = month, v
		}
	}
	csvPath := filepath.Join(t.TempDir(), "data.csv")
	if err := os.WriteFile(csvPath, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	wantFinal := fmt.Sprintf("The best month was %s with %d sales.", bestMonth, bestValue)

	model := agenttest.NewServer(
		agenttest.CallTools(agenttest.Call{ID: "call_plot", Name: "run_python", Arguments: mustJSON(map[string]string{"code": plotCode})}),
		func(req agenttest.Request) agenttest.Reply {
			m := bestLine.FindStringSubmatch(req.LastTool())
			if m == nil {
				return agenttest.Reply{Content: "The code printed no answer: " + req.LastTool()}
			}
			return agenttest.Reply{Content: fmt.Sprintf("The best month was %s with %s sales.", m[1], m[2])}
		},
	)
	defer model.Close()
	srv := startServe(t, "--base-url", model.URL, "--model", "test")

	br := chromium.Start(t, 1100, 1500, testscale.D(8*time.Minute))
	ctx := br.Ctx

	do := br.Do
	// A cold sandbox on a loaded machine can take longer than chromedp's
	// default 30 s poll (a hang guard, not a timing assertion).
	pollJS := func(name, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(testscale.D(3*time.Minute)))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	shots := browsertest.ArtifactDir(t)
	screenshot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG (below 100 is JPEG)
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(shots, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot written to %s", p)
	}

	setCell := func(n int, code string) {
		t.Helper()
		eval(fmt.Sprintf("document.querySelector('#cells .cell:nth-child(%d) .CodeMirror').CodeMirror.setValue(%q), ''", n, code))
	}

	do("open the page",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
	)
	if hidden := eval(`String(document.getElementById('model-banner').hidden)`); hidden != "true" {
		t.Errorf("the no-model banner shows although a model is configured")
	}

	// Notebook: the first cell draws a matplotlib plot in a real sandbox.
	do("run the plot cell",
		chromedp.Click(chromedp.ID("tab-notebook")),
		chromedp.WaitVisible(chromedp.CSS("#cells .cell .run")),
		chromedp.Click(chromedp.CSS("#cells .cell:nth-child(1) .run")),
	)
	pollJS("plot rendered", `(() => { const i = document.querySelector('#cells .cell:nth-child(1) .output img'); return !!i && i.complete && i.naturalWidth > 0; })()`)
	// The figure streams in before the call's end sets the cell's status.
	pollJS("plot cell ended", `document.querySelector('#cells .cell:nth-child(1)').dataset.status !== 'running'`)
	if st := eval(`document.querySelector('#cells .cell:nth-child(1)').dataset.status`); st != "ok" {
		t.Errorf("plot cell status %q", st)
	}
	if w := eval(`String(document.querySelector('#cells .cell:nth-child(1) .output img').naturalWidth)`); w == "0" {
		t.Errorf("plot has no width")
	}

	// Upload the CSV through the files panel into the notebook's session;
	// the panel lists the work folder with human sizes.
	do("upload the CSV",
		chromedp.SetUploadFiles(chromedp.ID("upload-files"), []string{csvPath}),
		chromedp.Click(chromedp.ID("upload")),
	)
	pollJS("file listed", `[...document.querySelectorAll('#uploaded li.file')].some((li) => li.textContent.includes('data.csv') && / B$/.test(li.textContent.trim()))`)

	// Notebook: pandas on the uploaded file, in the cell added after the first.
	do("run the pandas cell",
		chromedp.Click(chromedp.ID("add-cell")),
		chromedp.WaitVisible(chromedp.CSS("#cells .cell:nth-child(2) .CodeMirror")),
	)
	setCell(2, "import pandas as pd; df = pd.read_csv('data.csv'); print('TOTAL', int(df['sales'].sum()))")
	do("run it", chromedp.Click(chromedp.CSS("#cells .cell:nth-child(2) .run")))
	pollJS("pandas output", `(() => { const s = document.querySelector('#cells .cell:nth-child(2)').dataset.status; return !!s && s !== 'running'; })()`)
	out := eval(`(document.querySelector('#cells .cell:nth-child(2) .output') || {}).textContent || ''`)
	if !strings.Contains(out, fmt.Sprintf("TOTAL %d", sum)) {
		t.Errorf("pandas cell output %q, want TOTAL %d", out, sum)
	}
	screenshot("airlock-e2e-notebook.png")

	// Live output and Interrupt in a real kernel: the first line shows
	// within 1.5 s, and Interrupt stops time.sleep(60) within 1 s.
	do("add the sleep cell", chromedp.Click(chromedp.ID("add-cell")), chromedp.WaitVisible(chromedp.CSS("#cells .cell:nth-child(3) .CodeMirror")))
	setCell(3, "import time\nprint('started', flush=True)\ntime.sleep(60)")
	start := time.Now()
	do("run the sleep cell", chromedp.Click(chromedp.CSS("#cells .cell:nth-child(3) .run")))
	pollJS("live line", `(document.querySelector('#cells .cell:nth-child(3) .output .live') || {textContent: ''}).textContent.includes('started')`)
	if d, bound := time.Since(start), testscale.D(1500*time.Millisecond); d > bound {
		t.Errorf("live output took %v, want under %v", d, bound)
	}
	start = time.Now()
	do("interrupt", chromedp.Click(chromedp.ID("interrupt")))
	pollJS("interrupted", `document.querySelector('#cells .cell:nth-child(3)').dataset.status !== 'running'`)
	if d, bound := time.Since(start), testscale.D(time.Second); d > bound {
		t.Errorf("interrupt took %v, want under %v", d, bound)
	}
	if out := eval(`document.querySelector('#cells .cell:nth-child(3) .output').textContent`); !strings.Contains(out, "KeyboardInterrupt") {
		t.Errorf("interrupted cell output %q", out)
	}

	// Assistant: the scripted model runs run_python with a plot in the
	// notebook's session (shared by default, so it sees data.csv).
	if shared := eval(`String(document.getElementById('share-session').checked)`); shared != "true" {
		t.Errorf("the assistant does not share the notebook's session by default")
	}
	do("ask the assistant",
		chromedp.Click(chromedp.ID("tab-assistant")),
		chromedp.SendKeys(chromedp.ID("question"), "Which month sold most? Plot the sales."),
		chromedp.Click(chromedp.ID("ask")),
		chromedp.WaitVisible(chromedp.CSS(".turn .final")),
	)
	pollJS("step plot rendered", `(() => { const i = document.querySelector('.turn .steps .tool-call img'); return !!i && i.complete && i.naturalWidth > 0; })()`)
	pollJS("run finished", `document.getElementById('run-status').textContent === 'done'`)
	final := strings.TrimSpace(eval(`document.querySelector('.turn .final .md').textContent`))
	steps := eval(`document.querySelector('.turn .steps').textContent`)
	nsteps := eval(`String(document.querySelectorAll('.turn .steps .step').length)`)
	status := eval(`document.getElementById('run-status').textContent`)
	screenshot("airlock-e2e-assistant.png")
	screenshot("airlock-ui-e2e.png")

	if final != wantFinal {
		t.Errorf("final answer %q, want %q", final, wantFinal)
	}
	// One step: the tool call. The model's last message is the answer,
	// shown once in the answer box, not again as a step.
	if nsteps != "1" || status != "done" {
		t.Errorf("%s steps, run status %q", nsteps, status)
	}
	for _, want := range []string{"run_python", "read_csv", fmt.Sprintf("BEST %s %d", bestMonth, bestValue)} {
		if !strings.Contains(steps, want) {
			t.Errorf("steps lack %q:\n%s", want, steps)
		}
	}
	reqs := model.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastTool(), "figure") {
		t.Errorf("model requests %d; tool message %q", len(reqs), func() string {
			if len(reqs) > 1 {
				return reqs[1].LastTool()
			}
			return ""
		}())
	}
	if errs := model.Errors(); len(errs) > 0 {
		t.Errorf("fake model saw problems: %v", errs)
	}
	if errs := br.JSErrors(); len(errs) > 0 {
		t.Errorf("JavaScript errors: %v", errs)
	}
}
