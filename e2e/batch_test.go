package e2e

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// batchLine is one result line of a batch.
type batchLine struct {
	CustomID   string `json:"custom_id"`
	Status     string `json:"status"`
	ExitCode   *int   `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMS int64  `json:"duration_ms"`
	Attempt    int    `json:"attempt"`
	InputMode  string `json:"input_mode"`
	InputNote  string `json:"input_note"`
	Error      any    `json:"error"`
	Content    string `json:"content"`
	Message    string `json:"message"`
}

type repoTruth struct{ lines, warnings int }

// makeRepos writes n small "repositories" of random .py files under
// dir/repos and returns each one's line count and pyflakes warning count
// (every "import osN" line is unused: one warning each).
func makeRepos(t *testing.T, n int) (string, map[string]repoTruth) {
	t.Helper()
	root := t.TempDir()
	rng := rand.New(rand.NewSource(14))
	truths := map[string]repoTruth{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("repo-%03d", i)
		dir := filepath.Join(root, "repos", name, "pkg")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var tr repoTruth
		for f := 0; f < 1+rng.Intn(3); f++ {
			var b strings.Builder
			imports := rng.Intn(4)
			for k := 0; k < imports; k++ {
				fmt.Fprintf(&b, "import os%d\n", k) // unused: a pyflakes warning; never imported at run time
			}
			body := 1 + rng.Intn(20)
			for k := 0; k < body; k++ {
				fmt.Fprintf(&b, "x%d = %d\n", k, k)
			}
			tr.lines += imports + body
			tr.warnings += imports
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%d.py", f)), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		truths["repos/"+name] = tr
	}
	return root, truths
}

const analysisCode = `import io, os
from pyflakes.api import checkRecursive
from pyflakes.reporter import Reporter
lines = 0
for root, _, files in os.walk('/workspace'):
    for f in files:
        if f.endswith('.py'):
            with open(os.path.join(root, f)) as fh:
                lines += sum(1 for _ in fh)
w = checkRecursive(['/workspace'], Reporter(io.StringIO(), io.StringIO()))
print(lines, w)
`

func waitBatch(t *testing.T, base, id string, d time.Duration, want ...string) map[string]any {
	t.Helper()
	var b map[string]any
	unavailable := 0
	defer func() {
		if unavailable > 0 {
			t.Logf("batch %s: %d polls answered 503 unavailable (retried, as a client does)", id, unavailable)
		}
	}()
	poll(t, d, "batch "+id+" to reach "+strings.Join(want, "/"), func() bool {
		r := do(t, "GET", base+"/v1/batches/"+id, nil)
		// A store that is restarting (the Redis fault tests) answers 503
		// for a moment; the poll asks again, and fails if it never recovers.
		if r.Status == http.StatusServiceUnavailable {
			unavailable++
			return false
		}
		b = r.must(t, 200).JSON(t)
		for _, w := range want {
			if b["status"] == w {
				return true
			}
		}
		return false
	})
	return b
}

func results(t *testing.T, url string) []batchLine {
	t.Helper()
	r := do(t, "GET", url, nil).must(t, 200)
	var out []batchLine
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l batchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("bad result line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

func counts(b map[string]any) (total, completed, failed int) {
	c := b["request_counts"].(map[string]any)
	return int(c["total"].(float64)), int(c["completed"].(float64)), int(c["failed"].(float64))
}

// TestBatchMapOverRepos maps a pyflakes + line-count analysis over 300
// generated repositories (each mounted read-only at /workspace) and
// checks every result against the test's own counts.
func TestBatchMapOverRepos(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	n := 300 // AIRLOCK_TEST_BATCH_REPOS lowers it on a loaded machine
	if v, err := strconv.Atoi(os.Getenv("AIRLOCK_TEST_BATCH_REPOS")); err == nil && v > 0 {
		n = v
	}
	root, truths := makeRepos(t, n)
	// Each repository is packed into an archive unpacked in the sandbox,
	// or with AIRLOCK_TEST_BATCH_INPUTS=mount, mounted read-only.
	mode, extra := "archive", []string{}
	if os.Getenv("AIRLOCK_TEST_BATCH_INPUTS") == "mount" {
		mode, extra = "mount", []string{"--batch-mount-inputs"}
	}
	s := startServe(t, append([]string{"--input", "src=" + root}, extra...)...)
	spec := map[string]any{
		"tool_call": map[string]any{"type": "function", "function": map[string]any{"name": "run_python", "arguments": map[string]any{"code": analysisCode,
			// Batch-lane containers yield the CPU to everything else (cpu.shares 2): beside
			// the rest of the suite an item may wait seconds for a core.
			"timeout_seconds": 60}}},
		"each": "repos/*", "input": "src", "concurrency": 8,
	}
	start := time.Now()
	b := do(t, "POST", s.URL+"/v1/batches", spec).must(t, 201).JSON(t)
	if b["object"] != "batch" {
		t.Fatalf("not a batch: %v", b)
	}
	id := b["id"].(string)
	b = waitBatch(t, s.URL, id, testscale.D(10*time.Minute), "completed", "failed")
	t.Logf("%d repos in %s", n, time.Since(start).Round(time.Millisecond))
	lines := results(t, s.URL+"/v1/batches/"+id+"/results")
	if tot, ok, bad := counts(b); tot != n || ok != n || bad != 0 {
		for _, l := range lines {
			if l.Status != "ok" {
				t.Errorf("%s: status %s after %d ms (attempt %d): message %q stdout %q stderr %q error %v content %q", l.CustomID, l.Status, l.DurationMS, l.Attempt, l.Message, l.Stdout, l.Stderr, l.Error, l.Content)
			}
		}
		t.Fatalf("request_counts %d/%d/%d, want %d completed", tot, ok, bad, n)
	}
	if len(lines) != n {
		t.Fatalf("%d result lines, want %d", len(lines), n)
	}
	slow := slices.SortedFunc(slices.Values(lines), func(a, b batchLine) int { return cmp.Compare(b.DurationMS, a.DurationMS) })
	for _, l := range slow[:min(3, n)] {
		t.Logf("one of the slowest items: %s %d ms", l.CustomID, l.DurationMS)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l.CustomID] {
			t.Fatalf("duplicate line for %s", l.CustomID)
		}
		seen[l.CustomID] = true
		tr, ok := truths[l.CustomID]
		if !ok {
			t.Fatalf("unknown custom_id %q", l.CustomID)
		}
		var gotLines, gotWarn int
		if _, err := fmt.Sscan(l.Stdout, &gotLines, &gotWarn); err != nil || l.Status != "ok" {
			t.Fatalf("%s: status %s stdout %q stderr %q", l.CustomID, l.Status, l.Stdout, l.Stderr)
		}
		if l.InputMode != mode || l.InputNote != "" {
			t.Errorf("%s: input_mode %q (%s), want %s", l.CustomID, l.InputMode, l.InputNote, mode)
		}
		if gotLines != tr.lines || gotWarn != tr.warnings {
			t.Errorf("%s: got %d lines %d warnings, want %d and %d", l.CustomID, gotLines, gotWarn, tr.lines, tr.warnings)
		}
	}
	sum := do(t, "GET", s.URL+"/v1/batches/"+id+"/summary", nil).must(t, 200).JSON(t)
	if sum["statuses"].(map[string]any)["ok"].(float64) != float64(n) {
		t.Errorf("summary statuses %v", sum["statuses"])
	}
	rep := do(t, "GET", s.URL+"/v1/batches/"+id+"/report", nil).must(t, 200)
	html := string(rep.Body)
	if !strings.Contains(html, "histogram") || strings.Count(html, "<tr>") != n+1 || strings.Contains(html, "<script") || strings.Contains(html, "http://") || strings.Contains(html, "https://") {
		t.Errorf("report is not a self-contained table of %d items + histogram", n)
	}
	// The events stream replays progress and ends with the batch.
	ev := do(t, "GET", s.URL+"/v1/batches/"+id+"/events", nil, "Last-Event-ID", "1").must(t, 200)
	if !strings.Contains(string(ev.Body), `"status":"completed"`) || strings.Contains(string(ev.Body), "id: 1\n") {
		t.Errorf("events stream: %.400s", ev.Body)
	}
	list := do(t, "GET", s.URL+"/v1/batches", nil).must(t, 200).JSON(t)
	if len(list["data"].([]any)) != 1 {
		t.Errorf("list: %v", list)
	}
}

// TestBatchOpenAIShapeCancelRetryZipSlip covers the OpenAI batch line
// shape, validation errors, cancel mid-batch, retry of failed items only
// and refused archives, on one server.
func TestBatchOpenAIShapeCancelRetryZipSlip(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	s := startServe(t)
	post := func(body string) response {
		return do(t, "POST", s.URL+"/v1/batches", []byte(body), "Content-Type", "application/jsonl")
	}
	line := func(id, code string) string {
		return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":"/v1/tool-calls","body":{"type":"function","function":{"name":"run_python","arguments":%s}}}`, id, mustJSON(mustJSON(map[string]string{"code": code})))
	}

	// Validation up front: a bad line and a duplicate custom_id are 400s naming the line.
	r := post(line("a", "print(1)") + "\n" + `{"custom_id":"b","tool_call":` + "\n")
	if r.Status != 400 || !strings.Contains(string(r.Body), "line 2") {
		t.Fatalf("bad line: %d %s", r.Status, r.Body)
	}
	r = post(line("a", "print(1)") + "\n" + line("a", "print(2)") + "\n")
	if r.Status != 400 || !strings.Contains(string(r.Body), "duplicate custom_id") || !strings.Contains(string(r.Body), "line 2") {
		t.Fatalf("duplicate: %d %s", r.Status, r.Body)
	}

	// OpenAI shape with failures; then retry the failed ones only.
	var body strings.Builder
	for i := 0; i < 10; i++ {
		code := fmt.Sprintf("print(%d*%d)", i, i)
		if i%4 == 1 {
			code = "raise SystemExit(3)"
		}
		body.WriteString(line(fmt.Sprintf("req-%d", i), code) + "\n")
	}
	b := post(body.String()).must(t, 201).JSON(t)
	id := b["id"].(string)
	b = waitBatch(t, s.URL, id, testscale.D(2*time.Minute), "completed")
	if tot, ok, bad := counts(b); tot != 10 || ok != 7 || bad != 3 {
		t.Fatalf("counts %d/%d/%d", tot, ok, bad)
	}
	for _, l := range results(t, s.URL+"/v1/batches/"+id+"/results") {
		var i int
		fmt.Sscanf(l.CustomID, "req-%d", &i)
		if i%4 == 1 {
			if l.ExitCode == nil || *l.ExitCode != 3 {
				t.Errorf("%s: %+v", l.CustomID, l)
			}
		} else if strings.TrimSpace(l.Stdout) != fmt.Sprint(i*i) {
			t.Errorf("%s: stdout %q", l.CustomID, l.Stdout)
		}
	}
	if errs := results(t, s.URL+"/v1/batches/"+id+"/errors"); len(errs) != 3 {
		t.Errorf("errors view has %d lines, want 3", len(errs))
	}
	do(t, "POST", s.URL+"/v1/batches/"+id+"/retry", nil).must(t, 200)
	waitBatch(t, s.URL, id, testscale.D(2*time.Minute), "completed")
	lines := results(t, s.URL+"/v1/batches/"+id+"/results")
	if len(lines) != 10 {
		t.Fatalf("after retry %d lines", len(lines))
	}
	for _, l := range lines {
		var i int
		fmt.Sscanf(l.CustomID, "req-%d", &i)
		if want := map[bool]int{true: 2, false: 1}[i%4 == 1]; l.Attempt != want {
			t.Errorf("%s: attempt %d, want %d (retry reruns failed items only)", l.CustomID, l.Attempt, want)
		}
	}

	// Cancel mid-batch: in-flight items stop, queued ones are dropped.
	body.Reset()
	for i := 0; i < 30; i++ {
		body.WriteString(line(fmt.Sprintf("slow-%d", i), "import time; time.sleep(3)") + "\n")
	}
	r = do(t, "POST", s.URL+"/v1/batches?concurrency=2", []byte(body.String()), "Content-Type", "application/jsonl").must(t, 201)
	cid := r.JSON(t)["id"].(string)
	time.Sleep(1500 * time.Millisecond)
	c := do(t, "POST", s.URL+"/v1/batches/"+cid+"/cancel", nil).must(t, 200).JSON(t)
	if st := c["status"]; st != "cancelling" && st != "cancelled" {
		t.Fatalf("cancel answered %v", st)
	}
	start := time.Now()
	c = waitBatch(t, s.URL, cid, testscale.D(time.Minute), "cancelled")
	if _, ok, _ := counts(c); ok > 4 {
		t.Errorf("%d items completed after cancel", ok)
	}
	t.Logf("cancel took %s", time.Since(start))
	cl := results(t, s.URL+"/v1/batches/"+cid+"/results")
	nc := 0
	for _, l := range cl {
		if l.Status == "cancelled" {
			nc++
		}
	}
	if len(cl) != 30 || nc < 26 {
		t.Errorf("%d lines, %d cancelled", len(cl), nc)
	}

	// A zip-slip archive is refused with 400 before anything runs.
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("../../evil.py")
	w.Write([]byte("print('pwned')\n"))
	zw.Close()
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	mw.WriteField("spec", `{"tool_call":{"function":{"name":"run_python","arguments":{"code":"print(1)"}}}}`)
	fw, _ := mw.CreateFormFile("archive", "evil.zip")
	fw.Write(zb.Bytes())
	mw.Close()
	req, _ := http.NewRequest("POST", s.URL+"/v1/batches", &mb)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var eb bytes.Buffer
	eb.ReadFrom(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(eb.String(), "path traversal") {
		t.Fatalf("zip-slip: %d %s", res.StatusCode, eb.String())
	}
}
