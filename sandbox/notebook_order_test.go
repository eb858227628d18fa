package sandbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// orderedEvents runs code as a notebook call of session sid and returns its
// events as one line each: stdout/stderr pieces merged while adjacent, then
// "display:TEXT" or "clear_output".
func orderedEvents(t *testing.T, e *Engine, sid, code string) []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	sink := func(ev core.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Kind {
		case core.EventStdout, core.EventStderr:
			if n := len(got); n > 0 && strings.HasPrefix(got[n-1], ev.Kind+":") {
				got[n-1] += ev.Text
				return
			}
			got = append(got, ev.Kind+":"+ev.Text)
		case core.EventDisplay:
			got = append(got, "display:"+ev.Data["text/plain"])
		default:
			got = append(got, ev.Kind)
		}
	}
	ctx, cancel := context.WithTimeout(core.WithSink(context.Background(), sink), testscale.D(time.Minute))
	defer cancel()
	r, err := e.SessionExec(ctx, core.Request{SessionID: sid, Owner: "o", Notebook: true, Language: core.Python, Code: code})
	if err != nil || r.Status != core.StatusOK {
		t.Fatalf("%q: %v %s", code, err, brief(r))
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), got...)
}

// TestNotebookOutputOrder: output written before a display() or
// clear_output() is sent before it and output written after it follows it,
// every time (the kernel's messages carry the byte counts written before
// them; the controller used to drain the pipes whole when a message came,
// taking a print made right after the message along: 'a','b' then the
// clear, leaving the cell empty).
func TestNotebookOutputOrder(t *testing.T) {
	t.Parallel() // functional: containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	cases := []struct {
		code string
		want []string
	}{
		{"print('a'); clear_output(); print('b')", []string{"stdout:a\n", "clear_output", "stdout:b\n"}},
		{"print('a'); display(1); print('b')", []string{"stdout:a\n", "display:1", "stdout:b\n"}},
		{"import sys\nprint('a', file=sys.stderr); display(2); print('b', end='')", []string{"stderr:a\n", "display:2", "stdout:b"}},
		{"print('é' * 3, end=''); display('x'); print('z')", []string{"stdout:ééé", "display:'x'", "stdout:z\n"}},
	}
	for _, c := range cases {
		bad := 0
		var example []string
		for i := 0; i < 20; i++ {
			got := orderedEvents(t, e, s.ID, c.code)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				bad++
				example = got
			}
		}
		if bad > 0 {
			t.Errorf("%q: %d of 20 out of order, e.g. %q (want %q)", c.code, bad, example, c.want)
		}
	}
}
