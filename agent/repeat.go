package agent

import (
	"bytes"
	"encoding/json"
)

// repeatVerdict is what the repeat detector says about one call.
type repeatVerdict int

const (
	repeatOK   repeatVerdict = iota // run it
	repeatWarn                      // reached the limit: do not run, tell the model
	repeatStop                      // repeated after the warning: stop the run
)

// repeats counts identical calls (name + canonical arguments) in a run.
type repeats struct {
	limit  int
	counts map[string]int
}

// newRepeats returns a detector allowing limit identical calls.
func newRepeats(limit int) *repeats { return &repeats{limit: limit, counts: map[string]int{}} }

// see counts a call and returns the verdict.
func (r *repeats) see(name, args string) repeatVerdict {
	key := name + "\x00" + canonicalJSON(args)
	r.counts[key]++
	switch n := r.counts[key]; {
	case n < r.limit:
		return repeatOK
	case n == r.limit:
		return repeatWarn
	default:
		return repeatStop
	}
}

// canonicalJSON re-encodes JSON with sorted keys and no spaces, so that
// {"b":1, "a":2} and {"a":2,"b":1} compare equal; invalid JSON is kept.
func canonicalJSON(s string) string {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s
	}
	return string(b)
}
