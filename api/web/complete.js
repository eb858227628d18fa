// Airlock web UI, completion and signature help in code cells (issue 32):
// Tab after a name (or Ctrl-Space anywhere) asks the session's kernel
// (Jedi, POST /v1/sessions/{id}/complete) and shows its matches in a list;
// typing "(" after a callable shows its signature and docstring. Python
// cells only, and only while the session is idle (a question waits for a
// running cell). Uses $, api, el and state of app.js, loaded after this
// file; they are only called once the page has started.
"use strict";

const COMPLETE_WAIT_MS = 15000; // the first completion imports Jedi in the kernel
const COMPLETE_SHOWN = 200; // matches listed at once

const completion = { box: null, sig: null, keymap: null, cm: null, seq: 0, narrow: null };

// codePoints converts a UTF-16 offset of text to code points (the API's unit).
function codePoints(text, utf16) {
  return Array.from(text.slice(0, utf16)).length;
}

// utf16At converts a code point offset of text back to UTF-16 units.
function utf16At(text, cp) {
  return Array.from(text).slice(0, cp).join("").length;
}

// completionSession is the session to ask, or null when there is none or a
// cell is running in it (the kernel answers between calls only).
function completionSession(cm) {
  const node = cm.getWrapperElement().closest(".cell");
  if (!state.session || state.running || !node || node.dataset.lang !== "python") return null;
  return state.session;
}

// askKernel asks for completions at the cursor; null when the editor
// changed meanwhile, the question failed or took too long.
async function askKernel(cm) {
  const s = completionSession(cm);
  if (!s) return null;
  const text = cm.getValue();
  const at = cm.indexFromPos(cm.getCursor());
  const gen = cm.changeGeneration();
  const seq = ++completion.seq;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), COMPLETE_WAIT_MS);
  try {
    const r = await api("POST", `/v1/sessions/${s.id}/complete`, { json: { code: text, cursor_pos: codePoints(text, at) }, signal: ctl.signal });
    if (seq !== completion.seq || gen !== cm.changeGeneration()) return null;
    r.from = cm.posFromIndex(utf16At(text, r.cursor_start));
    r.to = cm.posFromIndex(utf16At(text, r.cursor_end));
    return r;
  } catch (e) {
    return null; // completion is a help: a failure leaves the editor as it was
  } finally {
    clearTimeout(timer);
  }
}

// wordBefore reports whether the cursor follows a name or a dot (Tab then
// completes rather than indents).
function wordBefore(cm) {
  const c = cm.getCursor();
  if (cm.somethingSelected() || c.ch === 0) return false;
  return /[\w.]$/.test(cm.getLine(c.line).slice(0, c.ch));
}

// completeAt asks and shows the matches: one is inserted at once, more are
// listed; none leaves the editor alone.
async function completeAt(cm) {
  closeCompletion();
  const r = await askKernel(cm);
  if (!r || !r.matches.length) return;
  if (r.matches.length === 1) {
    cm.replaceRange(r.matches[0], r.from, r.to, "+complete");
    return;
  }
  showCompletion(cm, r);
}

// showCompletion lists r.matches under the cursor; Up/Down choose, Enter or
// Tab insert, Escape closes; typing on narrows the list to the names that
// start with what was typed since.
function showCompletion(cm, r) {
  const box = el("ul", "completions");
  box.id = "completions";
  box.setAttribute("role", "listbox");
  box.setAttribute("aria-label", "Completions");
  const pos = cm.cursorCoords(r.from, "page");
  box.style.top = pos.bottom + "px";
  document.body.append(box);
  completion.box = box;
  completion.cm = cm;
  let sel = 0;
  const select = (i) => {
    const items = box.children;
    if (!items.length) return;
    sel = (i + items.length) % items.length;
    for (const [j, li] of Array.from(items).entries()) li.setAttribute("aria-selected", String(j === sel));
    box.setAttribute("aria-activedescendant", items[sel].id);
    cm.getInputField().setAttribute("aria-activedescendant", items[sel].id);
    items[sel].scrollIntoView({ block: "nearest" });
  };
  const pick = (i) => {
    const m = box.children[i].textContent;
    const to = cm.getCursor(); // what was typed since counts as part of the name
    closeCompletion();
    cm.replaceRange(m, r.from, to, "+complete");
    cm.focus();
  };
  // narrow lists the matches starting with what is typed since r.from;
  // none closes the list.
  completion.narrow = () => {
    const to = cm.getCursor();
    if (to.line !== r.from.line || to.ch < r.from.ch) { closeCompletion(); return; }
    const typed = cm.getRange(r.from, to).toLowerCase(); // Jedi matches regardless of case
    const shown = r.matches.filter((m) => m.toLowerCase().startsWith(typed)).slice(0, COMPLETE_SHOWN);
    if (!shown.length) { closeCompletion(); return; }
    box.replaceChildren(...shown.map((m, i) => {
      const li = el("li", null, m);
      li.id = "completion-" + i;
      li.setAttribute("role", "option");
      li.addEventListener("mousedown", (ev) => { ev.preventDefault(); pick(i); });
      return li;
    }));
    select(0);
    place(box, pos.left);
  };
  completion.keymap = {
    Up: () => select(sel - 1),
    Down: () => select(sel + 1),
    PageUp: () => select(Math.max(0, sel - 8)),
    PageDown: () => select(Math.min(box.children.length - 1, sel + 8)),
    Enter: () => pick(sel),
    Tab: () => pick(sel),
    Esc: () => closeCompletion(),
  };
  cm.addKeyMap(completion.keymap);
  cm.getInputField().setAttribute("aria-controls", box.id);
  completion.narrow();
}

// place puts a popup at left (page px), moved left as far as it must to
// stay inside the viewport (the page never scrolls sideways).
function place(box, left) {
  const room = document.documentElement.clientWidth - box.offsetWidth - 4;
  box.style.left = Math.max(0, Math.min(left, room)) + "px";
}

// closeCompletion removes the list (and its keys) if one is open.
function closeCompletion() {
  if (!completion.box) return;
  completion.box.remove();
  completion.box = null;
  if (completion.cm) {
    completion.cm.removeKeyMap(completion.keymap);
    completion.cm.getInputField().removeAttribute("aria-activedescendant");
    completion.cm.getInputField().removeAttribute("aria-controls");
  }
  completion.cm = null;
}

// showSignature asks for the signature of the call the cursor just opened
// and shows it above the line.
async function showSignature(cm) {
  const r = await askKernel(cm);
  closeSignature();
  if (!r || !r.signatures || !r.signatures.length) return;
  const box = el("div", "signature-help");
  box.setAttribute("role", "status");
  const sig = r.signatures[0];
  box.append(el("code", "signature-label", sig.label));
  if (sig.doc) box.append(el("p", "signature-doc", sig.doc.split("\n\n")[0]));
  const pos = cm.cursorCoords(true, "page");
  document.body.append(box);
  place(box, pos.left);
  box.style.top = Math.max(0, pos.top - box.offsetHeight - 4) + "px";
  completion.sig = box;
}

function closeSignature() {
  if (completion.sig) completion.sig.remove();
  completion.sig = null;
}

// openParens reports whether the cursor is inside an unclosed "(" of its line.
function openParens(cm) {
  const c = cm.getCursor();
  let depth = 0;
  for (const ch of cm.getLine(c.line).slice(0, c.ch)) {
    if (ch === "(") depth++;
    else if (ch === ")" && depth > 0) depth--;
  }
  return depth > 0;
}

// completionKeys are the editor keys of completion, merged into a cell's.
function completionKeys(indent) {
  return {
    Tab: (cm) => {
      if (wordBefore(cm) && completionSession(cm)) completeAt(cm);
      else indent(cm);
    },
    "Ctrl-Space": (cm) => { completeAt(cm); },
  };
}

// attachCompletion wires signature help and the closing of popups to cm.
function attachCompletion(cm) {
  cm.on("inputRead", (c, change) => {
    const typed = change.text.join("");
    if (typed.endsWith("(") && completionSession(c)) showSignature(c);
    else if (typed.endsWith(")")) closeSignature();
  });
  cm.on("cursorActivity", (c) => {
    if (completion.sig && !openParens(c)) closeSignature();
    if (completion.box && completion.cm === c) completion.narrow();
  });
  cm.on("blur", () => { closeCompletion(); closeSignature(); });
  cm.on("keydown", (c, ev) => { if (ev.key === "Escape") closeSignature(); });
}
