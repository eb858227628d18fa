package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/wire"
	"github.com/openai/openai-go/v3"
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
		l.logger.Warn("run ended with an error", "run", r.id, "status", o.status, "err", o.err)
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

// conversation is what one run's steps share: the messages so far, the
// tool list offered, the call ids and repeats seen, and the bounds.
type conversation struct {
	msgs     []message
	tools    []openai.ChatCompletionToolUnionParam
	schema   int // estimated tokens of the tool schemas
	ids      *idAssigner
	seen     *repeats
	maxSteps int
	model    string
	first    int   // the step to start at
	resumed  *turn // a taken-over step's answer, reused once
}

// steps is the loop proper: one model call per step, its tool calls run,
// until a final answer, a limit or the end of ctx.
func (l *loop) steps(ctx context.Context, r *run) outcome {
	cv, err := l.start(r)
	if err != nil {
		return outcome{status: wire.RunFailed, err: err}
	}
	for step := cv.first; ; step++ {
		if ctx.Err() != nil {
			return ctxOutcome(ctx)
		}
		last := step > cv.maxSteps
		rep, calls, stop := l.answer(ctx, r, cv, step, last)
		if stop != nil {
			return *stop
		}
		t := cv.resumed
		if t == nil {
			t = &turn{}
		}
		cv.resumed = nil
		cv.msgs = append(cv.msgs, message{Role: "assistant", Content: rep.Content, ToolCalls: calls})
		if len(calls) == 0 {
			return l.finalAnswer(r, cv, step, last, rep)
		}
		if b := l.cfg.TokenBudget; b > 0 && r.view().Usage.TotalTokens >= b {
			return outcome{status: wire.RunBudget, err: fmt.Errorf("token budget of %d spent", b)}
		}
		results, stopErr := l.runCalls(ctx, r, step, calls, cv.seen, t)
		if ctx.Err() != nil {
			return ctxOutcome(ctx)
		}
		if stopErr != nil {
			return outcome{status: wire.RunLoop, err: stopErr}
		}
		for i, c := range calls {
			cv.msgs = append(cv.msgs, message{Role: "tool", ToolCallID: c.ID, Content: results[i]})
		}
	}
}

// start sets up r's conversation: from its checkpoint when it is resumed
// (taken over) or continued (a follow-up), else from its request.
func (l *loop) start(r *run) (*conversation, error) {
	cv := &conversation{tools: l.tools.OpenAITools(), ids: newIDAssigner(), seen: newRepeats(l.cfg.MaxRepeats), first: 1}
	cv.schema = schemaTokens(cv.tools)
	r.mu.Lock()
	cp := r.cp.clone()
	r.mu.Unlock()
	if cp != nil && len(cp.Msgs) > 0 {
		cv.msgs = cp.Msgs
	} else {
		system := l.tools.SystemPrompt()
		if l.cfg.SystemPrompt != "" {
			system = strings.TrimSpace(system + "\n\n" + l.cfg.SystemPrompt)
		}
		var err error
		if cv.msgs, err = initialMessages(system, r.req); err != nil {
			return nil, err
		}
	}
	for _, m := range cv.msgs {
		cv.ids.observe(m.ToolCallID)
		for _, c := range m.ToolCalls {
			cv.ids.observe(c.ID)
			cv.seen.see(c.Name, c.Arguments)
		}
	}
	cv.maxSteps = l.cfg.MaxSteps
	if r.req.MaxSteps > 0 { // a request may lower the limit, never raise it
		cv.maxSteps = min(r.req.MaxSteps, cv.maxSteps)
	}
	cv.model = r.req.Model
	if cv.model == "" {
		cv.model = l.model.provider.Model
	}
	if cp != nil && cp.Step > 0 {
		cv.first, cv.resumed = cp.Step, cp.Turn
	}
	return cv, nil
}

// answer returns the model's answer for step and the tool calls to run:
// a taken-over step's recorded answer, or a new model call (with no tools
// offered on the last step). stop ends the run when the call failed.
func (l *loop) answer(ctx context.Context, r *run, cv *conversation, step int, last bool) (rep reply, calls []toolCall, stop *outcome) {
	if t := cv.resumed; t != nil {
		// Taken over after the model answered this step: its answer and
		// the tool results recorded so far are reused.
		for _, c := range t.Calls {
			cv.ids.observe(c.ID)
		}
		return reply{Content: t.Content, FinishReason: t.FinishReason, ToolCalls: t.Calls}, t.Calls, nil
	}
	r.checkpoint(func(cp *checkpoint) {
		cp.Step, cp.Msgs, cp.Turn = step, append([]message(nil), cv.msgs...), nil
		r.steps = step
	})
	r.log.emit(wire.EventStepStarted, step, map[string]any{"max_steps": cv.maxSteps, "final": last})
	rep, su, err := l.ask(ctx, r, cv, step, last)
	r.update(func(r *run) { addUsage(&r.usage, su) })
	if err != nil {
		o := outcome{status: wire.RunFailed, err: err}
		if ctx.Err() != nil {
			o = ctxOutcome(ctx)
		}
		return reply{}, nil, &o
	}
	calls = rep.ToolCalls
	if last {
		calls = nil // a server that ignores "no tools" still gets no tool run
	}
	cv.ids.assign(calls)
	if len(calls) > 0 {
		r.checkpoint(func(cp *checkpoint) {
			cp.Msgs = append([]message(nil), cv.msgs...)
			cp.Turn = &turn{Content: rep.Content, FinishReason: rep.FinishReason, Calls: append([]toolCall(nil), calls...),
				Results: map[int]string{}, Tokens: map[int]string{}}
		})
	}
	r.log.emit(wire.EventAssistantMessage, step, assistantData(rep, calls, su))
	return rep, calls, nil
}

// ask makes step's model call, shortening old tool results first when
// the conversation nears the context budget; the last step asks for a
// conclusion without tools.
func (l *loop) ask(ctx context.Context, r *run, cv *conversation, step int, last bool) (reply, wire.Usage, error) {
	req := chatRequest{Model: cv.model, Stream: l.cfg.Stream, Temp: l.cfg.Temperature, Step: step}
	schema := cv.schema
	if last {
		cv.msgs = append(cv.msgs, message{Role: "user", Content: l.cfg.ConcludePrompt})
		schema = 0
	} else {
		req.Tools = cv.tools
	}
	if l.cfg.ContextBudget > 0 {
		limit := int(float64(l.cfg.ContextBudget) * l.cfg.ContextHighWater)
		if n := shortenContext(cv.msgs, schema, limit, l.cfg.ShortenedChars); n > 0 {
			l.logger.Info("shortened old tool results", "run", r.id, "step", step, "count", n)
		}
	}
	req.Messages = cv.msgs
	start := time.Now()
	rep, err := l.model.chat(ctx, req, func(attempt int, wait time.Duration, err error) {
		r.log.emit(wire.EventError, step, map[string]any{
			"message": "model call failed: " + err.Error(), "retrying": true, "attempt": attempt, "wait_ms": wait.Milliseconds(),
		})
	})
	return rep, stepUsage(rep, cv.msgs, schema, time.Since(start)), err
}

// finalAnswer ends the run on the model's answer without tool calls (on
// the last step: the forced conclusion).
func (l *loop) finalAnswer(r *run, cv *conversation, step int, last bool, rep reply) outcome {
	status := wire.RunDone
	if last {
		status = wire.RunMaxSteps
	}
	r.update(func(r *run) {
		r.cp = &checkpoint{Step: step, Msgs: append([]message(nil), cv.msgs...)}
	})
	r.log.emit(wire.EventFinalAnswer, step, map[string]any{"content": rep.Content})
	return outcome{status: status, final: rep.Content}
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
