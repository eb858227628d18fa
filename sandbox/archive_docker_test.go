package sandbox

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/airlock-dev/airlock/internal/testscale"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/prometheus/client_golang/prometheus"
)

// smallRepo is 20 files of 5,000 random hex bytes (100 KB) in four
// folders, and the sha256 of each, by path.
func smallRepo(seed uint64) ([]arEntry, map[string]string) {
	r := rand.New(rand.NewPCG(seed, 1))
	var entries []arEntry
	sums := map[string]string{}
	for i := 0; i < 20; i++ {
		b := make([]byte, 2500)
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		data := hex.EncodeToString(b)
		name := fmt.Sprintf("d%d/f%d.txt", i%4, i)
		entries = append(entries, arEntry{name: name, data: data})
		s := sha256.Sum256([]byte(data))
		sums[name] = hex.EncodeToString(s[:])
	}
	return entries, sums
}

// listing prints "path sha256" lines for every file under /workspace.
const listing = `
import hashlib, os
for d, _, fs in sorted(os.walk('/workspace')):
    for f in sorted(fs):
        p = os.path.join(d, f)
        print(os.path.relpath(p, '/workspace'), hashlib.sha256(open(p, 'rb').read()).hexdigest())
`

func wantListing(sums map[string]string) string {
	var lines []string
	for p, s := range sums {
		lines = append(lines, p+" "+s)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func execErr(t *testing.T, e *Engine, req core.Request) (core.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	return e.Exec(ctx, req)
}

// TestArchiveWarm (contract of Request.Archive): an archive is unpacked at
// /workspace in the owner's warm container, for python and shell code; the
// next call reuses that container (no new one) and sees none of the
// previous call's files; user code cannot simply write to /workspace; and
// the unpack of a small archive is timed.
func TestArchiveWarm(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	reg := prometheus.NewRegistry()
	e := pooledEngine(t, func(c *Config) { c.Metrics = reg })
	repo, sums := smallRepo(1)
	first := run(t, e, core.Request{Owner: "arc", Language: core.Python, Archive: makeTar(t, true, repo...),
		Code: listing + `
try:
    open('/workspace/new.txt', 'w')
    print('WROTE')
except OSError as exc:
    print('refused', exc.errno)
`})
	want := wantListing(sums) + "\nrefused 13"
	if first.Status != core.StatusOK || strings.TrimSpace(first.Stdout) != want {
		t.Fatalf("python call on a tar.gz: %s\nwant stdout %q", brief(first), want)
	}
	warm := e.WarmStats()

	// Shell code (in the python image: the same pool), a zip this time, same
	// owner: the same container, and not one file of the first archive left.
	repo2, sums2 := smallRepo(2)
	for i := range repo2 {
		repo2[i].name = "z/" + repo2[i].name
	}
	second := run(t, e, core.Request{Owner: "arc", Language: core.Shell, Image: e.cfg.Images[core.Python], Archive: makeZip(t, repo2...),
		Limits: core.Limits{Timeout: time.Minute},
		Code:   `cd /workspace && sha256sum $(find . -type f | LC_ALL=C sort); test -e d0 && echo LEFT; true`})
	var want2 []string
	for p, s := range sums2 {
		want2 = append(want2, s+"  ./z/"+p)
	}
	sort.Slice(want2, func(i, j int) bool { return want2[i][66:] < want2[j][66:] })
	if second.Status != core.StatusOK || strings.TrimSpace(second.Stdout) != strings.Join(want2, "\n") {
		t.Fatalf("shell call on a zip: %s\nwant %q", brief(second), strings.Join(want2, "\n"))
	}
	if second.Container != first.Container {
		t.Fatalf("the second archive call ran in %s, not in the owner's warm container %s", second.Container, first.Container)
	}
	after := e.WarmStats()
	if after["cold"] != warm["cold"] || after["owner"] != warm["owner"]+1 {
		t.Fatalf("the second archive call did not take the owner's warm container: before %v, after %v", warm, after)
	}

	// A call without an archive finds /workspace empty.
	third := run(t, e, core.Request{Owner: "arc", Language: core.Python, Code: "import os; print(os.listdir('/workspace'))"})
	if third.Status != core.StatusOK || strings.TrimSpace(third.Stdout) != "[]" || third.Container != first.Container {
		t.Fatalf("call after two archive calls: %s", brief(third))
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "airlock_sandbox_archive_unpack_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 2 {
				t.Fatalf("unpack histogram has %d samples, want 2", h.GetSampleCount())
			}
			t.Logf("unpack of 20 files / 100 KB in the container: %.2f ms on average over %d archives (tar.gz, zip)",
				h.GetSampleSum()*1000/float64(h.GetSampleCount()), h.GetSampleCount())
		}
	}
}

// escapes are archives that try to write outside /workspace; each names
// its bad entry and the paths the test checks afterwards.
func escapes(t *testing.T) []struct {
	name, entry string
	data        []byte
} {
	bomb := makeTar(t, true, arEntry{name: "zeros", size: 4 << 20})
	return []struct {
		name, entry string
		data        []byte
	}{
		{"zip slip", "../work/evil", makeTar(t, false, arEntry{name: "ok.txt", data: "fine"}, arEntry{name: "../work/evil", data: "x"})},
		{"zip slip in a zip", "../tmp/evil", makeZip(t, arEntry{name: "ok.txt", data: "fine"}, arEntry{name: "../tmp/evil", data: "x"})},
		{"absolute", "/tmp/evil", makeTar(t, false, arEntry{name: "/tmp/evil", data: "x"})},
		{"escaping symlink", "l", makeTar(t, false, arEntry{name: "l", kind: tar.TypeSymlink, link: "../tmp"}, arEntry{name: "l/evil", data: "x"})},
		{"symlink chain", "b", makeTar(t, false, arEntry{name: "a", kind: tar.TypeSymlink, link: "."},
			arEntry{name: "b", kind: tar.TypeSymlink, link: "a/../tmp"})},
		{"bomb", "zeros", bomb},
	}
}

// TestArchiveRefused: every escape is refused with ErrInvalid naming the
// entry, by the host-side listing and, when that is bypassed, by the
// controller itself; nothing is written outside /workspace and the
// owner's container stays usable and clean. Mount+Archive and an oversize
// archive are refused before any container.
func TestArchiveRefused(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := pooledEngine(t, nil)
	ctx := context.Background()
	for _, tc := range escapes(t) {
		t.Run(tc.name, func(t *testing.T) {
			_, err := execErr(t, e, core.Request{Owner: "arc", Language: core.Python, Archive: tc.data, Code: "print('ran')"})
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.entry)) {
				t.Fatalf("host check: got %v, want ErrInvalid naming %q", err, tc.entry)
			}
			// The controller's own check, with the host's bypassed.
			c, rej, err := e.check(ctx, core.Request{Owner: "arc", Language: core.Python, Archive: tc.data, Code: "print('ran')"})
			if err != nil || rej != nil {
				t.Fatalf("check: %v %+v", err, rej)
			}
			res, err := e.execRunner(ctx, c)
			if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.entry)) {
				t.Fatalf("controller: got %v (%s), want ErrInvalid naming %q", err, brief(res), tc.entry)
			}
			after := run(t, e, core.Request{Owner: "arc", Language: core.Python, Code: `
import os
print(sorted(p for p in ('/work/evil', '/tmp/evil', '/evil', '/workspace/evil') if os.path.lexists(p)), os.listdir('/workspace'))`})
			if after.Status != core.StatusOK || strings.TrimSpace(after.Stdout) != "[] []" {
				t.Fatalf("after the refused archive: %s", brief(after))
			}
		})
	}
	tiny := makeTar(t, false, arEntry{name: "a", data: "x"})
	if _, err := execErr(t, e, core.Request{Owner: "arc", Archive: tiny, Mount: t.TempDir(), Code: "1"}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("mount and archive: %v", err)
	}
	if _, err := execErr(t, e, core.Request{Owner: "arc", Archive: make([]byte, core.MaxArchiveBytes+1), Code: "1"}); !errors.Is(err, core.ErrTooLarge) {
		t.Fatalf("oversize archive: %v", err)
	}
	if st := e.WarmStats(); st["cold"] != 0 {
		t.Fatalf("a refused archive cost a container boot: %v", st)
	}
}

// TestCPUSeconds (contract of Result.CPUSeconds): the controller reports
// the CPU time of the call's processes: a 0.5 s busy loop (python, or a
// shell's child) counts between 0.3 and 2 s, print(1) under 0.3 s, in
// one-shot calls and as a per-call delta in a session. The bounds are
// wide on purpose: CPU time does not stretch with load as wall time does.
func TestCPUSeconds(t *testing.T) {
	e := pooledEngine(t, nil)
	busy := "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"
	check := func(what string, r core.Result, lo, hi float64) {
		t.Helper()
		if r.Status != core.StatusOK || r.CPUSeconds < lo || r.CPUSeconds > hi {
			t.Fatalf("%s: cpu_seconds %.3f, want %.1f..%.1f: %s", what, r.CPUSeconds, lo, hi, brief(r))
		}
		t.Logf("%s: cpu_seconds %.3f", what, r.CPUSeconds)
	}
	check("one-shot busy loop", run(t, e, core.Request{Owner: "cpu", Code: busy}), 0.3, 2)
	check("one-shot print(1)", run(t, e, core.Request{Owner: "cpu", Code: "print(1)"}), 0, 0.3)
	check("shell child busy loop", run(t, e, core.Request{Owner: "cpu", Language: core.Shell,
		Archive: makeTar(t, false, arEntry{name: "busy.py", data: busy}), Code: "python3 /workspace/busy.py"}), 0.3, 2)
	s := openSession(t, e, "cpu")
	defer func() { _ = e.CloseSession("cpu", s.ID) }()
	check("session busy loop", sexec(t, e, s.ID, "cpu", core.Python, busy, core.Limits{}), 0.3, 2)
	check("session print(1)", sexec(t, e, s.ID, "cpu", core.Python, "print(1)", core.Limits{}), 0, 0.3)
}
