package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// batchItem is one generated input folder and the line count of each of
// its files, the truth every way of running it is checked against.
type batchItem struct {
	id    string         // folder name under the root, also the custom_id
	dir   string         // absolute path
	lines map[string]int // file name → lines
}

// wcCommand counts the lines of an item's files; run with /workspace
// holding the item.
const wcCommand = "cd /workspace && wc -l *.txt"

// makeBatchItems writes n folders item-0001… under root (emptied first),
// each with one to three small .txt files of known line counts (some
// empty), readable by all as the sandbox's input check wants. The content
// is the same for the same n.
func makeBatchItems(root string, n int) ([]batchItem, error) {
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("clear %s: %w", root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(14, uint64(n)))
	items := make([]batchItem, n)
	for i := range items {
		it := batchItem{id: fmt.Sprintf("item-%04d", i+1), lines: map[string]int{}}
		it.dir = filepath.Join(root, it.id)
		if err := os.Mkdir(it.dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chmod(it.dir, 0o755); err != nil {
			return nil, err
		}
		files := 1 + rng.IntN(3)
		for f := 0; f < files; f++ {
			name := string(rune('a'+f)) + ".txt"
			count := rng.IntN(300)
			if rng.IntN(20) == 0 {
				count = 0
			}
			var b strings.Builder
			for l := 0; l < count; l++ {
				fmt.Fprintf(&b, "line %d of %s in %s %x\n", l+1, name, it.id, rng.Uint32())
			}
			p := filepath.Join(it.dir, name)
			if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
				return nil, err
			}
			if err := os.Chmod(p, 0o644); err != nil {
				return nil, err
			}
			it.lines[name] = count
		}
		items[i] = it
	}
	return items, nil
}

// check compares `wc -l *.txt` output with the item's truth: one line per
// file in name order with its count, and a total line when there are
// several files.
func (it batchItem) check(stdout string) error {
	names := make([]string, 0, len(it.lines))
	sum := 0
	for n, c := range it.lines {
		names = append(names, n)
		sum += c
	}
	sort.Strings(names)
	want := len(names)
	if want > 1 {
		want++
	}
	rows := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(rows) != want {
		return fmt.Errorf("%s: %d output lines, want %d: %q", it.id, len(rows), want, clip(stdout))
	}
	for i, r := range rows {
		f := strings.Fields(r)
		if len(f) != 2 {
			return fmt.Errorf("%s: output line %q is not COUNT NAME", it.id, r)
		}
		got, err := strconv.Atoi(f[0])
		if err != nil {
			return fmt.Errorf("%s: output line %q: %v", it.id, r, err)
		}
		name, count := "total", sum
		if i < len(names) {
			name, count = names[i], it.lines[names[i]]
		}
		if f[1] != name || got != count {
			return fmt.Errorf("%s: output line %q, want %d %s", it.id, r, count, name)
		}
	}
	return nil
}

// clip cuts s for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// sampleItems picks k items spread evenly over items (all when k ≥ len).
func sampleItems(items []batchItem, k int) []batchItem {
	if k >= len(items) {
		return items
	}
	out := make([]batchItem, k)
	for i := range out {
		out[i] = items[i*len(items)/k]
	}
	return out
}
