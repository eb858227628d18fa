package queue

import (
	"fmt"
	"strconv"
	"strings"
)

// An outcome is stored (Redis result key) and published (done notices) as
// one string: "<state>:<len(msg)>:<msg><out>", so the caller needs no
// further read to learn it.

// encodeOutcome packs a terminal state, its message and the reply payload.
func encodeOutcome(state, msg string, out []byte) string {
	return state + ":" + strconv.Itoa(len(msg)) + ":" + msg + string(out)
}

// decodeOutcome unpacks encodeOutcome's string.
func decodeOutcome(v string) (state, msg string, out []byte, err error) {
	state, rest, ok := strings.Cut(v, ":")
	n, rest2, ok2 := strings.Cut(rest, ":")
	l, err1 := strconv.Atoi(n)
	if !ok || !ok2 || err1 != nil || l < 0 || l > len(rest2) {
		return "", "", nil, fmt.Errorf("queue: malformed stored outcome %.40q", v)
	}
	return state, rest2[:l], []byte(rest2[l:]), nil
}

// donePrefix starts a done notice: prefix, len(id), ":", id, outcome. It
// is published on the submitter's reply channel by workers and on the
// cancel channel by callers that end a job (cancel, deadline, lost).
const donePrefix = "\x00d:"

// noticePrefix is the start of job id's done notice; the encoded outcome
// follows it.
func noticePrefix(id string) string {
	return donePrefix + strconv.Itoa(len(id)) + ":" + id
}

// parseDone splits a done notice into job id and encoded outcome.
func parseDone(payload string) (id, v string, ok bool) {
	rest, found := strings.CutPrefix(payload, donePrefix)
	if !found {
		return "", "", false
	}
	n, rest, found := strings.Cut(rest, ":")
	l, err := strconv.Atoi(n)
	if !found || err != nil || l < 0 || l > len(rest) {
		return "", "", false
	}
	return rest[:l], rest[l:], true
}

// terminalOffset is subtracted from a job's deadline (ms) to give its
// terminal score in the active set: below every live score (a deadline),
// and the same for every writer of one job, so exactly one
// "ZADD XX LT CH" from live to terminal succeeds whatever the writers'
// clocks say.
const terminalOffset = 10_000_000_000_000

// terminalScore is job deadline dl's terminal score.
func terminalScore(dlMs int64) int64 { return dlMs - terminalOffset }
