package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/internal/browsertest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestJupyterClassicNotebook: the classic Notebook (Debian's
// python3-notebook 6.4) started with --gateway-url, driven in headless
// Chromium: open a notebook, run its cells, see the table and the plot,
// computed in an Airlock session of the gateway key.
func TestJupyterClassicNotebook(t *testing.T) {
	// Serial: a browser, a Notebook server and a kernel side by side with
	// other parallel tests' left its page without a kernel under CI's load.
	requireDocker(t)
	requireJupyter(t, "notebook")
	srv := startKeyedServe(t, jupyterKeys)

	js, dir := startJupyter(t, "notebook", "NotebookApp", srv.URL, aliceKey)
	writeNotebook(t, filepath.Join(dir, "rain.ipynb"), "python",
		"import pandas as pd\ndf = pd.DataFrame({'city': ['Oslo', 'Lima', 'Pune'], 'rain_mm': [763, 16, 722]})\ndf",
		"import matplotlib.pyplot as plt\nplt.bar(df.city, df.rain_mm)\nplt.title('rain')\nplt.show()")
	base, token := js.URL, js.Token

	br := chromium.Start(t, 1200, 1400, 6*time.Minute)
	ctx := br.Ctx
	pollJS := func(name, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(testscale.D(2*time.Minute)))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	br.Do("open the notebook", chromedp.Navigate(base+"/notebooks/rain.ipynb?token="+token))
	pollJS("the kernel to be ready", `!!(window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected() && Jupyter.notebook.kernel.info_reply && Jupyter.notebook.kernel.info_reply.protocol_version)`)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`Jupyter.notebook.execute_all_cells(), true`)); err != nil {
		t.Fatalf("run all cells: %v", err)
	}
	pollJS("the table", `(() => { const t = document.querySelector('.output_html table.dataframe'); return !!t && t.textContent.includes('Pune'); })()`)
	pollJS("the plot", `(() => { const i = document.querySelector('.output_png img'); return !!i && i.complete && i.naturalWidth > 100; })()`)
	pollJS("both cells to end with In [1] and In [2]", `(() => { const p = document.querySelectorAll('.input_prompt'); return p.length == 2 && p[0].textContent.includes('[1]') && p[1].textContent.includes('[2]'); })()`)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(browsertest.ArtifactDir(t), "jupyter-classic-notebook.png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot written to %s", p)
	if errs := br.JSErrors(); len(errs) > 0 {
		t.Logf("page JavaScript exceptions: %v", errs)
	}
	// The kernel is an Airlock session of the gateway key.
	if b := string(do(t, "GET", srv.URL+"/v1/sessions", nil, "Authorization", "Bearer "+aliceKey).must(t, 200).Body); !strings.Contains(b, `"execution_count":2`) {
		t.Fatalf("alice's sessions do not show the notebook's kernel with 2 calls: %s", b)
	}
}
