package snapshots

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// Call log bounds.
const (
	kindLog = "sessionlog"
	// MaxCalls is how many calls a session's log keeps (the oldest go).
	MaxCalls = 500
	// maxStream is how much of a stream one logged call keeps (its digest
	// covers what the call returned).
	maxStream = 64 << 10
	// maxDisplay bounds a logged call's rich outputs together; past it the
	// rest are left out (and counted).
	maxDisplay = 2 << 20
	// logTTL is how long a log is kept after its last call.
	logTTL = 7 * 24 * time.Hour
)

// Call is one logged session call.
type Call struct {
	Code      string        `json:"code"`
	Language  core.Language `json:"language,omitempty"`
	Generated bool          `json:"generated,omitempty"`
	Status    core.Status   `json:"status"`
	ExitCode  int           `json:"exit_code"`
	// ExecutionCount is the kernel's counter after the call.
	ExecutionCount int             `json:"execution_count,omitempty"`
	Stdout         string          `json:"stdout,omitempty"`
	Stderr         string          `json:"stderr,omitempty"`
	StdoutSHA256   string          `json:"stdout_sha256"`
	StderrSHA256   string          `json:"stderr_sha256"`
	Error          *core.ExecError `json:"error,omitempty"`
	Display        []core.Display  `json:"display,omitempty"`
	// DisplayDropped counts rich outputs left out of the log (its bound).
	DisplayDropped int       `json:"display_dropped,omitempty"`
	Time           time.Time `json:"time"`
}

// CallOf is the logged form of req's result res.
func CallOf(req core.Request, res core.Result, now time.Time) Call {
	c := Call{Code: req.Code, Language: req.Language, Generated: req.Generated, Status: res.Status, ExitCode: res.ExitCode,
		ExecutionCount: res.ExecutionCount, Stdout: head(res.Stdout), Stderr: head(res.Stderr),
		StdoutSHA256: digest(res.Stdout), StderrSHA256: digest(res.Stderr), Error: res.Error, Time: now}
	size := 0
	for _, d := range res.Display {
		n := 0
		for _, v := range d.Data {
			n += len(v)
		}
		if size+n > maxDisplay {
			c.DisplayDropped++
			continue
		}
		size += n
		c.Display = append(c.Display, d)
	}
	for _, d := range figures(res.Artifacts) {
		n := len(d.Data["image/png"])
		if size+n > maxDisplay {
			c.DisplayDropped++
			continue
		}
		size += n
		c.Display = append(c.Display, d)
	}
	return c
}

// figures are the call's matplotlib figures (the artifacts figure-N.png the
// sandbox captured, with their bytes) as displays, as Jupyter shows them
// inline; files the code saved (outputs/...) stay artifacts only.
func figures(arts []core.Artifact) []core.Display {
	var out []core.Display
	for _, a := range arts {
		if a.MIME == "image/png" && len(a.Data) > 0 && strings.HasPrefix(a.Name, "figure-") {
			out = append(out, core.Display{Data: map[string]string{"image/png": base64.StdEncoding.EncodeToString(a.Data)}})
		}
	}
	return out
}

func head(s string) string {
	if len(s) > maxStream {
		return s[:maxStream]
	}
	return s
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// CallLog keeps each session's calls in the state store, under its owner.
type CallLog struct{ st state.Store }

// NewCallLog returns the call logs over st.
func NewCallLog(st state.Store) *CallLog { return &CallLog{st: st} }

func logKey(owner, session string) state.Key {
	return state.Key{Kind: kindLog, Owner: owner, ID: session}
}

// Append logs one call of owner's session.
func (l *CallLog) Append(ctx context.Context, owner, session string, c Call) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("call log: encode: %w", err)
	}
	if len(b) > state.MaxValueSize {
		c.Display, c.DisplayDropped = nil, c.DisplayDropped+len(c.Display)
		if b, err = json.Marshal(c); err != nil {
			return fmt.Errorf("call log: encode: %w", err)
		}
	}
	// Lazy (state.LazyAppender): the embedded store answers without a disk
	// sync, so the call's answer does not wait for one; a crash loses at
	// most the store's flush interval of log entries (1 s), and none a
	// later synced write (an automatic snapshot) followed.
	if _, err := state.AppendWith(ctx, l.st, logKey(owner, session), b, MaxCalls, logTTL, true); err != nil {
		return fmt.Errorf("call log: append to %s: %w", session, err)
	}
	return nil
}

// Calls returns owner's session's logged calls, oldest first.
func (l *CallLog) Calls(ctx context.Context, owner, session string) ([]Call, error) {
	var out []Call
	var after int64
	for {
		es, err := l.st.Range(ctx, logKey(owner, session), after, 100, 0)
		if err != nil {
			return nil, fmt.Errorf("call log: read %s: %w", session, err)
		}
		if len(es) == 0 {
			return out, nil
		}
		for _, e := range es {
			var c Call
			if json.Unmarshal(e.Data, &c) == nil {
				out = append(out, c)
			}
			after = e.Seq
		}
	}
}

// Delete forgets owner's session's log.
func (l *CallLog) Delete(ctx context.Context, owner, session string) error {
	return l.st.DeleteLog(ctx, logKey(owner, session))
}
