package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
)

// mcpWarmup is the number of unmeasured calls per variant before sampling.
const mcpWarmup = 5

// sectionMCP is issue 15's figure: a warm print(1) through MCP over
// streamable HTTP (/mcp on serve, the SDK's client) against the same call
// through the REST API, interleaved pair by pair in one run. An MCP
// session's calls run in its own Airlock session, so the REST side is the
// same call in a session of its own (POST /v1/sessions/{id}/tool-calls,
// the session form of /v1/tool-calls): both run print(1) in a warm kernel
// and the difference is what the MCP layer adds.
func sectionMCP(ctx context.Context, o options, q *quieter, rep *report) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := "http://" + addr
	args := []string{o.airlock, "serve", "--insecure-local", "--rate", "-1", "--python-image", o.pythonImg, "--shell-image", o.batch.shellImg, "--addr", addr}
	srv, err := startServer(filepath.Join(o.workdir, "serve-mcp.log"), childEnv(), args...)
	if err != nil {
		return err
	}
	defer srv.stop(30 * time.Second)
	if err := waitHTTP(ctx, srv, base+"/readyz", time.Minute); err != nil {
		return err
	}
	rest, err := client.New(base)
	if err != nil {
		return err
	}
	sess, err := rest.CreateSession(ctx, nil)
	if err != nil {
		return fmt.Errorf("section 5: open REST session: %w", err)
	}
	defer func() { _ = rest.DeleteSession(context.Background(), sess.ID) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "airlock-bench"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		return fmt.Errorf("section 5: connect to /mcp: %w", err)
	}
	defer cs.Close()

	viaREST := func() error {
		res, err := rest.CallSessionTool(ctx, sess.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}})
		if err != nil {
			return err
		}
		if res.Result.Status != core.StatusOK || strings.TrimSpace(res.Result.Stdout) != "1" {
			return fmt.Errorf("REST: status %s, stdout %q", res.Result.Status, res.Result.Stdout)
		}
		return nil
	}
	viaMCP := func() error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}})
		if err != nil {
			return err
		}
		if res.IsError || len(res.Content) == 0 {
			return fmt.Errorf("MCP: isError=%v", res.IsError)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "1") {
			return fmt.Errorf("MCP: unexpected content %v", res.Content[0])
		}
		return nil
	}
	// The first MCP call opens the MCP session's Airlock session; the
	// warm-up calls make both kernels warm.
	for i := 0; i < mcpWarmup; i++ {
		if err := viaMCP(); err != nil {
			return fmt.Errorf("section 5: warm-up: %w", err)
		}
		if err := viaREST(); err != nil {
			return fmt.Errorf("section 5: warm-up: %w", err)
		}
	}
	sm := &series{name: "MCP tools/call over streamable HTTP (/mcp)"}
	sr := &series{name: "REST POST /v1/sessions/{id}/tool-calls"}
	var diffs []time.Duration
	for i := 0; i < o.mcpN; i++ {
		if err := q.wait(ctx); err != nil {
			return err
		}
		order := []struct {
			s  *series
			fn func() error
		}{{sm, viaMCP}, {sr, viaREST}}
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
			d := took[0] - took[1] // MCP − REST
			if i%2 == 1 {
				d = -d
			}
			diffs = append(diffs, d)
		}
	}
	t := &table{title: fmt.Sprintf("5. MCP — warm print(1) through /mcp vs the REST API, %d interleaved pairs", o.mcpN),
		head: []string{"path", "calls", "p50", "p95", "max", "failed"}}
	for _, s := range []*series{sm, sr} {
		t.row(s.name, fmt.Sprint(len(s.d)), ms(s.pct(50)), ms(s.pct(95)), ms(s.max()), s.failures())
	}
	t.row("**MCP − REST**", fmt.Sprint(len(diffs)), "**"+signedMS(sm.pct(50)-sr.pct(50))+"**", signedMS(sm.pct(95)-sr.pct(95)), "", "")
	t.note("Server: `%s`; one MCP session (the SDK's client, streamable HTTP, SSE answers) and one REST session (the Go client), both with a warm Python kernel after %d unmeasured calls each.",
		strings.Join(append([]string{"airlock"}, args[1:]...), " "), mcpWarmup)
	t.note("Pairs alternate which path goes first and each pair starts on a quiet machine. Median of the per-pair differences (MCP − REST): %s; issue 15's target is ≤ 1 ms at p50.",
		signedMS(percentile(diffs, 50)))
	t.note("Both calls run print(1) in a session (an MCP session's calls always do); the one-shot POST /v1/tool-calls runs in a fresh pooled container and so measures container start, not the protocol.")
	rep.table(t)
	return nil
}
