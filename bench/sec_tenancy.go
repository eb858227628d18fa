package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
)

// tenancyKeys are the two API keys (owners) of section 7's server
// (keys of at least 16 characters, as the keys file requires).
var tenancyKeys = []string{"bench7-tenant-a-key-0001", "bench7-tenant-b-key-0002"}

// tenancyRounds is how many times each call of the artifact part runs
// (interleaved); few, as each costs a cold container on a busy machine.
const tenancyRounds = 5

// artifactSnippet writes 40 small files under outputs/ and shows one
// matplotlib figure: more artifacts than one call may return.
const artifactSnippet = `import os
import matplotlib.pyplot as plt
os.makedirs("/work/outputs", exist_ok=True)
for i in range(40):
    with open(f"/work/outputs/f{i:02d}.txt", "w") as f:
        f.write(f"file {i}\n")
plt.plot([1, 2, 3], [1, 4, 9])
plt.show()
print("done")
`

// sectionTenancy is issue 10's bench, through the HTTP API of a real
// `airlock serve` with two keys and default limits: (a) concurrent
// maximum-size uploads into sessions of both keys, 16 at once (8 per key)
// and then 4+4 (the per-key upload slots), with the server's RSS; (b) a
// one-shot call producing more artifacts than a call may return, against
// print(1), with the server's CPU time each costs.
func sectionTenancy(ctx context.Context, o options, q *quieter, rep *report) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	keys := filepath.Join(o.workdir, "tenancy-keys")
	if err := os.WriteFile(keys, []byte(strings.Join(tenancyKeys, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := "http://" + addr
	args := []string{o.airlock, "serve", "--keys-file", keys, "--addr", addr}
	srv, err := startServer(filepath.Join(o.workdir, "serve-tenancy.log"), childEnv(), args...)
	if err != nil {
		return err
	}
	defer srv.stop(30 * time.Second)
	if err := waitHTTP(ctx, srv, base+"/readyz", time.Minute); err != nil {
		return err
	}
	clients := make([]*client.Client, len(tenancyKeys))
	for i, k := range tenancyKeys {
		if clients[i], err = client.New(base, client.WithAPIKey(k)); err != nil {
			return err
		}
	}
	info, err := clients[0].GetInfo(ctx)
	if err != nil {
		return fmt.Errorf("GET /v1/info: %w", err)
	}
	if info.MaxUploadBytes <= 0 {
		return fmt.Errorf("GET /v1/info: max_upload_bytes is %d", info.MaxUploadBytes)
	}
	if err := q.wait(ctx); err != nil { // lets the generic pool fill
		return err
	}
	up, err := tenancyUploads(ctx, q, srv, clients, info.MaxUploadBytes)
	if err != nil {
		return err
	}
	for _, n := range up.notes {
		up.t.note("%s", n)
	}
	up.t.note("Server: `%s` (in-process queue, embedded worker, default limits and budgets); each key is one owner.", strings.Join(append([]string{"airlock"}, args[1:]...), " "))
	rep.table(up.t)
	at, err := tenancyArtifacts(ctx, q, srv, clients[0])
	if err != nil {
		return err
	}
	rep.table(at)
	return nil
}

// uploadsResult is part (a)'s table and its notes.
type uploadsResult struct {
	t     *table
	notes []string
}

// tenancyUploads opens the per-key session budget of sessions for each key
// and runs two rounds of concurrent maximum-size uploads into them.
func tenancyUploads(ctx context.Context, q *quieter, srv *server, clients []*client.Client, size int64) (*uploadsResult, error) {
	res := &uploadsResult{t: &table{
		title: fmt.Sprintf("7a. Tenancy — concurrent `PUT /v1/sessions/{id}/files/...` of the maximum upload size (%s), two keys", mib(size)),
		head:  []string{"uploads", "sessions", "wall time", "status mix", "server VmRSS before → after", "peak sampled VmRSS", "VmHWM before → after", "bytes accepted"},
	}}
	sessions := make([][]string, len(clients))
	defer func() {
		for k, ids := range sessions {
			for _, id := range ids {
				dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_ = clients[k].DeleteSession(dctx, id)
				cancel()
			}
		}
	}()
	// As many sessions per key as its budget allows (the default is 4):
	// the 429 quota that ends the loop is expected and noted.
	for k, c := range clients {
		for len(sessions[k]) < 16 {
			s, err := c.CreateSession(ctx, nil)
			if client.HasCode(err, core.ErrQuota) {
				res.notes = append(res.notes, fmt.Sprintf("Key %c: %d sessions opened, the next refused: %s", 'A'+k, len(sessions[k]), shortErr(err)))
				break
			}
			if err != nil {
				return nil, fmt.Errorf("open session %d of key %c: %w", len(sessions[k])+1, 'A'+k, err)
			}
			sessions[k] = append(sessions[k], s.ID)
		}
	}
	body := bytes.Repeat([]byte("airlock-bench-7\n"), int(size/16)+1)[:size]
	round := func(perKey int, label string) error {
		if err := q.wait(ctx); err != nil {
			return err
		}
		logf("section 7: %s: %d uploads per key of %s", label, perKey, mib(size))
		hwm0 := procKB(srv.pid(), "VmHWM")
		sampler := sampleRSS(srv.pid())
		var mu sync.Mutex
		mix := map[string]int{}
		var accepted int64
		var firstErr string
		var wg sync.WaitGroup
		start := time.Now()
		for k, c := range clients {
			for i := 0; i < perKey; i++ {
				// Upload i goes to session i mod n; the file name keeps
				// two uploads into one session apart.
				sid := sessions[k][i%len(sessions[k])]
				path := fmt.Sprintf("upload-%d.bin", i/len(sessions[k]))
				wg.Add(1)
				go func() {
					defer wg.Done()
					w, err := c.PutSessionFile(ctx, sid, path, bytes.NewReader(body))
					mu.Lock()
					defer mu.Unlock()
					mix[uploadStatus(err)]++
					if err == nil {
						accepted += w.Size
					} else if !client.HasCode(err, core.ErrQuota) && firstErr == "" {
						firstErr = shortErr(err)
					}
				}()
			}
		}
		wg.Wait()
		wall := time.Since(start)
		rss := sampler.finish()
		res.t.row(fmt.Sprintf("%d (%d per key) %s", perKey*len(clients), perKey, label),
			strconv.Itoa(len(sessions[0])+len(sessions[1])), ms(wall), renderMix(mix),
			mib(rss.before)+" → "+mib(rss.after), mib(rss.peakSampled), mib(hwm0)+" → "+mib(rss.hwm),
			mib(accepted))
		if firstErr != "" {
			res.notes = append(res.notes, fmt.Sprintf("%s: first error other than 429 quota: %s", label, firstErr))
		}
		return nil
	}
	if len(sessions[0]) == 0 || len(sessions[1]) == 0 {
		return nil, errors.New("no sessions could be opened")
	}
	if err := round(8, "at once"); err != nil {
		return nil, err
	}
	// Empty the work folders (64 MiB tmpfs each) before the next round.
	for k, ids := range sessions {
		for _, id := range ids {
			r, err := clients[k].CallSessionTool(ctx, id, client.ToolCall{Name: "run_python",
				Arguments: map[string]any{"code": "import glob, os\nfor p in glob.glob('/work/upload-*.bin'):\n    os.remove(p)"}})
			if err != nil {
				return nil, fmt.Errorf("clean session %s: %w", id, err)
			}
			if r.Result.Status != core.StatusOK {
				return nil, fmt.Errorf("clean session %s: status %s: %s %s", id, r.Result.Status, r.Result.Reason, r.Result.Stderr)
			}
		}
	}
	if err := round(4, "within the per-key upload slots"); err != nil {
		return nil, err
	}
	res.notes = append(res.notes,
		"Status mix: HTTP status of each upload (429 with its error code); uploads start together, one goroutine each, the same body from one buffer in the bench. A key may run MaxUploadsPerKey (4) uploads at once, 429 quota beyond, and the server MaxUploads (16), 429 busy beyond (api/README.md): 8 per key at once is over the first by design, hence the second row.",
		"VmRSS sampled every 20 ms during the round; VmHWM is the kernel's high-water mark of the server process (the whole life of the process, so \"after\" never falls below \"before\"). The worker is embedded: its chunk handling counts here too.",
		fmt.Sprintf("Upload i of a key goes to session i mod %d of that key, as `upload-<i div %d>.bin`; the work folders are emptied between rounds.", len(sessions[0]), len(sessions[0])))
	return res, nil
}

// tenancyArtifacts times a one-shot call returning more artifacts than a
// call may keep against print(1), with the server's CPU time for each.
func tenancyArtifacts(ctx context.Context, q *quieter, srv *server, c *client.Client) (*table, error) {
	t := &table{title: "7b. Tenancy — a call returning the maximum number of artifacts (`POST /v1/tool-calls` run_python)",
		head: []string{"call", "runs", "wall time p50 (max)", "server CPU per call, /proc stat ticks (mean, min–max)", "server CPU per call, schedstat (mean, min–max)", "artifacts returned / kept (with url)", "warnings"}}
	type variant struct {
		name, code, want string
		wall             series
		cpu, sched       []time.Duration
		arts, kept, imgs int
		warnings         []string
		fails            []string
	}
	vs := []*variant{
		{name: "print(1)", code: "print(1)", want: "1\n"},
		{name: "40 files under outputs/ + 1 matplotlib figure", code: artifactSnippet, want: "done\n"},
	}
	for r := 0; r < tenancyRounds && ctx.Err() == nil; r++ {
		for _, v := range vs {
			if err := q.wait(ctx); err != nil {
				return nil, err
			}
			logf("section 7: %s, round %d", v.name, r+1)
			cpu0, err := procCPU(srv.pid())
			if err != nil {
				return nil, err
			}
			sched0 := procSchedNS(srv.pid())
			start := time.Now()
			res, err := c.CallTool(ctx, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": v.code}})
			wall := time.Since(start)
			cpu1, cerr := procCPU(srv.pid())
			sched1 := procSchedNS(srv.pid())
			if cerr != nil {
				return nil, cerr
			}
			if err == nil && (res.Result.Status != core.StatusOK || res.Result.Stdout != v.want) {
				err = fmt.Errorf("status %s stdout %q stderr %q", res.Result.Status, res.Result.Stdout, res.Result.Stderr)
			}
			if err != nil {
				v.fails = append(v.fails, shortErr(err))
				continue
			}
			v.wall.add(wall)
			v.cpu = append(v.cpu, cpu1-cpu0)
			v.sched = append(v.sched, sched1-sched0)
			v.arts = len(res.Result.Artifacts)
			v.kept, v.imgs = 0, 0
			for _, a := range res.Result.Artifacts {
				if a.URL != "" {
					v.kept++
				}
				if strings.HasPrefix(a.MIME, "image/") {
					v.imgs++
				}
			}
			v.warnings = res.Result.Warnings
		}
	}
	for _, v := range vs {
		warn := "—"
		if len(v.warnings) > 0 {
			warn = fmt.Sprintf("%d, first: `%s`; last: `%s`", len(v.warnings), v.warnings[0], v.warnings[len(v.warnings)-1])
		}
		t.row(v.name, strconv.Itoa(len(v.wall.d)), ms(v.wall.pct(50))+" ("+ms(v.wall.max())+")", cpuSummary(v.cpu), cpuSummary(v.sched),
			fmt.Sprintf("%d / %d (%d image)", v.arts, v.kept, v.imgs), warn)
		if len(v.fails) > 0 {
			t.note("%s: %d failed calls (first: %s)", v.name, len(v.fails), v.fails[0])
		}
	}
	t.note("Server CPU: utime+stime of the `airlock serve` process from /proc/<pid>/stat before and after the call (10 ms ticks, so a call under 10 ms often reads 0), and the sum of the first field (ns on CPU) of /proc/<pid>/task/*/schedstat over its threads. The embedded worker is included, the container and dockerd are not. The warm pool refilling after a call runs in the same process, so a call's figure includes what of that refill overlapped it.")
	t.note("Artifacts: the last run's result. The API caps a call at ArtifactMaxPerCall (32) and re-checks in Go; the sandbox engine's own default cap (MaxArtifacts, 10) applies first under `airlock serve`.")
	return t, nil
}

// procCPU returns the user+system CPU time of pid from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read cpu time: %w", err)
	}
	// Fields after the command name (which may hold spaces) start at state.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("read cpu time: odd /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("read cpu time: short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read cpu time: parse /proc/%d/stat", pid)
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(ut+st) * tick, nil
}

// procSchedNS returns the time pid's live threads have spent on a CPU,
// from the first field of /proc/PID/task/*/schedstat (nanoseconds); 0
// when unreadable. Threads that exited are not counted.
func procSchedNS(pid int) time.Duration {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil {
		return 0
	}
	var sum int64
	for _, p := range tasks {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(raw)); len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += n
		}
	}
	return time.Duration(sum)
}

// cpuSummary renders CPU times as "40 ms (30–50 ms)".
func cpuSummary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	var sum time.Duration
	lo, hi := ds[0], ds[0]
	for _, d := range ds {
		sum += d
		lo, hi = min(lo, d), max(hi, d)
	}
	zero := func(d time.Duration) string {
		if d == 0 {
			return "0 ms"
		}
		return ms(d)
	}
	return fmt.Sprintf("%s (%s–%s)", zero(sum/time.Duration(len(ds))), zero(lo), zero(hi))
}

// uploadStatus names an upload's outcome: "200", "429 quota", "transport".
func uploadStatus(err error) string {
	if err == nil {
		return "200"
	}
	var e *client.APIError
	if errors.As(err, &e) {
		if e.Code != "" {
			return fmt.Sprintf("%d %s", e.StatusCode, e.Code)
		}
		return strconv.Itoa(e.StatusCode)
	}
	return "transport error"
}

// renderMix renders outcome counts like "200×8, 429 quota×8".
func renderMix(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// shortErr is err's text cut to fit a table note.
func shortErr(err error) string {
	s := err.Error()
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}
