package jobs

import (
	"context"
	"encoding/json"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/queue"
)

// progressSink decodes the job's progress messages as core.Events for sink.
// A message that is not an Event is dropped: the final result is still
// authoritative.
func progressSink(sink core.Sink) func([]byte) {
	return func(data []byte) {
		var ev core.Event
		if err := json.Unmarshal(data, &ev); err != nil || ev.Kind == "" {
			return
		}
		sink(ev)
	}
}

// withQueueSink returns ctx whose events the engine emits are sent to the
// waiting caller as job progress (JSON core.Events); ctx itself when no
// caller listens (a call answered only by its result), so the engine
// neither forwards nor encodes events nobody reads.
func withQueueSink(ctx context.Context) context.Context {
	if !queue.Listening(ctx) {
		return ctx
	}
	return core.WithSink(ctx, func(ev core.Event) {
		if ev.Artifact != nil && len(ev.Artifact.Data) > 0 {
			a := *ev.Artifact
			a.Data = nil // events name files; the bytes come with the result
			ev.Artifact = &a
		}
		data, err := json.Marshal(ev)
		if err != nil {
			return
		}
		queue.Progress(ctx, data)
	})
}
