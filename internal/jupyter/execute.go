package jupyter

import (
	"sync"

	"github.com/airlock-dev/airlock/core"
)

// execution is one execute_request while it runs: what was streamed so
// far, so that the end can send what the live stream missed.
type execution struct {
	k          *kernel
	r          shellReq
	silent     bool
	count      int
	allowStdin bool

	mu               sync.Mutex // the sink's calls against the end of the cell
	ended            bool       // events after the result are not sent
	sentOut, sentErr string
	displays         int
	result           *core.Display // the cell's value: sent last, with the final count
}

// run executes code, forwarding its live events as they come (from the
// sink's goroutine, with no hop in between: a slow client only delays
// its own events, and what the stream drops finish sends from the
// result), and returns the result.
func (ex *execution) run(code string) (core.Result, error) {
	k := ex.k
	ctx := core.WithSink(k.ctx, func(ev core.Event) {
		ex.mu.Lock()
		defer ex.mu.Unlock()
		if !ex.ended {
			ex.forward(ev)
		}
	})
	res, err := k.g.backend.Execute(ctx, k.owner, k.id, Cell{Code: code, AllowStdin: ex.allowStdin})
	ex.mu.Lock()
	ex.ended = true
	ex.mu.Unlock()
	return res, err
}

// forward sends one live event as its Jupyter message.
func (ex *execution) forward(ev core.Event) {
	k, parent := ex.k, &ex.r.m
	k.touch()
	switch ev.Kind {
	case core.EventStdout, core.EventStderr:
		name := "stdout"
		if ev.Kind == core.EventStderr {
			name = "stderr"
			ex.sentErr += ev.Text
		} else {
			ex.sentOut += ev.Text
		}
		if !ex.silent && ev.Text != "" {
			k.publish(reply(k.ksid, parent, "iopub", "stream", streamContent(name, ev.Text)))
		}
	case core.EventDisplay:
		ex.displays++
		if ev.Result {
			ex.result = &core.Display{Data: ev.Data, Result: true}
			return
		}
		ex.display(core.Display{Data: ev.Data})
	case core.EventClear:
		if !ex.silent {
			k.publish(reply(k.ksid, parent, "iopub", "clear_output", map[string]any{"wait": ev.Wait}))
		}
	case core.EventInput:
		if !ex.allowStdin {
			return
		}
		k.mu.Lock()
		k.input = ex.r.c
		k.mu.Unlock()
		ex.r.c.send(reply(k.ksid, parent, "stdin", "input_request", map[string]any{"prompt": ev.Text, "password": ev.Password}))
	}
}

// display sends one rich output: execute_result for the cell's value,
// display_data otherwise.
func (ex *execution) display(d core.Display) {
	if ex.silent || len(d.Data) == 0 {
		return
	}
	k, parent := ex.k, &ex.r.m
	if d.Result {
		k.publish(reply(k.ksid, parent, "iopub", "execute_result", resultContent(ex.count, d.Data)))
		return
	}
	k.publish(reply(k.ksid, parent, "iopub", "display_data", displayContent(d.Data)))
}

// finish sends what the result holds that the live stream did not carry
// (events dropped or never streamed): the rest of stdout and stderr (when
// they were not cut) and the remaining displays; then the cell's value as
// execute_result with the execution count the kernel reported.
func (ex *execution) finish(res core.Result) {
	k, parent := ex.k, &ex.r.m
	if !ex.silent && !res.Truncated {
		if t := rest(res.Stdout, ex.sentOut); t != "" {
			k.publish(reply(k.ksid, parent, "iopub", "stream", streamContent("stdout", t)))
		}
		if t := rest(res.Stderr, ex.sentErr); t != "" {
			k.publish(reply(k.ksid, parent, "iopub", "stream", streamContent("stderr", t)))
		}
	}
	for i := ex.displays; i < len(res.Display); i++ {
		if res.Display[i].Result {
			ex.result = &res.Display[i]
			continue
		}
		ex.display(res.Display[i])
	}
	if ex.result != nil {
		ex.display(*ex.result)
	}
}
