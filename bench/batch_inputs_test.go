package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBatchItemsCheckRealWC generates items, runs the real `wc -l *.txt`
// in each and checks that check accepts its output and refuses it with one
// count changed or a line missing.
func TestBatchItemsCheckRealWC(t *testing.T) {
	items, err := makeBatchItems(t.TempDir(), 40)
	if err != nil {
		t.Fatal(err)
	}
	multi := 0
	for _, it := range items {
		st, err := os.Stat(it.dir)
		if err != nil || st.Mode().Perm() != 0o755 {
			t.Fatalf("%s: mode %v, err %v; want 0755", it.id, st.Mode(), err)
		}
		cmd := exec.Command("bash", "-c", "wc -l *.txt")
		cmd.Dir = it.dir
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: wc: %v", it.id, err)
		}
		if err := it.check(string(out)); err != nil {
			t.Fatalf("real wc output refused: %v", err)
		}
		if len(it.lines) > 1 {
			multi++
		}
		rows := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if err := it.check(strings.Join(rows[1:], "\n")); err == nil {
			t.Fatalf("%s: output without its first line accepted", it.id)
		}
		f := strings.Fields(rows[0])
		bad := "99999 " + f[1] + "\n" + strings.Join(rows[1:], "\n")
		if err := it.check(bad); err == nil {
			t.Fatalf("%s: wrong count accepted: %q", it.id, bad)
		}
	}
	if multi == 0 {
		t.Fatal("no item with several files: the total line is never checked")
	}
}

// TestSampleItemsSpread picks distinct items across the whole range.
func TestSampleItemsSpread(t *testing.T) {
	items := make([]batchItem, 1000)
	for i := range items {
		items[i].id = string(rune(i))
	}
	s := sampleItems(items, 50)
	if len(s) != 50 || s[0].id != items[0].id || s[49].id != items[980].id {
		t.Fatalf("sample of 50: len %d first %q last %q", len(s), s[0].id, s[49].id)
	}
	if got := sampleItems(items[:10], 50); len(got) != 10 {
		t.Fatalf("sample larger than the items: %d, want 10", len(got))
	}
}
