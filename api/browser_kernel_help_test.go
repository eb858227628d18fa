package api

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/airlock-dev/airlock/internal/browsertest"
)

// TestBrowserCompletionUI drives completion, signature help and the
// variable panel against the fake kernel (fakes_introspect_test.go): `a`
// + Tab lists several names, typing `r` narrows the list, Down and Enter
// choose one, a letter no match has closes it, `al` + Tab inserts the
// only match, `(` shows area's signature, `)` closes it;
// Tab at the start of a line still indents; the variable panel lists the
// session's variables after a cell. The screenshot goes to
// $AIRLOCK_SCREENSHOTS/ui-completion.png.
func TestBrowserCompletionUI(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	w := openWorkbench(t, 1200, 900, nil)
	w.Do("notebook", chromedp.Click(chromedp.ID("tab-notebook")))
	w.setCell(0, "x = 1")
	w.Do("run", chromedp.Click(chromedp.CSS(".cell .run")))
	w.Poll("ran", `document.querySelector('.cell').dataset.status === 'ok'`)
	w.Poll("variables listed", `document.querySelectorAll('#vars tbody tr').length === 2`)
	if row := w.eval(`[...document.querySelectorAll('#vars tr[data-name="df"] td')].map((td) => td.textContent).join('|')`); row != "df|DataFrame|(5, 1)|172 B" {
		t.Errorf("df row %q", row)
	}

	w.Do("add a cell", chromedp.Click(chromedp.ID("add-cell")))
	ta := ".cell:nth-child(2) .CodeMirror textarea"
	value := `document.querySelectorAll('.cell .CodeMirror')[1].CodeMirror.getValue()`
	w.Do("Tab at the line start indents", chromedp.Click(chromedp.CSS(".cell:nth-child(2) .CodeMirror-lines")), chromedp.SendKeys(chromedp.CSS(ta), kb.Tab))
	if v := w.eval(value); v != "    " {
		t.Errorf("Tab at the start of a line gave %q, want an indent", v)
	}
	w.eval(`document.querySelectorAll('.cell .CodeMirror')[1].CodeMirror.setValue(''), ''`)
	w.Do("a, Tab", chromedp.SendKeys(chromedp.CSS(ta), "a"), chromedp.SendKeys(chromedp.CSS(ta), kb.Tab))
	w.Poll("list", `document.querySelectorAll('#completions li').length === 4`)
	if got := w.eval(`[...document.querySelectorAll('#completions li')].map((li) => li.textContent + (li.getAttribute('aria-selected') === 'true' ? '*' : '')).join(' ')`); got != "abs* all area arena" {
		t.Errorf("completions %q", got)
	}
	if shots := os.Getenv("AIRLOCK_SCREENSHOTS"); shots != "" {
		png, err := chromedp.Run(w.Ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, "ui-completion.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		_ = browsertest.ArtifactDir(t)
	}
	rawKey := func(key string, vk int64) {
		t.Helper()
		// As a keyboard sends it (chromedp.KeyEvent adds a separate "char"
		// event that no page can cancel).
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := chromedp.Call(w.Ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: typ, Key: key, Code: key,
				WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk}); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
		}
	}
	w.Do("type r", chromedp.SendKeys(chromedp.CSS(ta), "r"))
	w.Poll("narrowed", `[...document.querySelectorAll('#completions li')].map((li) => li.textContent + (li.getAttribute('aria-selected') === 'true' ? '*' : '')).join(' ') === 'area* arena'`)
	rawKey("ArrowDown", 40)
	rawKey("Enter", 13)
	if _, err := chromedp.Run(w.Ctx, chromedp.Poll[bool](value+` === 'arena' && !document.getElementById('completions')`, chromedp.WithPollingTimeout(5e9))); err != nil {
		t.Fatalf("arena not chosen: value %q, list %q, focus %q", w.eval(value), w.eval(`[...document.querySelectorAll('#completions li')].map((li) => li.textContent + (li.getAttribute('aria-selected') === 'true' ? '*' : '')).join(' ')`), w.eval(`document.activeElement.tagName`))
	}

	w.eval(`document.querySelectorAll('.cell .CodeMirror')[1].CodeMirror.setValue(''), ''`)
	// Typing what no match starts with closes the list.
	w.eval(`document.querySelectorAll('.cell .CodeMirror')[1].CodeMirror.setValue(''), ''`)
	w.Do("a, Tab, then x", chromedp.SendKeys(chromedp.CSS(ta), "a"), chromedp.SendKeys(chromedp.CSS(ta), kb.Tab))
	w.Poll("list again", `document.querySelectorAll('#completions li').length === 4`)
	w.Do("x", chromedp.SendKeys(chromedp.CSS(ta), "x"))
	w.Poll("closed", `!document.getElementById('completions') && `+value+` === 'ax'`)
	w.eval(`document.querySelectorAll('.cell .CodeMirror')[1].CodeMirror.setValue(''), ''`)
	w.Do("al, Tab", chromedp.SendKeys(chromedp.CSS(ta), "al"), chromedp.SendKeys(chromedp.CSS(ta), kb.Tab))
	w.Poll("the single match inserted", value+` === 'all' && !document.getElementById('completions')`)
	w.eval(`(() => { const cm = document.querySelectorAll('.cell .CodeMirror')[1].CodeMirror; cm.setValue('r = area'); cm.setCursor(0, 8); cm.focus(); })(), ''`)
	w.Do("(", chromedp.SendKeys(chromedp.CSS(ta), "("))
	w.Poll("signature", `!!document.querySelector('.signature-help')`)
	if got := w.eval(`document.querySelector('.signature-help').textContent`); !strings.HasPrefix(got, "area(radius)The area of a circle.") {
		t.Errorf("signature help %q", got)
	}
	w.Do(")", chromedp.SendKeys(chromedp.CSS(ta), "2)"))
	w.Poll("signature closed", `!document.querySelector('.signature-help')`)
	// On a phone the list stays inside the page.
	w.Do("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	w.eval(`(() => { const cm = document.querySelectorAll('.cell .CodeMirror')[1].CodeMirror; cm.setValue('` + strings.Repeat(" ", 60) + `a'); cm.setCursor(0, 61); cm.focus(); })(), ''`)
	w.Do("Tab on a phone", chromedp.SendKeys(chromedp.CSS(ta), kb.Tab))
	w.Poll("list on the phone", `document.querySelectorAll('#completions li').length === 4`)
	if over, _ := strconv.ParseFloat(w.eval(`String(document.getElementById('completions').getBoundingClientRect().right - document.documentElement.clientWidth)`), 64); over > 0 {
		t.Errorf("the completion list ends %v px past a 390 px page", over)
	}
	if over := w.eval(overflowJS); over != "0" {
		t.Errorf("with the list open the 390 px page is %s px too wide", over)
	}
	if errs := w.JSErrors(); len(errs) > 0 {
		t.Errorf("JavaScript errors: %v", errs)
	}
}
