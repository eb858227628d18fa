package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// debianPython is the interpreter the example must run with: Debian's,
// with nothing but the standard library.
const debianPython = "/usr/bin/python3"

// TestPythonExampleClient runs docs/python_client.py against a real
// `airlock serve` with a random CSV and checks what it printed: the
// per-region totals pandas computed, the plot it downloaded (checked
// against its sha256), the streamed call or its graceful skip, and the
// 404 after closing the session.
func TestPythonExampleClient(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(debianPython); err != nil {
		missing(t, "%s is not installed: %v", debianPython, err)
	}
	requireDocker(t)
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	srv := startServe(t)

	seed := rand.Uint64()
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	totals := map[string]int{}
	var csv strings.Builder
	csv.WriteString("region,sales\n")
	rows := 20 + rng.IntN(30)
	for range rows {
		region := []string{"north", "south", "east", "west"}[rng.IntN(4)]
		v := rng.IntN(1000)
		totals[region] += v
		fmt.Fprintf(&csv, "%s,%d\n", region, v)
	}
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "sales.csv")
	if err := os.WriteFile(csvPath, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPython, "-I", filepath.Join(root, "docs", "python_client.py"),
		"--server", srv.URL, "--csv", csvPath, "--out", dir)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("python_client.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	t.Logf("python_client.py printed:\n%s", out)

	var regions []string
	for r := range totals {
		regions = append(regions, r)
	}
	sort.Strings(regions)
	var want []string
	for _, r := range regions {
		want = append(want, fmt.Sprintf("%s=%d", r, totals[r]))
	}
	want = append(want, fmt.Sprintf("rows=%d", rows))
	if !strings.Contains(out, strings.Join(want, "\n")+"\n") {
		t.Errorf("pandas totals missing; want\n%s", strings.Join(want, "\n"))
	}
	if !strings.Contains(out, fmt.Sprintf("uploaded: data.csv %d bytes\n", csv.Len())) {
		t.Errorf("upload line missing")
	}
	m := regexp.MustCompile(`plot: image/png (\d+) bytes sha256_ok=True saved=(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no verified plot line")
	}
	png, err := os.ReadFile(m[2])
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || fmt.Sprint(len(png)) != m[1] {
		t.Errorf("saved plot %s: %v, %d bytes, want %s", m[2], err, len(png), m[1])
	}
	streamed := regexp.MustCompile(`stream: \d+ events`).MatchString(out)
	skipped := strings.Contains(out, "stream: skipped (the server answered application/json")
	if streamed == skipped {
		t.Errorf("want either a streamed call or its skip (streamed %v, skipped %v)", streamed, skipped)
	}
	if streamed && !strings.Contains(out, "tick 2") {
		t.Errorf("streamed call without its output")
	}
	if !strings.Contains(out, "session: closed\nafter close: 404 not_found\n") {
		t.Errorf("no 404 after closing the session")
	}
}
