package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
)

// sectionJupyter is issue 31's figure: a warm print(1) as an
// execute_request over the Jupyter gateway's websocket (sent until its
// status idle) against the same call over the REST session route, in the
// same session, interleaved pair by pair (as many pairs as section 5).
func sectionJupyter(ctx context.Context, o options, q *quieter, rep *report) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := "http://" + addr
	args := []string{o.airlock, "serve", "--insecure-local", "--rate", "-1", "--python-image", o.pythonImg, "--shell-image", o.batch.shellImg, "--addr", addr}
	srv, err := startServer(filepath.Join(o.workdir, "serve-jupyter.log"), childEnv(), args...)
	if err != nil {
		return err
	}
	defer srv.stop(30 * time.Second)
	if err := waitHTTP(ctx, srv, base+"/readyz", time.Minute); err != nil {
		return err
	}
	res, err := http.Post(base+"/api/kernels", "application/json", strings.NewReader(`{"name":"python"}`))
	if err != nil {
		return fmt.Errorf("section 10: start a kernel: %w", err)
	}
	var kernel struct {
		ID string `json:"id"`
	}
	err = json.NewDecoder(res.Body).Decode(&kernel)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusCreated {
		return fmt.Errorf("section 10: start a kernel: status %d, %v", res.StatusCode, err)
	}
	sid := "s-" + strings.ReplaceAll(strings.TrimPrefix(kernel.ID, "s-"), "-", "") // the kernel id is the session id with dashes
	rest, err := client.New(base)
	if err != nil {
		return err
	}
	defer func() { _ = rest.DeleteSession(context.Background(), sid) }()
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/api/kernels/"+kernel.ID+"/channels", nil)
	if err != nil {
		return fmt.Errorf("section 10: websocket: %w", err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(16 << 20)

	n := 0
	viaWS := func() error {
		n++
		id := fmt.Sprintf("bench-%d", n)
		msg, _ := json.Marshal(map[string]any{"channel": "shell",
			"header":        map[string]any{"msg_id": id, "msg_type": "execute_request", "session": "bench", "username": "bench", "version": "5.3"},
			"content":       map[string]any{"code": "print(1)", "silent": false, "store_history": true, "allow_stdin": false, "stop_on_error": true},
			"parent_header": map[string]any{}, "metadata": map[string]any{}})
		if err := ws.Write(ctx, websocket.MessageText, msg); err != nil {
			return err
		}
		out, reply := "", ""
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return err
			}
			var m struct {
				MsgType      string         `json:"msg_type"`
				ParentHeader map[string]any `json:"parent_header"`
				Content      map[string]any `json:"content"`
			}
			if json.Unmarshal(data, &m) != nil || m.ParentHeader["msg_id"] != id {
				continue
			}
			switch m.MsgType {
			case "stream":
				out += fmt.Sprint(m.Content["text"])
			case "execute_reply":
				reply = fmt.Sprint(m.Content["status"])
			case "status":
				if m.Content["execution_state"] == "idle" {
					if reply != "ok" || out != "1\n" {
						return fmt.Errorf("websocket: reply %q, stdout %q", reply, out)
					}
					return nil
				}
			}
		}
	}
	viaREST := func() error {
		res, err := rest.CallSessionTool(ctx, sid, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}})
		if err != nil {
			return err
		}
		if res.Result.Status != core.StatusOK || res.Result.Stdout != "1\n" {
			return fmt.Errorf("REST: status %s, stdout %q", res.Result.Status, res.Result.Stdout)
		}
		return nil
	}
	for i := 0; i < mcpWarmup; i++ {
		if err := viaWS(); err != nil {
			return fmt.Errorf("section 10: warm-up: %w", err)
		}
		if err := viaREST(); err != nil {
			return fmt.Errorf("section 10: warm-up: %w", err)
		}
	}
	sw := &series{name: "Jupyter execute_request over /api/kernels/{id}/channels (to status idle)"}
	sr := &series{name: "REST POST /v1/sessions/{id}/tool-calls"}
	var diffs []time.Duration
	for i := 0; i < o.mcpN; i++ {
		if err := q.wait(ctx); err != nil {
			return err
		}
		order := []struct {
			s  *series
			fn func() error
		}{{sw, viaWS}, {sr, viaREST}}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		var took [2]time.Duration
		ok := true
		for j, v := range order {
			t := time.Now()
			err := v.fn()
			took[j] = time.Since(t)
			if err != nil {
				v.s.fail(err)
				ok = false
				continue
			}
			v.s.add(took[j])
		}
		if ok {
			d := took[0] - took[1] // websocket − REST
			if i%2 == 1 {
				d = -d
			}
			diffs = append(diffs, d)
		}
	}
	t := &table{title: fmt.Sprintf("10. Jupyter gateway — warm print(1) over the kernel websocket vs the REST session route, %d interleaved pairs", o.mcpN),
		head: []string{"path", "calls", "p50", "p95", "max", "failed"}}
	for _, s := range []*series{sw, sr} {
		t.row(s.name, fmt.Sprint(len(s.d)), ms(s.pct(50)), ms(s.pct(95)), ms(s.max()), s.failures())
	}
	t.row("**websocket − REST**", fmt.Sprint(len(diffs)), "**"+signedMS(sw.pct(50)-sr.pct(50))+"**", signedMS(sw.pct(95)-sr.pct(95)), "", "")
	t.note("Server: `%s`; one kernel (an Airlock session) reached both ways, warm after %d unmeasured calls each; the websocket side is a raw client speaking the messaging protocol (busy, execute_input, stream, execute_reply, idle per call).",
		strings.Join(append([]string{"airlock"}, args[1:]...), " "), mcpWarmup)
	t.note("Pairs alternate which path goes first and each pair starts on a quiet machine. Median of the per-pair differences (websocket − REST): %s; issue 31's bound is ≤ 1 ms at p50.",
		signedMS(percentile(diffs, 50)))
	rep.table(t)
	return nil
}
