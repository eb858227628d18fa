package core

import "context"

// The kinds of live events a running call emits.
const (
	EventStdout   = "stdout"   // Text is a chunk of standard output
	EventStderr   = "stderr"   // Text is a chunk of standard error
	EventDisplay  = "display"  // Data is a MIME bundle (display() or the last expression)
	EventArtifact = "artifact" // Artifact names a file the call produced (no bytes)
	// EventInput: the call waits in input() (Request.AllowStdin); Text is
	// the prompt. Answer it with core.OpSessionInput.
	EventInput = "input_request"
	// EventClear: the code cleared its output so far (clear_output());
	// with Wait, only when the next output arrives.
	EventClear = "clear_output"
	// EventBuilding: the call waits while its worker builds the call's
	// environment, which this host lacked, from the stored spec (issue
	// 28); Text is what the build does, Data has "environment", "step"
	// and "progress" (0 to 1). The call's own time starts after it.
	EventBuilding = "building"
)

// Event is one piece of a call's output, sent while the call runs. The
// call's Result is still the complete, authoritative answer; events are for
// watching it happen.
type Event struct {
	Kind     string            `json:"kind"`
	Text     string            `json:"text,omitempty"`
	Data     map[string]string `json:"data,omitempty"`
	Artifact *Artifact         `json:"artifact,omitempty"`
	// Password marks an EventInput whose answer should not be echoed.
	Password bool `json:"password,omitempty"`
	// Result marks an EventDisplay of the cell's value (Request.Notebook).
	Result bool `json:"result,omitempty"`
	// Wait is an EventClear's wait flag.
	Wait bool `json:"wait,omitempty"`
}

// Sink receives a call's events. It must return quickly: it is called on
// the path that reads the sandbox's output.
type Sink func(Event)

// sinkKey carries a Sink in a context.
type sinkKey struct{}

// WithSink returns ctx carrying sink, which receives the events of the call
// made with it.
func WithSink(ctx context.Context, sink Sink) context.Context {
	return context.WithValue(ctx, sinkKey{}, sink)
}

// SinkFrom returns the Sink ctx carries, or nil.
func SinkFrom(ctx context.Context) Sink {
	s, _ := ctx.Value(sinkKey{}).(Sink)
	return s
}

// Emit sends ev to the Sink ctx carries, if any.
func Emit(ctx context.Context, ev Event) {
	if s := SinkFrom(ctx); s != nil {
		s(ev)
	}
}
