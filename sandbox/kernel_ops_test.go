package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// introspect asks session id about code and decodes the answer.
func introspect(t *testing.T, e *Engine, id, code, kind string, pos int) (map[string]any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	raw, err := e.IntrospectSession(ctx, "o", id, code, &core.Introspect{Kind: kind, CursorPos: pos})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	return m, nil
}

// TestSessionIntrospect: completion (Jedi, over the live namespace, even
// before the first call), inspection and is_complete come from the
// session's kernel; a kernel that answers too much is refused, one that
// answers too late is interrupted and keeps its namespace, one that never
// answers is replaced, and the session goes on.
func TestSessionIntrospect(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	m, err := introspect(t, e, s.ID, "import js", core.IntrospectComplete, 9)
	if err != nil || !slices.Contains(anyStrings(m["matches"]), "json") || m["cursor_start"] != float64(7) {
		t.Fatalf("complete before any call: %v %v", m, err)
	}
	sexec(t, e, s.ID, "o", core.Python, "x = 5\nimport pandas as pd", core.Limits{})
	if m, err = introspect(t, e, s.ID, "x.bit_", core.IntrospectComplete, 6); err != nil || !slices.Contains(anyStrings(m["matches"]), "bit_length") {
		t.Fatalf("complete x.bit_: %v %v", m, err)
	}
	// Jedi reads the image's parse trees of pandas (built with the image)
	// and writes none into the session's /tmp.
	sexec(t, e, s.ID, "o", core.Python, "df = pd.DataFrame({'a': [1]})", core.Limits{})
	if m, err = introspect(t, e, s.ID, "df.", core.IntrospectComplete, 3); err != nil || !slices.Contains(anyStrings(m["matches"]), "describe") {
		t.Fatalf("complete df.: %v %v", m, err)
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "import glob, jedi, os\nprint(jedi.settings.cache_directory, os.path.exists('/tmp/.cache'), len(glob.glob(jedi.settings.cache_directory + '/*/*.pkl')) > 10)", core.Limits{}); r.Stdout != "/usr/local/share/airlock/jedi False True\n" {
		t.Fatalf("Jedi's cache after a completion: %s", brief(r))
	}
	if m, err = introspect(t, e, s.ID, "pd.read_csv(", core.IntrospectInspect, 12); err != nil || m["found"] != true ||
		!strings.Contains(m["data"].(map[string]any)["text/plain"].(string), "Signature: pd.read_csv(") {
		t.Fatalf("inspect pd.read_csv(: %v %v", m, err)
	}
	for code, want := range map[string]string{"x = 1": "complete", "if x:": "incomplete", "x = (": "incomplete", "1 +* 2": "invalid"} {
		if m, err = introspect(t, e, s.ID, code, core.IntrospectIsComplete, len(code)); err != nil || m["status"] != want {
			t.Fatalf("is_complete %q: %v %v, want %s", code, m, err, want)
		}
	}
	if _, err := e.IntrospectSession(context.Background(), "o", s.ID, "x", &core.Introspect{Kind: "explode"}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("an unknown kind: %v", err)
	}
	if _, err := e.IntrospectSession(context.Background(), "other", s.ID, "x", &core.Introspect{Kind: core.IntrospectComplete}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("another owner's session: %v", err)
	}

	// User code owns its kernel and may change what answers (here Jedi,
	// an ordinary module it can import and patch): an answer over 512 KiB
	// is refused, a kernel that never answers is replaced within the
	// controller's bound; either way the session works after.
	sexec(t, e, s.ID, "o", core.Python, "import jedi, types\nclass Big:\n    def __init__(self, *a, **k): pass\n"+
		"    def complete(self, *a, **k): return [types.SimpleNamespace(name='x' * (1 << 20), complete='')]\njedi.Interpreter = Big", core.Limits{})
	if _, err := introspect(t, e, s.ID, "x", core.IntrospectComplete, 1); err == nil || !strings.Contains(err.Error(), "over 524288 bytes") {
		t.Fatalf("a 1 MiB answer: %v", err)
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "print(x)", core.Limits{}); r.Stdout != "5\n" {
		t.Fatalf("after a refused answer: %s", brief(r))
	}
	// A completion that takes too long is interrupted: it answers that,
	// and the session keeps its namespace.
	sexec(t, e, s.ID, "o", core.Python, "import time\nclass Slow:\n    def __init__(self, *a, **k): time.sleep(3600)\njedi.Interpreter = Slow", core.Limits{})
	t0 := time.Now()
	if m, err := introspect(t, e, s.ID, "x", core.IntrospectComplete, 1); err != nil || m["status"] != "error" || m["ename"] != "KeyboardInterrupt" {
		t.Fatalf("a completion past the bound: %v %v, want an interrupted answer", m, err)
	}
	if d := time.Since(t0); d > testscale.D(30*time.Second) {
		t.Fatalf("an interrupted introspection took %s", d)
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "print(x)", core.Limits{}); r.Stdout != "5\n" || r.KernelRestarted {
		t.Fatalf("after an interrupted introspection: %s (kernel_restarted %v)", brief(r), r.KernelRestarted)
	}
	// One that ignores the interrupt is killed.
	sexec(t, e, s.ID, "o", core.Python, "import signal\nclass Stuck:\n    def __init__(self, *a, **k):\n        signal.signal(signal.SIGINT, signal.SIG_IGN)\n        time.sleep(3600)\njedi.Interpreter = Stuck", core.Limits{})
	t0 = time.Now()
	if _, err := introspect(t, e, s.ID, "x", core.IntrospectComplete, 1); err == nil {
		t.Fatal("a kernel that never answers gave an answer")
	}
	if d := time.Since(t0); d > testscale.D(30*time.Second) {
		t.Fatalf("a stuck introspection took %s", d)
	}
	r := sexec(t, e, s.ID, "o", core.Python, "print('alive')", core.Limits{})
	if r.Stdout != "alive\n" || !r.KernelRestarted {
		t.Fatalf("after a stuck introspection: %s (kernel_restarted %v)", brief(r), r.KernelRestarted)
	}
}

// anyStrings turns a JSON array into strings.
func anyStrings(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, x := range arr {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestSessionInputAndNotebook: with AllowStdin input() waits for
// InputSession (EventInput carries the prompt); without it input() reads
// the empty stdin; Notebook sends the value as a result display (not
// printed) and figures as displays; clear_output() is an event.
func TestSessionInputAndNotebook(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	if taken, err := e.InputSession(context.Background(), "o", s.ID, "nobody asked"); err != nil || taken {
		t.Fatalf("input with no call waiting: %v %v", taken, err)
	}
	var mu sync.Mutex
	var events []core.Event
	sink := func(ev core.Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(core.WithSink(context.Background(), sink), testscale.D(time.Minute))
	defer cancel()
	done := make(chan core.Result, 1)
	go func() {
		r, err := e.SessionExec(ctx, core.Request{SessionID: s.ID, Owner: "o", AllowStdin: true, Notebook: true,
			Code: "import getpass\na = input('first? ')\nb = getpass.getpass()\nclear_output(wait=True)\na + b"})
		if err != nil {
			t.Errorf("exec: %v", err)
		}
		done <- r
	}()
	answer := func(prompt string, password bool, value string) {
		t.Helper()
		deadline := time.Now().Add(testscale.D(30 * time.Second))
		for {
			mu.Lock()
			var got *core.Event
			for i := range events {
				if events[i].Kind == core.EventInput && events[i].Text == prompt {
					got = &events[i]
				}
			}
			mu.Unlock()
			if got != nil {
				if got.Password != password {
					t.Fatalf("input %q password %v", prompt, got.Password)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no input_request %q: %+v", prompt, events)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if taken, err := e.InputSession(context.Background(), "o", s.ID, value); err != nil || !taken {
			t.Fatalf("answer %q: %v %v", prompt, taken, err)
		}
	}
	answer("first? ", false, "ab")
	answer("Password: ", true, "cd")
	r := <-done
	if r.Status != core.StatusOK || r.Stdout != "" || len(r.Display) != 1 || !r.Display[0].Result || r.Display[0].Data["text/plain"] != "'abcd'" {
		t.Fatalf("notebook result: %s %+v", brief(r), r.Display)
	}
	mu.Lock()
	cleared := slices.ContainsFunc(events, func(ev core.Event) bool { return ev.Kind == core.EventClear && ev.Wait })
	mu.Unlock()
	if !cleared {
		t.Fatalf("no clear_output event: %+v", events)
	}
	// Without AllowStdin input() reads the (empty) stdin as before.
	r = sexec(t, e, s.ID, "o", core.Python, "try:\n    input()\nexcept EOFError:\n    print('eof')", core.Limits{})
	if r.Stdout != "eof\n" {
		t.Fatalf("input() without allow_stdin: %s", brief(r))
	}
	// A figure in notebook mode is a display, not an artifact.
	ctx2, cancel2 := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel2()
	r, err := e.SessionExec(ctx2, core.Request{SessionID: s.ID, Owner: "o", Notebook: true,
		Code: "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()"})
	if err != nil || len(r.Artifacts) != 0 || len(r.Display) != 1 || !strings.HasPrefix(r.Display[0].Data["image/png"], "iVBORw0KGgo") {
		t.Fatalf("notebook figure: %v %s", err, brief(r))
	}
}
