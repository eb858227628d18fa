package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
)

// TestSnapshotInline: a controller with featureSnapInline sends a small
// snapshot's parts in the snapshot op's done frame: the engine asks for
// them (inline_max), reads no chunk and clears nothing (one round trip),
// and hands each part to the sink; a part that does not match its digest
// fails the snapshot.
func TestSnapshotInline(t *testing.T) {
	for _, forged := range []bool{false, true} {
		var mu sync.Mutex
		var ops []string
		var asked int64
		parts := map[string][]byte{"ns": []byte("namespace bytes"), "work": []byte("tar bytes")}
		f := &fakeDocker{
			create: func(*container.Config, *container.HostConfig) (container.CreateResponse, error) {
				return container.CreateResponse{ID: "c1"}, nil
			},
			start: func(string) error { return nil },
			serve: fakeControllerWith([]string{featureSnapInline}, func(req ctlRequest) []ctlFrame {
				mu.Lock()
				ops = append(ops, req.Op)
				mu.Unlock()
				if req.Op != "snapshot" {
					return []ctlFrame{{T: "done", Status: "ok"}}
				}
				asked = req.InlineMax
				done := ctlFrame{T: "done", Parts: map[string]ctlSnapPart{}, Inline: map[string][]byte{}}
				for p, b := range parts {
					h := sha256.Sum256(b)
					done.Parts[p] = ctlSnapPart{Size: int64(len(b)), SHA256: hex.EncodeToString(h[:])}
					done.Inline[p] = b
				}
				if forged {
					done.Inline["ns"] = []byte("Namespace bytes")
				}
				return []ctlFrame{done}
			}),
		}
		e := newFakeEngine(DefaultConfig(), f)
		info, _, err := e.OpenSession(context.Background(), core.Request{Owner: "o"})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		_, err = e.SnapshotSession(context.Background(), "o", info.ID, 1<<20, func(part string, _ int64, chunk []byte) error {
			got[part] += string(chunk)
			return nil
		})
		_ = e.CloseSession("o", info.ID)
		e.Settle()
		mu.Lock()
		seen := strings.Join(ops, ",")
		mu.Unlock()
		switch {
		case forged && err == nil:
			t.Fatal("a part that does not match its digest was taken")
		case !forged && (err != nil || got["ns"] != "namespace bytes" || got["work"] != "tar bytes"):
			t.Fatalf("parts %q: %v", got, err)
		case asked != snapInline:
			t.Fatalf("inline_max %d, want %d", asked, snapInline)
		case strings.Contains(seen, "snapread") || strings.Contains(seen, "snapclear"):
			t.Fatalf("round trips after an inline snapshot: %s", seen)
		}
	}
}
