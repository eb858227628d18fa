package jupyter

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ProtocolVersion is the messaging protocol version the gateway speaks.
const ProtocolVersion = "5.3"

// header is a message header as the gateway writes it.
type header struct {
	MsgID    string `json:"msg_id"`
	MsgType  string `json:"msg_type"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	Version  string `json:"version"`
}

// inHeader is what the gateway reads of a client's header (its date may be
// a string or, from jupyter_server's gateway client, a number).
type inHeader struct {
	MsgID    string `json:"msg_id"`
	MsgType  string `json:"msg_type"`
	Session  string `json:"session"`
	Username string `json:"username"`
}

// inMsg is a message from a client. Its raw header is echoed verbatim as
// the parent_header of every message it causes.
type inMsg struct {
	Channel   string          `json:"channel"`
	RawHeader json.RawMessage `json:"header"`
	Content   json.RawMessage `json:"content"`
	Header    inHeader        `json:"-"`
}

// outMsg is a message to a client, in the JSON form of Jupyter's websocket
// (msg_id and msg_type repeated at the top level, as jupyter_client's
// Session.msg writes them).
type outMsg struct {
	Channel      string          `json:"channel"`
	Header       header          `json:"header"`
	ParentHeader json.RawMessage `json:"parent_header"`
	Metadata     map[string]any  `json:"metadata"`
	Content      any             `json:"content"`
	Buffers      []any           `json:"buffers"`
	MsgID        string          `json:"msg_id"`
	MsgType      string          `json:"msg_type"`
}

// maxChannelName bounds what a client may name a channel (for errors).
const maxChannelName = 32

// parseMessage decodes one websocket frame: JSON text, or Jupyter's binary
// form (a count of offsets, the offsets, the JSON part, then buffers,
// which the gateway does not use).
func parseMessage(data []byte, binaryFrame bool) (inMsg, error) {
	if binaryFrame {
		part, err := binaryJSON(data)
		if err != nil {
			return inMsg{}, err
		}
		data = part
	}
	var m inMsg
	if err := json.Unmarshal(data, &m); err != nil {
		return inMsg{}, fmt.Errorf("jupyter: message is not JSON: %w", err)
	}
	if len(m.RawHeader) == 0 || string(m.RawHeader) == "null" {
		return inMsg{}, errors.New("jupyter: message without a header")
	}
	if err := json.Unmarshal(m.RawHeader, &m.Header); err != nil {
		return inMsg{}, fmt.Errorf("jupyter: message header: %w", err)
	}
	if m.Header.MsgType == "" {
		return inMsg{}, errors.New("jupyter: message header without msg_type")
	}
	if len(m.Channel) > maxChannelName {
		return inMsg{}, errors.New("jupyter: channel name too long")
	}
	if len(m.Content) == 0 || string(m.Content) == "null" {
		m.Content = json.RawMessage("{}")
	}
	return m, nil
}

// binaryJSON returns the JSON part of a binary websocket message.
func binaryJSON(b []byte) ([]byte, error) {
	if len(b) < 8 {
		return nil, errors.New("jupyter: binary message too short")
	}
	n := int(binary.BigEndian.Uint32(b[:4]))
	if n < 1 || 4+4*n > len(b) {
		return nil, fmt.Errorf("jupyter: binary message with %d offsets in %d bytes", n, len(b))
	}
	start := int(binary.BigEndian.Uint32(b[4:8]))
	end := len(b)
	if n > 1 {
		end = int(binary.BigEndian.Uint32(b[8:12]))
	}
	if start < 4+4*n || end < start || end > len(b) {
		return nil, errors.New("jupyter: binary message offsets out of range")
	}
	return b[start:end], nil
}

// newID returns a random UUID-formatted id for messages and sessions.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// isoTime formats t as Jupyter's dates (UTC, microseconds, Z).
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// reply builds a message of msgType on channel answering parent (nil
// parent: an empty parent_header), from the kernel session ksid.
func reply(ksid string, parent *inMsg, channel, msgType string, content any) outMsg {
	ph := json.RawMessage("{}")
	if parent != nil {
		ph = parent.RawHeader
	}
	id := newID()
	return outMsg{
		Channel:      channel,
		Header:       header{MsgID: id, MsgType: msgType, Session: ksid, Username: "airlock", Date: isoTime(time.Now()), Version: ProtocolVersion},
		ParentHeader: ph,
		Metadata:     map[string]any{},
		Content:      content,
		Buffers:      []any{},
		MsgID:        id,
		MsgType:      msgType,
	}
}
