package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// callOutcome is one call's result as the loop tracks it.
type callOutcome struct {
	res dispatcher.Result
	ran bool // went through Tools.Run
}

// runCalls answers one turn's calls: calls the loop refuses itself
// (invalid arguments, repeats) are answered at once, the others run
// concurrently through Tools.Run, and pending approvals are waited for.
// Tool time (Usage.ToolMS) is the wall time of the concurrent batch plus
// that of approved executions, not the time spent waiting for a human.
// It returns the tool message contents in the model's order, or a non-nil
// stop error when the run must end on a repeated call. Every answer is
// recorded in the run's checkpoint as it arrives; the calls t already has
// an answer for (a taken-over run) are not run again, those it has an
// approval token for wait for that decision again.
func (l *loop) runCalls(ctx context.Context, r *run, step int, calls []toolCall, seen *repeats, t *turn) ([]string, error) {
	out, runnable, recorded, stop := l.triage(r, step, calls, seen, t)
	if stop != nil {
		return nil, stop
	}
	batch := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, l.cfg.MaxParallel)
	for _, i := range runnable {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				out[i].res = platformFailure(calls[i], dispatcher.StatusInternal, context.Cause(ctx))
				return
			}
			out[i] = callOutcome{res: l.runOne(ctx, r, step, i, calls[i]), ran: true}
			if out[i].res.Status != dispatcher.StatusPendingApproval && ctx.Err() == nil {
				recordResult(r, i, out[i].res)
				l.emitResult(r, step, calls[i], out[i].res)
			}
		}()
	}
	wg.Wait()
	r.update(func(r *run) { r.usage.ToolMS += time.Since(batch).Milliseconds() })
	for i := range out {
		if !out[i].ran && !recorded[i] {
			recordResult(r, i, out[i].res)
			l.emitResult(r, step, calls[i], out[i].res)
		}
	}
	if ctx.Err() == nil {
		l.awaitApprovals(ctx, r, step, calls, out)
	}
	contents := make([]string, len(calls))
	for i := range out {
		if recorded[i] {
			contents[i] = t.Results[i]
			continue
		}
		contents[i] = toolContent(out[i].res)
	}
	return contents, nil
}

// triage sorts one turn's calls: those t already answered (recorded) or
// holds an approval token for, those the loop refuses itself (over the
// per-turn bound, invalid arguments, repeats; answered in out), and the
// runnable rest. stop is set when a repeat ends the run.
func (l *loop) triage(r *run, step int, calls []toolCall, seen *repeats, t *turn) (out []callOutcome, runnable []int, recorded map[int]bool, stop error) {
	out = make([]callOutcome, len(calls))
	runnable = make([]int, 0, len(calls))
	recorded = map[int]bool{}
	for i, c := range calls {
		if _, ok := t.Results[i]; ok {
			recorded[i] = true
			seen.see(c.Name, c.Arguments)
			continue
		}
		if tok, ok := t.Tokens[i]; ok {
			seen.see(c.Name, c.Arguments)
			out[i] = callOutcome{res: dispatcher.Result{CallID: c.ID, Name: c.Name,
				Status: dispatcher.StatusPendingApproval, ApprovalToken: tok}, ran: true}
			continue
		}
		r.log.emit(wire.EventToolCall, step, map[string]any{"id": c.ID, "name": c.Name, "arguments": c.Arguments})
		switch {
		case i >= l.cfg.MaxCallsPerTurn:
			out[i].res = refusal(c, "too_many_calls", fmt.Sprintf(
				"Only %d tool calls are run per turn; this one was not run. Ask for it again in the next turn if you still need it.", l.cfg.MaxCallsPerTurn))
		case c.ArgsErr != nil:
			out[i].res = refusal(c, "invalid_json", fmt.Sprintf(
				"The arguments of this %s call are not a JSON object (%v); the tool was not run. Send the arguments as a JSON object matching the tool's schema.", c.Name, c.ArgsErr))
		default:
			switch seen.see(c.Name, c.Arguments) {
			case repeatOK:
				runnable = append(runnable, i)
			case repeatWarn:
				out[i].res = refusal(c, "repeated_call", fmt.Sprintf(
					"You have now made this exact %s call %d times; it was not run again. Do not repeat it: use the results you already have, try something different, or give your final answer. Repeating it once more ends the run.",
					c.Name, l.cfg.MaxRepeats))
			case repeatStop:
				stop = fmt.Errorf("the model repeated the same %s call after being told not to", c.Name)
			}
		}
	}
	return out, runnable, recorded, stop
}

// recordResult records call i's answer in the run's checkpoint before the
// loop moves on, so a takeover never runs it again.
func recordResult(r *run, i int, res dispatcher.Result) {
	r.checkpoint(func(cp *checkpoint) {
		if cp.Turn == nil {
			return
		}
		if cp.Turn.Results == nil {
			cp.Turn.Results = map[int]string{}
		}
		cp.Turn.Results[i] = toolContent(res)
		delete(cp.Turn.Tokens, i)
	})
}

// recordToken records that call i waits for approval token.
func recordToken(r *run, i int, token string) {
	r.checkpoint(func(cp *checkpoint) {
		if cp.Turn == nil {
			return
		}
		if cp.Turn.Tokens == nil {
			cp.Turn.Tokens = map[int]string{}
		}
		cp.Turn.Tokens[i] = token
	})
}

// idempotencyKey is the dispatcher's key for call index of step: a run
// resumed on another replica that repeats the call attaches to the first
// execution instead of starting a second.
func idempotencyKey(runID string, step, index int) string {
	return fmt.Sprintf("%s/%d/%d", runID, step, index)
}

// runOne sends one call through Tools.Run; a panic becomes an internal
// result rather than a crash.
func (l *loop) runOne(ctx context.Context, r *run, step, index int, c toolCall) (res dispatcher.Result) {
	defer func() {
		if p := recover(); p != nil {
			l.logger.Error("tool call panicked", "run", r.id, "tool", c.Name, "panic", fmt.Sprint(p))
			res = platformFailure(c, dispatcher.StatusInternal, fmt.Errorf("panic: %v", p))
		}
	}()
	start := time.Now()
	res = l.tools.Run(ctx, dispatcher.Call{
		ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments),
		Owner: r.owner, SessionID: r.req.SessionID, Mount: r.req.Mount, Environment: r.req.Environment, Caller: l.caller,
		IdempotencyKey: idempotencyKey(r.id, step, index),
	})
	if res.CallID == "" {
		res.CallID = c.ID
	}
	if res.Name == "" {
		res.Name = c.Name
	}
	if res.DurationMS == 0 {
		res.DurationMS = time.Since(start).Milliseconds()
	}
	return res
}

// emitResult emits a tool_result event.
func (l *loop) emitResult(r *run, step int, c toolCall, res dispatcher.Result) {
	data := map[string]any{
		"id": c.ID, "name": c.Name, "status": res.Status, "content": res.Content,
		"duration_ms": res.DurationMS,
	}
	if res.Reason != "" {
		data["reason"] = res.Reason
	}
	if res.Err != nil {
		data["error"] = res.Err.Error()
	}
	if sb := res.Sandbox; sb != nil {
		// The UI shows output and plots; the API swaps artifact bytes for URLs.
		data["stdout"], data["stderr"], data["exit_code"], data["truncated"] = sb.Stdout, sb.Stderr, sb.ExitCode, sb.Truncated
		if len(sb.Artifacts) > 0 {
			data["artifacts"] = sb.Artifacts
		}
	}
	r.log.emit(wire.EventToolResult, step, data)
}

// refusal is a result the loop writes itself, without running the tool.
func refusal(c toolCall, reason, content string) dispatcher.Result {
	return dispatcher.Result{CallID: c.ID, Name: c.Name, Status: dispatcher.StatusRejected, Reason: reason, Content: content}
}

// platformFailure is a result for a call that could not be answered.
func platformFailure(c toolCall, st dispatcher.Status, err error) dispatcher.Result {
	return dispatcher.Result{CallID: c.ID, Name: c.Name, Status: st, Content: fmt.Sprintf("The tool call failed: %v", err), Err: err}
}

// toolContent is the role "tool" message for a result: its content, with
// the status first when the call did not succeed, so the model can tell.
func toolContent(res dispatcher.Result) string {
	content := res.Content
	if content == "" {
		content = "(no output)"
	}
	if res.Status == dispatcher.StatusOK || res.Status == "" {
		return content
	}
	head := "[status: " + string(res.Status)
	if res.Reason != "" {
		head += ", reason: " + res.Reason
	}
	return head + "]\n" + content
}
