package main

import (
	"fmt"
	"io"
	"strings"
)

// table is one markdown table with a title and optional notes below it.
type table struct {
	title string
	head  []string
	rows  [][]string
	notes []string
}

// row appends a row.
func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

// note appends a bullet under the table.
func (t *table) note(format string, a ...any) { t.notes = append(t.notes, fmt.Sprintf(format, a...)) }

// markdown renders the table.
func (t *table) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", t.title)
	b.WriteString("| " + strings.Join(t.head, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat("---|", len(t.head)) + "\n")
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	if len(t.notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.notes {
			b.WriteString("- " + n + "\n")
		}
	}
	b.WriteString("\n")
	return b.String()
}

// report prints tables as they are finished and keeps the whole text.
type report struct {
	w       io.Writer
	buf     strings.Builder
	figs    []*figure // headline numbers (hog.go)
	hogPass bool      // tables and figures now come from the pass beside the CPU hog
}

// newReport returns a report printing to w.
func newReport(w io.Writer) *report {
	r := &report{w: w}
	r.line("# Airlock bench\n")
	return r
}

// table prints and keeps a table.
func (r *report) table(t *table) {
	if r.hogPass {
		t.title += " — with a two-core CPU hog"
	}
	r.line(t.markdown())
}

// line prints and keeps raw markdown.
func (r *report) line(s string) {
	fmt.Fprintln(r.w, s)
	r.buf.WriteString(s + "\n")
}

// String returns everything printed so far.
func (r *report) String() string { return r.buf.String() }
