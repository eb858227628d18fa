package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// appendCall is a run_python call that appends its id to a file in the
// session and prints the whole file.
func appendCall(id string) agenttest.Call {
	code := fmt.Sprintf("with open('takeover.log', 'a') as f:\n    f.write(%q + '\\n')\nprint(open('takeover.log').read(), end='')", id)
	return agenttest.Call{ID: id, Name: "run_python", Arguments: mustJSON(map[string]any{"code": code})}
}

// timedEvent is an event with its time.
type timedEvent struct {
	event
	Time time.Time `json:"time"`
}

// streamEvents reads a run's SSE stream from lastID until it ends or
// breaks (the replica died); unlike readSSE a broken stream is not an
// error.
func streamEvents(ctx context.Context, url, lastID string) []timedEvent {
	var hdr []string
	if lastID != "" {
		hdr = []string{"Last-Event-ID", lastID}
	}
	req, err := request(ctx, "GET", url, nil, hdr...)
	if err != nil {
		return nil
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var evs []timedEvent
	var data string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimSpace(line[5:])
		case line == "" && data != "":
			var e timedEvent
			if json.Unmarshal([]byte(data), &e) == nil {
				evs = append(evs, e)
			}
			data = ""
		}
	}
	return evs
}

// TestRunTakeoverAcrossReplicas: two `airlock serve --redis` replicas and
// one worker; a 5-step run started on A, whose tools append to a file in
// the run's session. A is killed (-9) while it waits for the model at
// step 2: B takes the run over from its checkpoint and finishes it, every
// tool call ran exactly once (one line per call in the file), and a
// client that followed the stream on A resumes it on B with
// Last-Event-ID, with no lost or duplicated event id.
func TestRunTakeoverAcrossReplicas(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	rs := redistest.Start(t, true)
	qname := fmt.Sprintf("e2e%d", time.Now().UnixNano())

	var mu sync.Mutex
	var replicaA *server
	killed := make(chan time.Time, 1)
	kill := func(req agenttest.Request) agenttest.Reply {
		mu.Lock()
		a := replicaA
		mu.Unlock()
		a.proc.signal(syscall.SIGKILL)
		killed <- time.Now()
		<-req.Ctx.Done()
		return agenttest.Reply{Content: "never seen"}
	}
	model := agenttest.NewServer(
		agenttest.CallTools(appendCall("c1")),
		kill, // A asks for step 2 and dies waiting
		agenttest.CallTools(appendCall("c2")),
		agenttest.CallTools(appendCall("c3")),
		agenttest.CallTools(appendCall("c4")),
		agenttest.Say("all four written"),
	)
	defer model.Close()

	w := startProc(t, "airlock worker", "worker", "--redis", rs.URL(), "--queue", qname, "--concurrency", "2", "--pool", "1")
	w.waitLog("worker started", startTimeout)
	args := []string{"--redis", rs.URL(), "--queue", qname, "--concurrency", "0", "--base-url", model.URL, "--model", "test"}
	a := startServe(t, args...)
	b := startServe(t, args...)
	mu.Lock()
	replicaA = a
	mu.Unlock()

	sid, _ := do(t, "POST", a.URL+"/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)["id"].(string)
	view := do(t, "POST", a.URL+"/v1/runs", map[string]any{"goal": "write four lines", "session_id": sid}).must(t, http.StatusCreated).JSON(t)
	id, _ := view["id"].(string)
	// Replicas share runs: B answers for the run A drives.
	if r := do(t, "GET", b.URL+"/v1/runs/"+id, nil); r.Status != http.StatusOK {
		t.Fatalf("GET run %s on replica B: %d %s (serve must give the agent Manager a shared state store with --redis)", id, r.Status, r.Body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	onA := streamEvents(ctx, a.URL+"/v1/runs/"+id+"/events", "")
	var diedAt time.Time
	select {
	case diedAt = <-killed:
	case <-ctx.Done():
		t.Fatal("replica A never reached step 2")
	}
	if len(onA) == 0 {
		t.Fatal("no events read on A before it died")
	}
	last := onA[len(onA)-1].Seq
	onB := streamEvents(ctx, b.URL+"/v1/runs/"+id+"/events", strconv.Itoa(last))
	all := append(append([]timedEvent(nil), onA...), onB...)
	for i, e := range all {
		if e.Seq != i+1 {
			t.Fatalf("event %d has id %d (A gave %d events up to %d, B resumed with %d)", i, e.Seq, len(onA), last, len(onB))
		}
	}
	if len(all) == 0 || all[len(all)-1].Type != "run_finished" {
		t.Fatalf("stream did not end with run_finished: %v", all)
	}
	if full := streamEvents(ctx, b.URL+"/v1/runs/"+id+"/events", ""); len(full) != len(all) {
		t.Fatalf("full replay on B: %d events, resumed stream %d", len(full), len(all))
	}

	got := do(t, "GET", b.URL+"/v1/runs/"+id, nil).must(t, http.StatusOK).JSON(t)
	if got["status"] != "done" || got["final_answer"] != "all four written" || got["steps"] != float64(5) {
		t.Fatalf("run after takeover: %v", got)
	}
	// The last tool call printed the file: one line per call, each once.
	var lastOut string
	results := 0
	for _, e := range all {
		if e.Type != "tool_result" {
			continue
		}
		results++
		var d struct {
			Stdout string `json:"stdout"`
		}
		_ = json.Unmarshal(e.Data, &d)
		lastOut = d.Stdout
	}
	if lastOut != "c1\nc2\nc3\nc4\n" || results != 4 {
		t.Fatalf("%d tool results; the session file reads %q, want each call's line once", results, lastOut)
	}
	if n := len(model.Requests()); n != 6 {
		t.Errorf("%d model requests, want 6 (step 2 repeated once)", n)
	}
	// The takeover is bounded: lease (6 s) plus one scan (2 s); B's first
	// event is its repeat of step 2.
	if len(onB) == 0 || onB[0].Type != "step_started" || onB[0].Step != 2 {
		t.Fatalf("B resumed with %v, want step_started of step 2", onB)
	}
	if took, bound := onB[0].Time.Sub(diedAt), 8*time.Second+testscale.D(2*time.Second); took > bound {
		t.Errorf("B resumed the run %v after A died, want at most %v", took, bound)
	}
}
