package queue

import "testing"

// TestOutcomeEncoding: outcomes and done notices survive any bytes in the
// message, payload and job ID, and malformed ones are refused.
func TestOutcomeEncoding(t *testing.T) {
	for _, c := range []struct{ st, msg, out, id string }{
		{stateOK, "", "", "j"}, {stateFailed, "a:b\n12:x", "\x00p:1\n", "id:with\nnewline"}, {stateDead, "delivered 2 times", "", ""},
	} {
		v := encodeOutcomeBy(c.st, c.msg, c.id, []byte(c.out))
		st, msg, by, out, err := decodeOutcomeBy(v)
		if err != nil || st != c.st || msg != c.msg || by != c.id || string(out) != c.out {
			t.Errorf("decode(encode(%q)) = %q %q %q %q %v", c, st, msg, by, out, err)
		}
		id, v2, ok := parseDone(noticePrefix(c.id) + v)
		if !ok || id != c.id || v2 != v {
			t.Errorf("parseDone = %q %q %v", id, v2, ok)
		}
	}
	for _, bad := range []string{"", "ok", "ok:x:", "ok:5:abc", "ok:-1:", "ok:0:", "ok:0:3:ab"} {
		if _, _, _, err := decodeOutcome(bad); err == nil {
			t.Errorf("decodeOutcome(%q) accepted", bad)
		}
	}
	if _, _, ok := parseDone("plain-id"); ok {
		t.Error("a bare string parsed as a done notice")
	}
	if terminalScore(1) >= 0 || terminalScore(2) <= terminalScore(1) {
		t.Error("terminal scores must be negative and ordered by deadline")
	}
}
