package sandbox

import (
	"context"
	"errors"
	"github.com/airlock-dev/airlock/internal/testscale"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// TestEnvAndStdinPerCall (issue 26): a call's env and stdin reach its code
// in both languages, one-shot and in a session, and are gone in the next
// call (same container, same session).
func TestEnvAndStdinPerCall(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := pooledEngine(t, nil)
	s := openSession(t, e, "o")
	codes := map[core.Language]string{
		core.Python: "import os, sys\nprint(os.environ.get('FOO'), os.environ.get('OTHER'), repr(sys.stdin.read()))",
		core.Shell:  `echo "${FOO-None} ${OTHER-None} '$(cat)'"`,
	}
	with := map[core.Language]string{core.Python: "bar baz x=1 'in put\\n'\n", core.Shell: "bar baz x=1 'in put'\n"}
	without := map[core.Language]string{core.Python: "None None ''\n", core.Shell: "None None ''\n"}
	exec := func(session bool, req core.Request) core.Result {
		t.Helper()
		if !session {
			req.Owner = "one"
			return run(t, e, req)
		}
		req.Owner, req.SessionID = "o", s.ID
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
		defer cancel()
		r, err := e.SessionExec(ctx, req)
		if err != nil {
			t.Fatalf("session exec: %v", err)
		}
		return r
	}
	for _, session := range []bool{false, true} {
		for _, lang := range []core.Language{core.Python, core.Shell} {
			r := exec(session, core.Request{Language: lang, Code: codes[lang], Env: map[string]string{"FOO": "bar baz", "OTHER": "x=1"}, Stdin: "in put\n"})
			if r.Status != core.StatusOK || r.Stdout != with[lang] {
				t.Errorf("session=%v %s with env and stdin: %s", session, lang, brief(r))
			}
			r = exec(session, core.Request{Language: lang, Code: codes[lang]})
			if r.Status != core.StatusOK || r.Stdout != without[lang] {
				t.Errorf("session=%v %s, the next call: %s", session, lang, brief(r))
			}
		}
	}
	_, err := e.Exec(context.Background(), core.Request{Owner: "one", Language: core.Python, Code: "1", Env: map[string]string{"LD_PRELOAD": "/x.so"}})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "LD_PRELOAD") {
		t.Errorf("LD_PRELOAD accepted: %v", err)
	}
}

// TestImageShowIsDisplay (issue 26): PIL's Image.show() returns the image
// as a display result (image/png), one-shot and in a session.
func TestImageShowIsDisplay(t *testing.T) {
	t.Parallel() // functional: no timing or CPU assertion, containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	code := "from PIL import Image\nImage.new('RGB', (4, 3), 'red').show()"
	for _, r := range []core.Result{
		run(t, e, core.Request{Language: core.Python, Code: code}),
		sexec(t, e, s.ID, "o", core.Python, code, core.Limits{}),
	} {
		if r.Status != core.StatusOK || len(r.Display) != 1 || r.Display[0].Data["image/png"] == "" {
			t.Errorf("Image.show(): %s displays %+v", brief(r), r.Display)
		}
	}
}
