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

	br := browsertest.Start(t, 1100, 1500, 8*time.Minute)
	ctx := br.Ctx

	do := br.Do
	pollJS := br.Poll
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
	if st := eval(`document.querySelector('#cells .cell:nth-child(1)').dataset.status`); st != "ok" {
		t.Errorf("plot cell status %q", st)
	}
	if w := eval(`String(document.querySelector('#cells .cell:nth-child(1) .output img').naturalWidth)`); w == "0" {
		t.Errorf("plot has no width")
	}

	// Upload the CSV through the page into the same session.
	do("upload the CSV",
		chromedp.Click(chromedp.ID("tab-assistant")),
		chromedp.SetUploadFiles(chromedp.ID("upload-files"), []string{csvPath}),
		chromedp.Click(chromedp.ID("upload")),
		chromedp.WaitVisible(chromedp.CSS("#uploaded li")),
	)
	if li := eval(`document.querySelector('#uploaded li').textContent`); !strings.Contains(li, "data.csv") {
		t.Errorf("uploaded list %q", li)
	}

	// Notebook: pandas on the uploaded file, in the cell added after the first.
	do("run the pandas cell",
		chromedp.Click(chromedp.ID("tab-notebook")),
		chromedp.WaitVisible(chromedp.CSS("#cells .cell:nth-child(2) .code")),
		chromedp.SendKeys(chromedp.CSS("#cells .cell:nth-child(2) .code"), "import pandas as pd; df = pd.read_csv('data.csv'); print('TOTAL', int(df['sales'].sum()))"),
		chromedp.Click(chromedp.CSS("#cells .cell:nth-child(2) .run")),
	)
	pollJS("pandas output", `(() => { const c = document.querySelector('#cells .cell:nth-child(2)'); return !!c.dataset.status; })()`)
	out := eval(`(document.querySelector('#cells .cell:nth-child(2) .output') || {}).textContent || ''`)
	if !strings.Contains(out, fmt.Sprintf("TOTAL %d", sum)) {
		t.Errorf("pandas cell output %q, want TOTAL %d", out, sum)
	}
	screenshot("airlock-e2e-notebook.png")

	// Assistant: the scripted model runs run_python with a plot in the session.
	do("ask the assistant",
		chromedp.Click(chromedp.ID("tab-assistant")),
		chromedp.SendKeys(chromedp.ID("question"), "Which month sold most? Plot the sales."),
		chromedp.Click(chromedp.ID("ask")),
		chromedp.WaitVisible(chromedp.ID("final")),
	)
	pollJS("step plot rendered", `(() => { const i = document.querySelector('#steps .tool-call img'); return !!i && i.complete && i.naturalWidth > 0; })()`)
	pollJS("run finished", `document.getElementById('run-status').textContent.startsWith('finished')`)
	final := eval(`document.getElementById('final-text').textContent`)
	steps := eval(`document.getElementById('steps').textContent`)
	nsteps := eval(`String(document.querySelectorAll('#steps .step').length)`)
	status := eval(`document.getElementById('run-status').textContent`)
	screenshot("airlock-e2e-assistant.png")
	screenshot("airlock-ui-e2e.png")

	if final != wantFinal {
		t.Errorf("final answer %q, want %q", final, wantFinal)
	}
	if nsteps != "2" || status != "finished: done" {
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
