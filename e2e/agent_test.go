package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// The first article's task.
const (
	countGoal    = "list the .py files and count their lines"
	countCallID  = "call_count_lines"
	countCommand = "find /workspace -name '*.py' | sort | xargs wc -l"
)

// pyTree is a folder of random .py files and the line counts the test
// computed itself.
type pyTree struct {
	dir   string
	lines map[string]int // path under the folder → line count
	total int
}

// makePyTree writes 3–8 .py files (one in a subfolder) with random line
// counts, plus a non-.py file that must not be counted. The seed is
// logged so a failure can be replayed with AIRLOCK_E2E_SEED.
func makePyTree(t *testing.T) pyTree {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("AIRLOCK_E2E_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("random seed %d (set AIRLOCK_E2E_SEED to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	tr := pyTree{dir: t.TempDir(), lines: map[string]int{}}
	if err := os.Mkdir(filepath.Join(tr.dir, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	n := 3 + rng.IntN(6)
	for i := range n {
		name := fmt.Sprintf("mod%d_%04d.py", i, rng.IntN(10000))
		if i == n-1 {
			name = "pkg/" + name
		}
		count := 1 + rng.IntN(300)
		var b strings.Builder
		for l := range count {
			fmt.Fprintf(&b, "value_%d = %d\n", l, rng.IntN(1000))
		}
		if err := os.WriteFile(filepath.Join(tr.dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		tr.lines[name] = count
		tr.total += count
	}
	// Not a .py file: its lines must not be counted.
	if err := os.WriteFile(filepath.Join(tr.dir, "notes.txt"), []byte(strings.Repeat("not python\n", 1+rng.IntN(50))), 0o644); err != nil {
		t.Fatal(err)
	}
	// The sandbox user is not the test's user: the folder must be readable.
	for _, d := range []string{tr.dir, filepath.Join(tr.dir, "pkg")} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d .py files, %d lines in total", n, tr.total)
	return tr
}

var wcTotal = regexp.MustCompile(`(?m)^\s*(\d+)\s+total\s*$`)

// countModel is the scripted model: it asks for the shell command, then
// answers with the total it parses from the tool message it receives, so
// the answer carries what the sandbox computed.
func countModel() *agenttest.Server {
	return agenttest.NewServer(
		agenttest.CallTools(agenttest.Call{ID: countCallID, Name: "execute_shell",
			Arguments: mustJSON(map[string]string{"command": countCommand})}),
		func(req agenttest.Request) agenttest.Reply {
			out := req.LastTool()
			m := wcTotal.FindStringSubmatch(out)
			if m == nil {
				return agenttest.Reply{Content: "I could not find a total in the tool output: " + out}
			}
			return agenttest.Reply{Content: fmt.Sprintf("The .py files have %s lines in total.", m[1])}
		},
	)
}

// mustJSON encodes v.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// event is an agent event as printed by `airlock run --json` and sent as SSE.
type event struct {
	Seq  int             `json:"seq"`
	Type string          `json:"type"`
	Step int             `json:"step"`
	Data json.RawMessage `json:"data"`
}

// eventData is the union of the event payloads the tests read.
type eventData struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Arguments   string `json:"arguments"`
	Status      string `json:"status"`
	Content     string `json:"content"`
	FinalAnswer string `json:"final_answer"`
	Error       string `json:"error"`
}

// data decodes an event's payload.
func (e event) data(t *testing.T) eventData {
	t.Helper()
	var d eventData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("event %d (%s) data: %v: %s", e.Seq, e.Type, err, e.Data)
	}
	return d
}

// checkCountRun asserts the events of a counting run: the shell call, its
// result listing every file with its count, and a final answer carrying the
// total the test computed; and that the model saw the tool message.
func checkCountRun(t *testing.T, tr pyTree, evs []event, model *agenttest.Server) {
	t.Helper()
	var call, result, final, finished *event
	for i := range evs {
		e := &evs[i]
		if i > 0 && e.Seq != evs[i-1].Seq+1 {
			t.Errorf("event seq %d follows %d", e.Seq, evs[i-1].Seq)
		}
		switch e.Type {
		case "tool_call":
			call = e
		case "tool_result":
			result = e
		case "final_answer":
			final = e
		case "run_finished":
			finished = e
		}
	}
	if call == nil || result == nil || final == nil || finished == nil {
		t.Fatalf("events lack a tool call, result, final answer or end: %+v", evs)
	}
	if !(call.Seq < result.Seq && result.Seq < final.Seq && final.Seq < finished.Seq) {
		t.Errorf("events out of order: call %d, result %d, final %d, finished %d", call.Seq, result.Seq, final.Seq, finished.Seq)
	}
	cd := call.data(t)
	if cd.ID != countCallID || cd.Name != "execute_shell" || !strings.Contains(cd.Arguments, "wc -l") {
		t.Errorf("tool_call event %+v", cd)
	}
	rd := result.data(t)
	if rd.ID != countCallID || rd.Status != "ok" {
		t.Errorf("tool_result event id %q status %q: %s", rd.ID, rd.Status, rd.Content)
	}
	for name, n := range tr.lines {
		if !regexp.MustCompile(`(?m)^\s*` + strconv.Itoa(n) + `\s+/workspace/` + regexp.QuoteMeta(name) + `\s*$`).MatchString(rd.Content) {
			t.Errorf("tool result does not list %s with %d lines:\n%s", name, n, rd.Content)
		}
	}
	if strings.Contains(rd.Content, "notes.txt") {
		t.Errorf("tool result counted notes.txt:\n%s", rd.Content)
	}
	want := fmt.Sprintf("The .py files have %d lines in total.", tr.total)
	if fd := final.data(t); fd.Content != want {
		t.Errorf("final answer %q, want %q", fd.Content, want)
	}
	if fin := finished.data(t); fin.Status != "done" || fin.FinalAnswer != want {
		t.Errorf("run_finished status %q final %q (error %q)", fin.Status, fin.FinalAnswer, fin.Error)
	}
	// The model was asked twice; the second time with the tool message,
	// tied to its call by id.
	if errs := model.Errors(); len(errs) > 0 {
		t.Errorf("fake model saw problems: %v", errs)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	if !contains(reqs[0].Tools, "execute_shell") {
		t.Errorf("first request offered tools %v, without execute_shell", reqs[0].Tools)
	}
	var toolMsg *agenttest.Message
	for i, m := range reqs[1].Messages {
		if m.Role == "tool" {
			toolMsg = &reqs[1].Messages[i]
		}
	}
	if toolMsg == nil || toolMsg.ToolCallID != countCallID || !strings.Contains(toolMsg.Content, fmt.Sprintf("%d total", tr.total)) {
		t.Errorf("second request's tool message %+v", toolMsg)
	}
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestAgentCountLinesCLI is issue 6's end-to-end test: `airlock run
// --mount DIR --json` against the scripted model; the answer must carry
// the line count the sandbox computed from files the test made at random.
func TestAgentCountLinesCLI(t *testing.T) {
	t.Parallel()
	dc := requireDocker(t)
	tr := makePyTree(t)
	model := countModel()
	defer model.Close()

	p := startProc(t, "airlock run", "run", "--base-url", model.URL, "--model", "test",
		"--mount", tr.dir, "--json", countGoal)
	if code := p.wait(testscale.D(5 * time.Minute)); code != 0 {
		t.Fatalf("airlock run exited %d:\n%s", code, p.stderr.String())
	}
	var evs []event
	sc := bufio.NewScanner(strings.NewReader(p.stdout.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("stdout line is not a JSON event (%v): %s", err, sc.Text())
		}
		evs = append(evs, e)
	}
	checkCountRun(t, tr, evs, model)
	if goal := model.Requests()[0].Text("user"); !strings.Contains(goal, countGoal) {
		t.Errorf("the model was not given the goal: %q", goal)
	}
	poll(t, stopTimeout, "airlock run's containers to be removed", func() bool { return len(containers(t, dc, p.pid())) == 0 })
}

// TestAgentCountLinesAPI runs the same task through `airlock serve`: an
// allowed input folder (--input), POST /v1/runs, the SSE event stream,
// GET /v1/runs/{id}, and resuming the stream with Last-Event-ID.
func TestAgentCountLinesAPI(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	tr := makePyTree(t)
	model := countModel()
	defer model.Close()
	srv := startServe(t, "--base-url", model.URL, "--model", "test", "--input", "code="+tr.dir)

	// Only allowed folder names are accepted, never host paths.
	if r := do(t, "POST", srv.URL+"/v1/runs", map[string]any{"goal": countGoal, "input": tr.dir}); r.Status != http.StatusBadRequest || r.errCode(t) != "bad_request" {
		t.Fatalf("run with a host path as input: %d %s", r.Status, r.Body)
	}
	view := do(t, "POST", srv.URL+"/v1/runs", map[string]any{"goal": countGoal, "input": "code"}).must(t, http.StatusCreated).JSON(t)
	id, _ := view["id"].(string)
	if id == "" {
		t.Fatalf("run without id: %v", view)
	}
	evs := readSSE(t, srv.URL+"/v1/runs/"+id+"/events", "")
	checkCountRun(t, tr, evs, model)

	got := do(t, "GET", srv.URL+"/v1/runs/"+id, nil).must(t, http.StatusOK).JSON(t)
	if got["status"] != "done" || got["final_answer"] != fmt.Sprintf("The .py files have %d lines in total.", tr.total) {
		t.Errorf("run view %v", got)
	}

	// Resuming after an event replays exactly the rest.
	after := evs[1].Seq
	rest := readSSE(t, srv.URL+"/v1/runs/"+id+"/events", strconv.Itoa(after))
	if len(rest) != len(evs)-2 {
		t.Fatalf("resumed after %d: %d events, want %d", after, len(rest), len(evs)-2)
	}
	for i, e := range rest {
		if w := evs[i+2]; e.Seq != w.Seq || e.Type != w.Type || !bytes.Equal(e.Data, w.Data) {
			t.Errorf("resumed event %d = %d %s, want %d %s", i, e.Seq, e.Type, w.Seq, w.Type)
		}
	}
}

// readSSE reads a run's event stream until it ends (the run is over),
// checking that each message's id and event fields match its data.
func readSSE(t *testing.T, url, lastID string) []event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var hdr []string
	if lastID != "" {
		hdr = []string{"Last-Event-ID", lastID}
	}
	req, err := request(ctx, "GET", url, nil, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	var evs []event
	var id, typ, data string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			typ = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimSpace(line[5:])
		case line == "" && data != "":
			var e event
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("SSE data is not an event (%v): %s", err, data)
			}
			if id != strconv.Itoa(e.Seq) || typ != e.Type {
				t.Errorf("SSE id %q event %q for seq %d type %s", id, typ, e.Seq, e.Type)
			}
			evs = append(evs, e)
			id, typ, data = "", "", ""
		case line == "":
			id, typ = "", ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	if len(evs) == 0 || evs[len(evs)-1].Type != "run_finished" {
		t.Fatalf("stream ended without run_finished: %+v", evs)
	}
	return evs
}
