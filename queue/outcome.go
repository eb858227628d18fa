package queue

import (
	"fmt"
	"strconv"
	"strings"
)

// An outcome is stored (Redis result key) and published (done notices) as
// one string: "<state>:<len(msg)>:<msg><len(by)>:<by><out>", where by is
// the worker that ran the job ("" when a caller wrote the outcome), so the
// caller needs no further read to learn it and an operator can see where a
// job ran.

// encodeOutcome packs a terminal state written by a caller.
func encodeOutcome(state, msg string, out []byte) string { return encodeOutcomeBy(state, msg, "", out) }

// encodeOutcomeBy packs a terminal state, its message, the worker that ran
// the job and the reply payload.
func encodeOutcomeBy(state, msg, by string, out []byte) string {
	return state + ":" + strconv.Itoa(len(msg)) + ":" + msg + strconv.Itoa(len(by)) + ":" + by + string(out)
}

// decodeOutcome unpacks encodeOutcomeBy's string, without the worker.
func decodeOutcome(v string) (state, msg string, out []byte, err error) {
	state, msg, _, out, err = decodeOutcomeBy(v)
	return state, msg, out, err
}

// decodeOutcomeBy unpacks encodeOutcomeBy's string.
func decodeOutcomeBy(v string) (state, msg, by string, out []byte, err error) {
	bad := fmt.Errorf("queue: malformed stored outcome %.40q", v)
	state, rest, ok := strings.Cut(v, ":")
	if !ok {
		return "", "", "", nil, bad
	}
	msg, rest, ok = cutCounted(rest)
	if !ok {
		return "", "", "", nil, bad
	}
	by, rest, ok = cutCounted(rest)
	if !ok {
		return "", "", "", nil, bad
	}
	return state, msg, by, []byte(rest), nil
}

// cutCounted splits "<n>:<n bytes><rest>".
func cutCounted(s string) (field, rest string, ok bool) {
	n, rest, ok := strings.Cut(s, ":")
	l, err := strconv.Atoi(n)
	if !ok || err != nil || l < 0 || l > len(rest) {
		return "", "", false
	}
	return rest[:l], rest[l:], true
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
