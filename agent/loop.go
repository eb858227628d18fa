package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/wire"
)

// Causes a run's context can end with.
var (
	errCancelled  = errors.New("run cancelled")
	errWallBudget = errors.New("wall-clock budget spent")
	errShutdown   = errors.New("manager closed")
)

// loop runs conversations against one model and one set of tools.
type loop struct {
	cfg    Config
	tools  Tools
	model  *model
	store  pendingStore
	logger *slog.Logger
	redact *redactor
	caller string
	now    func() time.Time
}

// outcome is how a run ended.
type outcome struct {
	status wire.RunStatus
	final  string
	err    error
}

// execute runs r to the end and returns the outcome; the Manager then
// releases what is left pending (unless the run is handed over).
func (l *loop) execute(ctx context.Context, r *run) outcome {
	o := l.steps(ctx, r)
	if o.err != nil {
		l.logger.Warn("run ended with an error", "run", r.id, "status", o.status, "err", l.redact.String(o.err.Error()))
	}
	return o
}

// ctxOutcome maps a done context to the run's final status.
func ctxOutcome(ctx context.Context) outcome {
	cause := context.Cause(ctx)
	if errors.Is(cause, errWallBudget) {
		return outcome{status: wire.RunBudget, err: errWallBudget}
	}
	if cause == nil {
		cause = errCancelled
	}
	return outcome{status: wire.RunCancelled, err: cause}
}

// steps is the loop proper.
func (l *loop) steps(ctx context.Context, r *run) outcome {
	tools := l.tools.OpenAITools()
	schema := schemaTokens(tools)
	system := l.tools.SystemPrompt()
	if l.cfg.SystemPrompt != "" {
		system = strings.TrimSpace(system + "\n\n" + l.cfg.SystemPrompt)
	}
	r.mu.Lock()
	cp := r.cp.clone()
	r.mu.Unlock()
	var msgs []message
	if cp != nil && len(cp.Msgs) > 0 {
		msgs = cp.Msgs // resumed (takeover) or continued (follow-up)
	} else {
		var err error
		if msgs, err = initialMessages(system, r.req); err != nil {
			return outcome{status: wire.RunFailed, err: err}
		}
	}
	ids := newIDAssigner()
	seen := newRepeats(l.cfg.MaxRepeats)
	for _, m := range msgs {
		ids.observe(m.ToolCallID)
		for _, c := range m.ToolCalls {
			ids.observe(c.ID)
			seen.see(c.Name, c.Arguments)
		}
	}
	maxSteps := l.cfg.MaxSteps
	if r.req.MaxSteps > 0 { // a request may lower the limit, never raise it
		maxSteps = min(r.req.MaxSteps, maxSteps)
	}
	modelName := r.req.Model
	if modelName == "" {
		modelName = l.model.provider.Model
	}
	first := 1
	var resumed *turn
	if cp != nil && cp.Step > 0 {
		first, resumed = cp.Step, cp.Turn
	}
	for step := first; ; step++ {
		if ctx.Err() != nil {
			return ctxOutcome(ctx)
		}
		last := step > maxSteps
		var rep reply
		var calls []toolCall
		t := resumed
		resumed = nil
		if t != nil {
			// Taken over after the model answered this step: its answer
			// and the tool results recorded so far are reused.
			rep = reply{Content: t.Content, FinishReason: t.FinishReason, ToolCalls: t.Calls}
			calls = t.Calls
			for _, c := range calls {
				ids.observe(c.ID)
			}
		} else {
			r.checkpoint(func(cp *checkpoint) {
				cp.Step, cp.Msgs, cp.Turn = step, append([]message(nil), msgs...), nil
				r.steps = step
			})
			r.log.emit(wire.EventStepStarted, step, map[string]any{"max_steps": maxSteps, "final": last})
			req := chatRequest{Model: modelName, Stream: l.cfg.Stream, Temp: l.cfg.Temperature, Step: step}
			stepSchema := schema
			if last {
				msgs = append(msgs, message{Role: "user", Content: l.cfg.ConcludePrompt})
				stepSchema = 0
			} else {
				req.Tools = tools
			}
			if l.cfg.ContextBudget > 0 {
				limit := int(float64(l.cfg.ContextBudget) * l.cfg.ContextHighWater)
				if n := shortenContext(msgs, stepSchema, limit, l.cfg.ShortenedChars); n > 0 {
					l.logger.Info("shortened old tool results", "run", r.id, "step", step, "count", n)
				}
			}
			req.Messages = msgs
			start := time.Now()
			var err error
			rep, err = l.model.chat(ctx, req, func(attempt int, wait time.Duration, err error) {
				r.log.emit(wire.EventError, step, map[string]any{
					"message": "model call failed: " + err.Error(), "retrying": true, "attempt": attempt, "wait_ms": wait.Milliseconds(),
				})
			})
			su := stepUsage(rep, msgs, stepSchema, time.Since(start))
			r.update(func(r *run) { addUsage(&r.usage, su) })
			if err != nil {
				if ctx.Err() != nil {
					return ctxOutcome(ctx)
				}
				return outcome{status: wire.RunFailed, err: err}
			}
			calls = rep.ToolCalls
			if last {
				calls = nil // a server that ignores "no tools" still gets no tool run
			}
			ids.assign(calls)
			for i := range calls {
				calls[i].Arguments = l.redact.String(calls[i].Arguments)
			}
			if len(calls) > 0 {
				r.checkpoint(func(cp *checkpoint) {
					cp.Msgs = append([]message(nil), msgs...)
					cp.Turn = &turn{Content: rep.Content, FinishReason: rep.FinishReason, Calls: append([]toolCall(nil), calls...),
						Results: map[int]string{}, Tokens: map[int]string{}}
				})
			}
			r.log.emit(wire.EventAssistantMessage, step, assistantData(rep, calls, su))
			t = &turn{}
		}
		msgs = append(msgs, message{Role: "assistant", Content: rep.Content, ToolCalls: calls})
		if len(calls) == 0 {
			status := wire.RunDone
			if last {
				status = wire.RunMaxSteps
			}
			r.update(func(r *run) {
				r.cp = &checkpoint{Step: step, Msgs: append([]message(nil), msgs...)}
			})
			r.log.emit(wire.EventFinalAnswer, step, map[string]any{"content": rep.Content})
			return outcome{status: status, final: rep.Content}
		}
		if b := l.cfg.TokenBudget; b > 0 && r.view().Usage.TotalTokens >= b {
			return outcome{status: wire.RunBudget, err: fmt.Errorf("token budget of %d spent", b)}
		}
		results, stop := l.runCalls(ctx, r, step, calls, seen, t)
		if ctx.Err() != nil {
			return ctxOutcome(ctx)
		}
		if stop != nil {
			return outcome{status: wire.RunLoop, err: stop}
		}
		for i, c := range calls {
			msgs = append(msgs, message{Role: "tool", ToolCallID: c.ID, Content: results[i]})
		}
	}
}

// stepUsage is one model call's accounting; tokens are estimated when the
// server reported none.
func stepUsage(rep reply, msgs []message, schema int, took time.Duration) wire.Usage {
	u := wire.Usage{ToolSchemaTokens: int64(schema), ModelMS: took.Milliseconds()}
	if rep.Usage != nil {
		u.PromptTokens, u.CompletionTokens, u.TotalTokens = rep.Usage.PromptTokens, rep.Usage.CompletionTokens, rep.Usage.TotalTokens
		if u.TotalTokens == 0 {
			u.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
		return u
	}
	if rep.Content == "" && len(rep.ToolCalls) == 0 {
		return u // the call failed: nothing to count
	}
	out := len(rep.Content)
	for _, c := range rep.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	u.PromptTokens = int64(conversationTokens(msgs, schema))
	u.CompletionTokens = int64(estimateTokens(out))
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.Estimated = true
	return u
}

// assistantData is the payload of an assistant_message event.
func assistantData(rep reply, calls []toolCall, u wire.Usage) map[string]any {
	cs := make([]map[string]any, 0, len(calls))
	for _, c := range calls {
		cs = append(cs, map[string]any{"id": c.ID, "name": c.Name, "arguments": c.Arguments})
	}
	return map[string]any{"content": rep.Content, "tool_calls": cs, "finish_reason": rep.FinishReason, "usage": u}
}
