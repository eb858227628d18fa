package dispatcher

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// Live events of a call reach the caller only through streamRedactor: the
// same Redactor as the final result, applied to whole lines so that a
// secret is not split across two events.

const (
	// streamFlushDelay is how long a partial line waits for its newline.
	streamFlushDelay = 50 * time.Millisecond
	// streamFlushBytes is the longest partial line held back.
	streamFlushBytes = 4 << 10
)

var (
	keyBegin = regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	keyEnd   = regexp.MustCompile(`-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
)

// streamRedactor line-buffers stdout and stderr chunks, redacts every event
// and hands it to the caller's sink in order.
type streamRedactor struct {
	r   *Redactor
	out core.Sink

	mu     sync.Mutex
	buf    map[string]string // pending partial line per stream
	inKey  map[string]bool   // inside a private key block per stream
	timer  *time.Timer
	closed bool
}

// Stream returns ctx with its core.Sink (if any) replaced by one that
// passes every live event through r, whole lines at a time, and a stop
// function that flushes what is pending; no event reaches the original
// sink after stop returns. Without a sink ctx is returned as is.
func (r *Redactor) Stream(ctx context.Context) (context.Context, func()) {
	out := core.SinkFrom(ctx)
	if out == nil {
		return ctx, func() {}
	}
	s := &streamRedactor{r: r, out: out, buf: map[string]string{}, inKey: map[string]bool{}}
	return core.WithSink(ctx, s.emit), s.stop
}

// emit takes one event from the executor.
func (s *streamRedactor) emit(ev core.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	switch ev.Kind {
	case "stdout", "stderr":
		pending := s.buf[ev.Kind] + ev.Text
		if i := strings.LastIndexByte(pending, '\n'); i >= 0 {
			s.send(ev.Kind, pending[:i+1])
			pending = pending[i+1:]
		}
		if len(pending) >= streamFlushBytes {
			s.send(ev.Kind, pending)
			pending = ""
		}
		s.buf[ev.Kind] = pending
		if pending != "" && s.timer == nil {
			s.timer = time.AfterFunc(streamFlushDelay, s.flushTimer)
		}
	default:
		s.flushLocked() // keep the order of text and rich output
		s.out(s.redactEvent(ev))
	}
}

// flushTimer sends the partial lines that waited streamFlushDelay.
func (s *streamRedactor) flushTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	if !s.closed {
		s.flushLocked()
	}
}

// stop flushes pending text and detaches the caller's sink.
func (s *streamRedactor) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.flushLocked()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// flushLocked sends every pending partial line.
func (s *streamRedactor) flushLocked() {
	for _, kind := range []string{"stdout", "stderr"} {
		if p := s.buf[kind]; p != "" {
			s.buf[kind] = ""
			s.send(kind, p)
		}
	}
}

// send redacts text of stream kind and passes it on. The body of a private
// key printed over several lines is dropped until its END line.
func (s *streamRedactor) send(kind, text string) {
	var sb strings.Builder
	for text != "" {
		if s.inKey[kind] {
			loc := keyEnd.FindStringIndex(text)
			if loc == nil {
				return // still inside the key: nothing of it goes out
			}
			text = text[loc[1]:]
			s.inKey[kind] = false
			continue
		}
		b := keyBegin.FindStringIndex(text)
		if b == nil {
			sb.WriteString(text)
			break
		}
		e := keyEnd.FindStringIndex(text[b[1]:])
		if e == nil {
			sb.WriteString(text[:b[0]])
			sb.WriteString("[REDACTED:private_key]")
			s.inKey[kind] = true
			text = ""
			continue
		}
		end := b[1] + e[1]
		sb.WriteString(text[:end]) // a whole block: the Redactor replaces it
		text = text[end:]
	}
	if out := s.r.String(sb.String()); out != "" {
		s.out(core.Event{Kind: kind, Text: out})
	}
}

// redactEvent redacts a display or artifact event.
func (s *streamRedactor) redactEvent(ev core.Event) core.Event {
	if len(ev.Data) > 0 {
		ev.Data = s.r.bundle(ev.Data)
	}
	if ev.Artifact != nil {
		a := *ev.Artifact
		a.Name = s.r.String(a.Name)
		a.Data = nil
		ev.Artifact = &a
	}
	ev.Text = s.r.String(ev.Text)
	return ev
}

// bundle redacts the text values of a MIME bundle; images stay as they are.
func (r *Redactor) bundle(data map[string]string) map[string]string {
	out := make(map[string]string, len(data))
	for mime, v := range data {
		if strings.HasPrefix(mime, "image/") && !strings.Contains(mime, "svg") {
			out[mime] = v
			continue
		}
		out[mime] = r.String(v)
	}
	return out
}

// rich redacts the structured fields of a result: the exception and the
// display bundles.
func (r *Redactor) rich(res core.Result) core.Result {
	if res.Error != nil {
		e := *res.Error
		e.Name, e.Value = r.String(e.Name), r.String(e.Value)
		if len(e.Traceback) > 0 {
			tb := make([]string, len(e.Traceback))
			for i, l := range e.Traceback {
				tb[i] = r.String(l)
			}
			e.Traceback = tb
		}
		res.Error = &e
	}
	if len(res.Display) > 0 {
		ds := make([]core.Display, len(res.Display))
		for i, d := range res.Display {
			ds[i] = core.Display{Data: r.bundle(d.Data)}
		}
		res.Display = ds
	}
	return res
}
