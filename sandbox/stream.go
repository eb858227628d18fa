package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Docker multiplexes a non-TTY container's stdout and stderr on one stream
// in frames: an 8-byte header (stream id, 3 zero bytes, big-endian length)
// and the payload.
const (
	streamStdout = 1
	streamStderr = 2
	maxFrame     = 1 << 20 // Docker never sends frames this large; guard anyway
)

// demux reads one frame at a time from a multiplexed stream. It keeps its
// place across read errors (a read deadline may fire mid-frame), so reading
// can resume after an interrupt.
type demux struct {
	r      io.Reader
	hdr    [8]byte
	hn     int
	inBody bool
	buf    []byte
	want   int
	got    int
}

// next returns the next frame's stream id and payload. The payload is only
// valid until the following call.
func (d *demux) next() (byte, []byte, error) {
	for !d.inBody {
		n, err := d.r.Read(d.hdr[d.hn:])
		d.hn += n
		if d.hn == len(d.hdr) {
			d.want = int(binary.BigEndian.Uint32(d.hdr[4:]))
			if d.want > maxFrame {
				return 0, nil, fmt.Errorf("sandbox: stream frame of %d bytes", d.want)
			}
			if cap(d.buf) < d.want {
				d.buf = make([]byte, d.want)
			}
			d.got, d.inBody = 0, true
			break
		}
		if err != nil {
			return 0, nil, err
		}
	}
	for d.got < d.want {
		n, err := d.r.Read(d.buf[d.got:d.want])
		d.got += n
		if err != nil && d.got < d.want {
			return 0, nil, err
		}
	}
	d.inBody, d.hn = false, 0
	return d.hdr[0], d.buf[:d.want], nil
}

// capped keeps at most limit bytes and counts the rest. It never grows past
// its limit, whatever the program writes.
type capped struct {
	limit int
	buf   bytes.Buffer
	total int64
}

// Write keeps what fits under the limit and counts everything.
func (c *capped) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if room := c.limit - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}

// over reports whether more than limit bytes were written.
func (c *capped) over() bool { return c.total > int64(c.limit) }

// text returns the kept bytes as valid UTF-8 (invalid bytes become U+FFFD).
func (c *capped) text() string { return safeUTF8(c.buf.Bytes()) }

// safeUTF8 replaces invalid UTF-8 and NUL bytes so output is always safe JSON text.
func safeUTF8(b []byte) string {
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
