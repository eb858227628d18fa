package sandbox

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// headTail keeps the first and the last half bytes of a stream and counts
// what fell in between: a verbose program keeps both its start and its
// final lines. It never holds more than 3*half bytes.
type headTail struct {
	half  int
	head  []byte
	tail  []byte
	total int64
}

// markerRoom is kept free under the limit for the "bytes dropped" line.
const markerRoom = 64

// newHeadTail keeps at most limit bytes of a stream, the dropped-bytes
// line included: (limit-64)/2 of head and as much of tail.
func newHeadTail(limit int) *headTail { return &headTail{half: max((limit-markerRoom)/2, 1)} }

// write adds a chunk.
func (h *headTail) write(s string) {
	h.total += int64(len(s))
	if room := h.half - len(h.head); room > 0 {
		n := min(room, len(s))
		h.head = append(h.head, s[:n]...)
		s = s[n:]
	}
	if s == "" {
		return
	}
	h.tail = append(h.tail, s...)
	if len(h.tail) > 2*h.half {
		h.tail = append(make([]byte, 0, 2*h.half), h.tail[len(h.tail)-h.half:]...)
	}
}

// dropped is how many bytes are not in text.
func (h *headTail) dropped() int64 {
	return h.total - int64(len(h.head)) - int64(min(len(h.tail), h.half))
}

// text is the kept output, with a line saying how much was cut when
// something was.
func (h *headTail) text() string {
	tail := h.tail
	if len(tail) > h.half {
		tail = tail[len(tail)-h.half:]
	}
	if d := h.dropped(); d > 0 {
		return safeUTF8(h.head) + fmt.Sprintf("\n[... %d bytes dropped ...]\n", d) + safeUTF8(tail)
	}
	return safeUTF8(append(append([]byte(nil), h.head...), tail...))
}

// safeUTF8 replaces invalid UTF-8 and NUL bytes so output is always safe JSON text.
func safeUTF8(b []byte) string {
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
