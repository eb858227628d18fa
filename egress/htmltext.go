package egress

import (
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skipped are elements whose content is not readable text.
var skipped = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true, atom.Embed: true,
	atom.Canvas: true, atom.Select: true, atom.Button: true, atom.Input: true, atom.Textarea: true,
}

// blocks are elements that start and end a line of text.
var blocks = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Details: true, atom.Dd: true, atom.Div: true, atom.Dl: true, atom.Dt: true,
	atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true, atom.Footer: true,
	atom.Form: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true,
	atom.H6: true, atom.Header: true, atom.Hr: true, atom.Li: true, atom.Main: true, atom.Nav: true,
	atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true, atom.Summary: true,
	atom.Table: true, atom.Tr: true, atom.Ul: true, atom.Caption: true,
}

// headings are the heading levels, written as Markdown-style prefixes.
var headings = map[atom.Atom]string{
	atom.H1: "# ", atom.H2: "## ", atom.H3: "### ", atom.H4: "#### ", atom.H5: "##### ", atom.H6: "###### ",
}

// htmlText parses an HTML document with golang.org/x/net/html and returns
// its title and its readable text: scripts, styles, forms and embedded
// objects dropped, whitespace collapsed except in <pre>, one line per
// block, list items as "- ", headings as "# ", table cells separated by
// " | ".
func htmlText(r io.Reader) (title, text string, err error) {
	doc, err := html.Parse(r)
	if err != nil {
		return "", "", err
	}
	w := &textWriter{newlines: 2}
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.DataAtom == atom.Title {
			t := &textWriter{newlines: 2}
			t.children(n, false)
			title = strings.TrimSpace(t.b.String())
			break
		}
	}
	w.children(doc, false)
	return title, tidyLines(w.b.String()), nil
}

// textWriter accumulates readable text.
type textWriter struct {
	b        strings.Builder
	space    bool // a space is due before the next word
	newlines int  // newlines at the end of b (2 at the start: no leading break)
}

// node writes n and its children.
func (w *textWriter) node(n *html.Node, pre bool) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data, pre)
	case html.ElementNode:
		if skipped[n.DataAtom] {
			return
		}
		switch n.DataAtom {
		case atom.Br:
			w.breakLine(1)
			return
		case atom.Td, atom.Th:
			if n.PrevSibling != nil {
				w.raw(" | ")
			}
		case atom.Img:
			if alt := attr(n, "alt"); alt != "" {
				w.text("["+alt+"]", false)
			}
			return
		}
		if blocks[n.DataAtom] {
			w.breakLine(blockBreak(n.DataAtom))
		}
		if h := headings[n.DataAtom]; h != "" {
			w.raw(h)
		} else if n.DataAtom == atom.Li {
			w.raw("- ")
		}
		w.children(n, pre || n.DataAtom == atom.Pre)
		if blocks[n.DataAtom] {
			w.breakLine(blockBreak(n.DataAtom))
		}
	case html.DocumentNode:
		w.children(n, pre)
	}
}

// children writes n's children.
func (w *textWriter) children(n *html.Node, pre bool) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c, pre)
	}
}

// blockBreak is the number of newlines around a block: a blank line
// around paragraphs, headings and the like, one newline around list items
// and table rows.
func blockBreak(a atom.Atom) int {
	switch a {
	case atom.Li, atom.Tr, atom.Dt, atom.Dd, atom.Div:
		return 1
	}
	return 2
}

// text writes a text run: verbatim in <pre>, else with whitespace runs
// collapsed to one space.
func (w *textWriter) text(s string, pre bool) {
	if pre {
		if s != "" {
			w.b.WriteString(s)
			w.newlines = len(s) - len(strings.TrimRight(s, "\n"))
			w.space = false
		}
		return
	}
	words := strings.Fields(s)
	if len(words) == 0 {
		w.space = w.space || s != ""
		return
	}
	w.space = w.space || isSpace(s[0])
	for i, word := range words {
		if (i > 0 || w.space) && w.newlines == 0 {
			w.b.WriteByte(' ')
		}
		w.b.WriteString(word)
		w.newlines = 0
	}
	w.space = isSpace(s[len(s)-1])
}

// raw writes a marker ("- ", "# ", " | ") as is.
func (w *textWriter) raw(s string) {
	w.b.WriteString(s)
	w.newlines, w.space = 0, false
}

// breakLine ends the line with at least n newlines in all.
func (w *textWriter) breakLine(n int) {
	for w.newlines < n {
		w.b.WriteByte('\n')
		w.newlines++
	}
	w.space = false
}

// tidyLines trims each line's trailing spaces and the text's ends.
func tidyLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// attr returns n's attribute key, or "".
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
