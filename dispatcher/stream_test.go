package dispatcher

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// streamExecutor emits script as events (sleeping pause between them) and
// answers result.
type streamExecutor struct {
	script []core.Event
	pause  time.Duration
	result core.Result
}

func (e *streamExecutor) Exec(ctx context.Context, _ core.Request) (core.Result, error) {
	for _, ev := range e.script {
		emit(ctx, ev)
		time.Sleep(e.pause)
	}
	return e.result, nil
}

// collect is a sink recording events.
type collect struct {
	mu  sync.Mutex
	evs []core.Event
	at  []time.Time
}

func (c *collect) sink(ev core.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, ev)
	c.at = append(c.at, time.Now())
}

func (c *collect) events() []core.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]core.Event(nil), c.evs...)
}

func runStreamed(t *testing.T, secret string, ex *streamExecutor) (Result, []core.Event) {
	t.Helper()
	cfg := testConfig()
	cfg.Secrets = []string{secret}
	d, _ := newTestDispatcher(t, cfg, ex)
	var c collect
	ctx := core.WithSink(context.Background(), c.sink)
	res := d.Run(ctx, Call{ID: "c1", Name: ToolRunPython, Arguments: json.RawMessage(`{"code":"print(1)"}`)})
	return res, c.events()
}

func TestStreamedSecretNeverInAnyEvent(t *testing.T) {
	const secret = "hunter2-topsecret-value"
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdef\nQUJDREVGR0hJSktMTU5PUFFSU1RVVldY\n-----END RSA PRIVATE KEY-----\n"
	ex := &streamExecutor{
		script: []core.Event{
			{Kind: "stdout", Text: "token=hunter2-to"}, // split mid-secret
			{Kind: "stdout", Text: "psecret-value and more\nnext "},
			{Kind: "stderr", Text: "err " + secret[:5]},
			{Kind: "stderr", Text: secret[5:] + "\n"},
			{Kind: "stdout", Text: key[:40]},
			{Kind: "stdout", Text: key[40:70]},
			{Kind: "stdout", Text: key[70:] + "after key\n"},
			{Kind: "display", Data: map[string]string{"text/plain": "v=" + secret, "text/html": "<b>" + secret + "</b>", "image/png": "iVBOR"}},
			{Kind: "artifact", Artifact: &core.Artifact{Name: "out-" + secret + ".txt", MIME: "text/plain", Size: 1}},
			{Kind: "stdout", Text: "tail " + secret},
		},
		result: core.Result{Status: core.StatusError, ExitCode: 1, Stdout: "token=" + secret, Stderr: "err " + secret,
			Error:   &core.ExecError{Name: "ValueError", Value: secret, Traceback: []string{"line 1: x = '" + secret + "'"}},
			Display: []core.Display{{Data: map[string]string{"text/plain": secret}}}},
	}
	res, evs := runStreamed(t, secret, ex)
	if len(evs) < 6 {
		t.Fatalf("too few events: %+v", evs)
	}
	var stdout strings.Builder
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		for _, leak := range []string{secret, "hunter2", "MIIEpAIBAAKCAQEA", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"} {
			if strings.Contains(string(b), leak) {
				t.Errorf("event leaks %q: %s", leak, b)
			}
		}
		if ev.Kind == "stdout" {
			stdout.WriteString(ev.Text)
		}
	}
	want := "token=[REDACTED] and more\nnext [REDACTED:private_key]\nafter key\ntail [REDACTED]"
	if stdout.String() != want {
		t.Errorf("streamed stdout\n got %q\nwant %q", stdout.String(), want)
	}
	if evs[len(evs)-1].Kind != "stdout" || !strings.HasPrefix(evs[len(evs)-1].Text, "tail ") {
		t.Errorf("the partial last line must be flushed before Run returns: %+v", evs[len(evs)-1])
	}
	for _, ev := range evs {
		if ev.Kind == "display" && ev.Data["image/png"] != "iVBOR" {
			t.Errorf("image data changed: %+v", ev.Data)
		}
	}
	b, _ := json.Marshal(res.Sandbox)
	if strings.Contains(string(b), secret) {
		t.Errorf("result leaks the secret: %s", b)
	}
}

func TestStreamFlushesPartialLineAfterDelay(t *testing.T) {
	ex := &streamExecutor{
		script: []core.Event{{Kind: "stdout", Text: "prompt> "}, {Kind: "stdout", Text: "x\n"}},
		pause:  300 * time.Millisecond,
		result: core.Result{Status: core.StatusOK, Stdout: "prompt> x\n"},
	}
	cfg := testConfig()
	d, _ := newTestDispatcher(t, cfg, ex)
	var c collect
	start := time.Now()
	d.Run(core.WithSink(context.Background(), c.sink), Call{ID: "c", Name: ToolRunPython, Arguments: json.RawMessage(`{"code":"1"}`)})
	evs := c.events()
	if len(evs) != 2 || evs[0].Text != "prompt> " || evs[1].Text != "x\n" {
		t.Fatalf("events %+v", evs)
	}
	if d := c.at[0].Sub(start); d > 250*time.Millisecond {
		t.Fatalf("a partial line waited %v (want about %v)", d, streamFlushDelay)
	}
	// A partial line of 4 KiB or more goes out at once.
	long := strings.Repeat("a", streamFlushBytes+10)
	ex = &streamExecutor{script: []core.Event{{Kind: "stderr", Text: long}}, result: core.Result{Status: core.StatusOK}}
	d, _ = newTestDispatcher(t, cfg, ex)
	var c2 collect
	d.Run(core.WithSink(context.Background(), c2.sink), Call{ID: "c", Name: ToolRunPython, Arguments: json.RawMessage(`{"code":"1"}`)})
	if evs := c2.events(); len(evs) != 1 || evs[0].Text != long {
		t.Fatalf("long line: %d events", len(evs))
	}
}

// emit sends ev to the sink ctx carries, as the sandbox does.
func emit(ctx context.Context, ev core.Event) {
	if s := core.SinkFrom(ctx); s != nil {
		s(ev)
	}
}
