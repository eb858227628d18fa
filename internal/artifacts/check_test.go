package artifacts

import (
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

func TestCheck(t *testing.T) {
	png := core.Artifact{Name: "fig.png", MIME: "text/html", Size: 999, SHA256: "forged", Data: []byte("\x89PNG")}
	in := []core.Artifact{png}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\x00b", "a\nb", strings.Repeat("n", 300), "a\\b", "dir/"} {
		in = append(in, core.Artifact{Name: bad, Data: []byte("x")})
	}
	out, warns := Check(in, 100, 1<<20)
	if len(out) != 1 || len(warns) != len(in)-1 {
		t.Fatalf("kept %d, %d warnings: %q", len(out), len(warns), warns)
	}
	a := out[0]
	if a.MIME != "image/png" || a.Size != 4 || a.SHA256 == "forged" || len(a.SHA256) != 64 {
		t.Fatalf("metadata not recomputed: %+v", a)
	}
	many := make([]core.Artifact, 50)
	for i := range many {
		many[i] = core.Artifact{Name: fmt.Sprint("f", i, ".txt"), Data: []byte("abc")}
	}
	out, warns = Check(many, 10, 1<<20)
	if len(out) != 10 || len(warns) != 1 || !strings.Contains(warns[0], "limit of 10") {
		t.Fatalf("count: %d %q", len(out), warns)
	}
	out, _ = Check(many, 50, 7)
	if len(out) != 2 {
		t.Fatalf("call bytes: kept %d", len(out))
	}
}
