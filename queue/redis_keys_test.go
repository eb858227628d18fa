package queue

import (
	"strings"
	"testing"
)

// TestKeysShareOneHashTag checks that every key of a queue carries the
// queue's hash tag first, so Redis Cluster puts them in one slot.
func TestKeysShareOneHashTag(t *testing.T) {
	k := newKeyspace("airlock", "default")
	for _, key := range []string{
		k.stream(), k.batchStream(), k.workerStream("w{1}"), k.res("j}{"), k.active(), k.owner("{o}"),
		k.session("s"), k.alive("w"), k.dead(), k.reply("c"), k.cancel(),
	} {
		if !strings.HasPrefix(key, "airlock:{default}:") {
			t.Errorf("key %q does not start with the queue's hash tag", key)
		}
		open := strings.IndexByte(key, '{')
		if tag := key[open+1 : open+strings.IndexByte(key[open:], '}')]; tag != "default" {
			t.Errorf("key %q hashes on %q", key, tag)
		}
	}
}
