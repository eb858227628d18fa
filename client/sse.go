package client

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxSSELine bounds one line of an event stream.
const maxSSELine = 4 << 20

// sseFrame is one Server-Sent Event as sent: its id, event type and data
// (data lines joined by "\n"). It is transport only; the typed streams
// (run events now, streamed tool calls later) decode Data.
type sseFrame struct {
	ID, Event, Data string
}

// sseReader reads frames from a text/event-stream body.
type sseReader struct {
	r *bufio.Reader
}

// newSSEReader reads frames from body.
func newSSEReader(body io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(body, 64<<10)}
}

// next returns the next frame with data; comments, retry hints and
// frames without data are skipped. It returns io.EOF at the end of the
// stream and io.ErrUnexpectedEOF when the stream ends inside a frame.
func (s *sseReader) next() (sseFrame, error) {
	var f sseFrame
	var data []string
	started := false
	for {
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && started {
				return sseFrame{}, io.ErrUnexpectedEOF
			}
			return sseFrame{}, err
		}
		if line == "" {
			if data != nil {
				f.Data = strings.Join(data, "\n")
				return f, nil
			}
			f, started = sseFrame{}, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // comment or heartbeat
		}
		started = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.ID = value
		case "event":
			f.Event = value
		case "data":
			data = append(data, value)
		}
	}
}

// readLine reads one line without its end (LF, CRLF or CR before LF).
func (s *sseReader) readLine() (string, error) {
	var b strings.Builder
	for {
		chunk, isPrefix, err := s.r.ReadLine()
		if err != nil {
			return "", err
		}
		b.Write(chunk)
		if b.Len() > maxSSELine {
			return "", fmt.Errorf("airlock client: event stream line over %d bytes", maxSSELine)
		}
		if !isPrefix {
			return b.String(), nil
		}
	}
}
