package main

import (
	"io"
	"testing"
	"time"
)

// TestFiguresTableQuietMissing: a figure recorded only in the hog pass (its
// section failed in the quiet pass) shows "—" as its quiet value and its
// slowdown, never a quiet 0 or a 0× ratio; a figure of both passes shows
// both and their ratio (calls/s: quiet over hog).
func TestFiguresTableQuietMissing(t *testing.T) {
	r := newReport(io.Discard)
	r.figureMS("both", 10*time.Millisecond)
	r.figure("rate", "calls/s", 100)
	r.hogPass = true
	r.figureMS("both", 25*time.Millisecond)
	r.figure("rate", "calls/s", 40)
	r.figureMS("hog only", 600*time.Millisecond)
	r.figure("hog-only rate", "calls/s", 2)
	rows := map[string][]string{}
	for _, row := range r.figuresTable().rows {
		rows[row[0]] = row
	}
	want := map[string][]string{
		"both":          {"both", "10.0 ms", "25.0 ms", "2.50×"},
		"rate":          {"rate", "100.0 calls/s", "40.0 calls/s", "2.50×"},
		"hog only":      {"hog only", "—", "600.0 ms", "—"},
		"hog-only rate": {"hog-only rate", "—", "2.0 calls/s", "—"},
	}
	for name, w := range want {
		got := rows[name]
		if len(got) != len(w) {
			t.Errorf("%s: row %q, want %q", name, got, w)
			continue
		}
		for i := range w {
			if got[i] != w[i] {
				t.Errorf("%s: row %q, want %q", name, got, w)
				break
			}
		}
	}
}
