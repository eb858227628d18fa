package egress

import (
	"net/netip"
	"strings"
	"time"
	"unicode"
)

// Attempt is one connection a call tried, allowed or refused: the shape of
// a result's network field. Allowed says whether the policy and the
// address checks let it through; Reason says why it was refused, or why an
// allowed one was cut short (a cap, the call's end), and is empty for an
// allowed connection that ended normally. Bytes counts what went through,
// both ways.
type Attempt struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"`
	Bytes   int64  `json:"bytes"`
}

// Record is what a call's handle returns when it closes: its attempts in
// the order they started, and how many more were not kept (past the
// per-call bound, Config.MaxRecorded).
type Record struct {
	Attempts []Attempt `json:"attempts"`
	Omitted  int       `json:"omitted,omitempty"`
}

// The kinds of Event.
const (
	KindConnect = "connect" // an HTTP CONNECT tunnel
	KindHTTP    = "http"    // a plain HTTP request through the proxy
	KindFetch   = "fetch"   // one hop of a fetch_url call
)

// Event is one attempt as the audit hook sees it: the Attempt plus who
// made it, how, and where it went.
type Event struct {
	Time     time.Time     // when the attempt started
	Owner    string        // the call's owner ("" for an unregistered source)
	CallID   string        // the call's id
	Source   netip.Addr    // the sandbox's address (invalid for fetch and doors)
	Door     string        // the door the sandbox came through ("" for an address)
	Kind     string        // KindConnect, KindHTTP or KindFetch
	Method   string        // the HTTP method (CONNECT for tunnels)
	SNI      string        // the TLS server name a tunnel's ClientHello named
	Addr     netip.Addr    // the address connected to (invalid when none was)
	Duration time.Duration // from start to end
	Attempt
}

// maxHostLen bounds the host a record keeps: what a refused client wrote
// can be anything.
const maxHostLen = 255

// cleanHost makes a host as a client wrote it safe to record: printable,
// at most maxHostLen bytes.
func cleanHost(h string) string {
	h = strings.Map(func(r rune) rune {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, h)
	if len(h) > maxHostLen {
		h = h[:maxHostLen]
	}
	return h
}
