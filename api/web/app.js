// Airlock web UI: plain JavaScript, no build step. Talks to the /v1 API
// with fetch (so the API key can travel in the Authorization header, which
// <img> and EventSource cannot send); artifacts become blob: URLs.
// Libraries (vendored from Debian by scripts/vendor-js.sh): CodeMirror,
// marked, DOMPurify, highlight.js.
"use strict";

const KEY_STORAGE = "airlock.key";
const $ = (id) => document.getElementById(id);

const state = {
  info: null,
  key: localStorage.getItem(KEY_STORAGE) || "",
  session: null, // the notebook's session {id}
  assistSession: null, // the assistant's own session, unless shared
  tools: null,
  run: null, // {id, lastSeq, done, abort, turn}
  conv: [], // [{id, goal}] runs of this conversation, oldest first
  running: null, // the notebook cell whose call is running
  queue: [], // cells waiting to run
  online: true,
  nb: { version: 0, server: true, dirty: false, timer: null, edits: 0, loads: 0 },
};

// ---------- HTTP ----------

class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.status = status;
    this.code = e.code || "http_" + status;
    this.details = e.details || {};
  }
}

function authHeaders(extra) {
  const h = Object.assign({}, extra || {});
  if (state.key) h["Authorization"] = "Bearer " + state.key;
  return h;
}

// api calls the JSON API; on 401 it asks for a key and retries once. A
// network failure (server gone) raises the offline banner.
async function api(method, path, opts = {}, retried = false) {
  const headers = authHeaders(opts.headers);
  let body = opts.body;
  if (opts.json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.json);
  }
  let res;
  try {
    res = await fetch(path, { method, headers, body, signal: opts.signal });
  } catch (e) {
    if (!(opts.signal && opts.signal.aborted)) goneOffline();
    throw e;
  }
  if (res.status === 401 && !retried) {
    if (await askKey()) return api(method, path, opts, true);
  }
  if (opts.raw) {
    if (!res.ok) throw new APIError(res.status, await res.json().catch(() => null));
    return res;
  }
  if (res.status === 204) return null;
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}

function showAlert(msg) {
  const a = $("alert");
  a.textContent = msg;
  a.hidden = !msg;
}

function explain(err) {
  if (err instanceof APIError) {
    let m = `${err.message} (${err.code})`;
    if (err.status === 429) m += " — try again in a moment.";
    return m;
  }
  if (err instanceof TypeError) return "the server cannot be reached";
  return String(err && err.message ? err.message : err);
}

// ---------- offline banner and reconnect ----------

let probing = null;
function goneOffline() {
  if (!state.online) return;
  state.online = false;
  $("offline-banner").hidden = false;
  $("offline-text").textContent = "Retrying every 2 seconds…";
  document.body.dataset.online = "false";
  if (!probing) probing = setInterval(probe, 2000);
}

async function probe() {
  try {
    const r = await fetch("/healthz", { cache: "no-store" });
    if (!r.ok && r.status >= 500) return;
  } catch {
    return;
  }
  clearInterval(probing);
  probing = null;
  state.online = true;
  document.body.dataset.online = "true";
  $("offline-text").textContent = "Reconnected.";
  setTimeout(() => { if (state.online) $("offline-banner").hidden = true; }, 1500);
  if (state.run && !state.run.done && !state.run.streaming) streamRun(state.run).catch((e) => showAlert(explain(e)));
  if (state.session) refreshFiles();
}

// ---------- API key ----------

let keyWaiters = [];
function askKey() {
  const dlg = $("key-dialog");
  if (!dlg.open) {
    $("key-input").value = "";
    dlg.showModal();
    $("key-input").focus();
  }
  return new Promise((resolve) => keyWaiters.push(resolve));
}
function resolveKey(ok) {
  const w = keyWaiters;
  keyWaiters = [];
  w.forEach((f) => f(ok));
}

function initKeyDialog() {
  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = $("key-input").value.trim();
    if (!v) return;
    state.key = v;
    localStorage.setItem(KEY_STORAGE, v);
    $("key-dialog").close();
    resolveKey(true);
    showAlert("");
  });
  $("key-cancel").addEventListener("click", () => {
    $("key-dialog").close();
    resolveKey(false);
  });
  $("key-dialog").addEventListener("cancel", () => resolveKey(false));
  $("key-button").addEventListener("click", async () => {
    if (await askKey()) loadTools().catch((e) => showAlert(explain(e)));
  });
}

// ---------- tabs ----------

function currentView() {
  const t = document.querySelector('[role=tab][aria-selected="true"]');
  return t ? t.id.replace("tab-", "") : "assistant";
}

function initTabs() {
  const tabs = [$("tab-assistant"), $("tab-notebook"), $("tab-batches")];
  const select = (t, focus) => {
    tabs.forEach((x) => {
      const on = x === t;
      x.setAttribute("aria-selected", String(on));
      x.tabIndex = on ? 0 : -1;
      $(x.getAttribute("aria-controls")).hidden = !on;
    });
    if (focus) t.focus();
    const v = t.id.replace("tab-", "");
    $("files-panel").hidden = v === "batches";
    if (v === "notebook") cellsRefresh();
    if (v === "batches") showBatches();
    else hideBatches();
    updateURL();
    refreshFiles();
  };
  tabs.forEach((t, i) => {
    t.addEventListener("click", () => select(t, true));
    t.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
        ev.preventDefault();
        select(tabs[(i + (ev.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length], true);
      }
    });
  });
  state.selectTab = (name) => select($("tab-" + name), false);
}

// ---------- URL ----------

function updateURL() {
  const p = new URLSearchParams();
  if (state.session) p.set("session", state.session.id);
  if (state.run) p.set("run", state.run.id);
  const v = currentView();
  if (v !== "assistant") p.set("view", v);
  if (v === "batches" && batchUI.open) p.set("batch", batchUI.open);
  const q = p.toString();
  history.replaceState(null, "", location.pathname + (q ? "?" + q : ""));
}

// ---------- tools and sessions ----------

// loadTools finds the Python and shell tools and the argument holding code.
async function loadTools() {
  const data = await api("GET", "/v1/tools");
  const pick = (word) => {
    for (const t of data.tools || []) {
      const f = t.function || {};
      if (!f.name || !f.name.includes(word)) continue;
      const p = f.parameters || {};
      const props = p.properties || {};
      const req = p.required || Object.keys(props);
      const arg = req.find((n) => (props[n] || {}).type === "string") || (word === "shell" ? "command" : "code");
      return { name: f.name, arg };
    }
    return null;
  };
  state.tools = { python: pick("python"), shell: pick("shell") };
  return state.tools;
}

function setSession(s, fresh) {
  const changed = (state.session && state.session.id) !== (s && s.id);
  state.session = s;
  $("session-label").textContent = s ? `Session ${s.id}` : "No session";
  $("session-label").title = s ? s.id : "";
  $("session-close").disabled = !s;
  if (s && s.timeout_seconds) state.sessionTimeout = s.timeout_seconds;
  else if (changed) state.sessionTimeout = 0;
  showTimeouts();
  if (changed) {
    state.nb.version = 0;
    state.nb.base = null;
    state.nb.server = true;
  }
  updateURL();
  if (fresh) showNoFiles(s);
  else refreshFiles();
  if (changed && typeof refreshVariables === "function") refreshVariables();
}

// showNoFiles shows the empty work folder of a session just opened.
function showNoFiles(s) {
  if (viewSession() !== s) return;
  filesToken++;
  $("files-session").textContent = `Work folder of session ${s.id}`;
  $("uploaded").replaceChildren(el("li", "muted", "The work folder is empty."));
}

async function ensureSession() {
  if (state.session) return state.session;
  const env = $("session-env").value;
  const s = await api("POST", "/v1/sessions", { json: env ? { environment: env } : {} });
  setSession(s, true);
  return s;
}

// assistantSession is the session a run uses: the notebook's when the
// person opted in, else the assistant's own (the notebook's variables are
// left alone).
async function assistantSession() {
  if ($("share-session").checked) return ensureSession();
  if (state.assistSession) return state.assistSession;
  const s = await api("POST", "/v1/sessions", { json: {} });
  state.assistSession = s;
  saveConv();
  showNoFiles(s);
  return s;
}

// viewSession is the session the files panel shows.
function viewSession() {
  if (currentView() === "assistant" && !$("share-session").checked) return state.assistSession;
  return state.session;
}

// sessionGone drops a session the server no longer knows.
function sessionGone(err, s) {
  if (err instanceof APIError && (err.code === "not_found" || err.code === "session_lost")) {
    if (s && state.assistSession && s.id === state.assistSession.id) {
      state.assistSession = null;
      saveConv();
    } else {
      setSession(null);
    }
    showAlert("The session ended (its state is gone); a new one opens on the next action.");
    return true;
  }
  return false;
}

function initSessionBar() {
  $("session-new").addEventListener("click", async () => {
    try {
      setSession(null);
      resetCells();
      await ensureSession();
      showAlert("");
    } catch (e) {
      showAlert(explain(e));
    }
  });
  $("session-close").addEventListener("click", async () => {
    if (!state.session) return;
    try {
      await api("DELETE", `/v1/sessions/${state.session.id}`);
    } catch (e) {
      if (!sessionGone(e)) showAlert(explain(e));
    }
    localStorage.removeItem("airlock.nb." + state.session.id);
    setSession(null);
    resetCells();
  });
  $("sessions-button").addEventListener("click", openSessions);
  $("session-env").addEventListener("focus", loadEnvironments, { once: true });
  $("sessions-close").addEventListener("click", () => $("sessions-dialog").close());
}

// openSessions (the Sessions dialog) is in sessions.js.

// openSession makes id the notebook's session and restores its notebook.
async function openSession(id) {
  const changed = !state.session || state.session.id !== id;
  try {
    const s = await api("GET", `/v1/sessions/${id}`);
    setSession(s);
  } catch (e) {
    if (e instanceof APIError && e.status === 404) {
      showAlert(`Session ${id} is gone (closed or expired); a new one opens on the next action.`);
      setSession(null);
      loadLocalNotebook(id);
      return;
    }
    setSession({ id });
  }
  // The cells shown are another session's until the load lands: clear
  // them, as the Sessions dialog's other ways in do.
  if (changed) resetCells();
  await loadNotebook();
}

// ---------- rendering helpers ----------

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

function humanSize(n) {
  if (n === undefined || n === null) return "";
  const u = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i === 0 ? String(v) : v.toFixed(v < 10 ? 1 : 0)) + " " + u[i];
}

// highlight renders code with highlight.js (which escapes it).
function highlight(code, lang) {
  const pre = el("pre", "code-block");
  const c = el("code", "hljs");
  const l = lang === "shell" ? "bash" : "python";
  if (window.hljs) {
    try {
      c.innerHTML = window.hljs.highlight(l, code, true).value;
    } catch {
      c.textContent = code;
    }
  } else {
    c.textContent = code;
  }
  pre.append(c);
  return pre;
}

// markdown renders model text as sanitised HTML: marked, then DOMPurify
// (no scripts, no event handlers, no forms), code blocks highlighted.
function markdown(text) {
  const box = el("div", "md");
  const src = String(text || "");
  if (!window.marked || !window.DOMPurify) {
    box.append(el("p", null, src));
    return box;
  }
  const html = window.marked.parse(src, { mangle: false, headerIds: false });
  box.innerHTML = window.DOMPurify.sanitize(html, { FORBID_TAGS: ["style", "form", "input", "iframe"], FORBID_ATTR: ["style"] });
  for (const a of box.querySelectorAll("a")) { a.target = "_blank"; a.rel = "noopener noreferrer"; }
  for (const c of box.querySelectorAll("pre code")) {
    if (window.hljs) window.hljs.highlightBlock(c);
  }
  for (const t of box.querySelectorAll("table")) {
    const w = el("div", "table-wrap");
    t.replaceWith(w);
    w.append(t);
    sortable(t);
  }
  return box;
}

// sortable lets a person sort a table by a column: a click on its header
// sorts the rows ascending, a second click descending (aria-sort says
// which); numbers sort as numbers, the rest as text.
function sortable(t) {
  const heads = [...t.querySelectorAll("thead th")];
  const body = t.tBodies[0];
  if (!heads.length || !body) return;
  heads.forEach((th, i) => {
    const b = el("button", "sort", th.textContent);
    b.type = "button";
    b.title = "Sort by this column";
    th.replaceChildren(b);
    b.addEventListener("click", () => {
      const asc = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      const key = (tr) => (tr.children[i] ? tr.children[i].textContent.trim() : "");
      const rows = [...body.rows];
      const numeric = rows.every((r) => key(r) === "" || !isNaN(Number(key(r).replace(/,/g, ""))));
      rows.sort((a, b2) => {
        const x = key(a), y = key(b2);
        const c = numeric ? Number(x.replace(/,/g, "")) - Number(y.replace(/,/g, "")) : x.localeCompare(y);
        return asc ? c : -c;
      });
      body.append(...rows);
    });
  });
}

async function download(url, name) {
  try {
    const b = await (await api("GET", url, { raw: true })).blob();
    saveBlob(b, name);
  } catch (e) {
    showAlert(explain(e));
  }
}

function saveBlob(b, name) {
  const tmp = el("a");
  tmp.href = URL.createObjectURL(b);
  tmp.download = name;
  document.body.append(tmp);
  tmp.click();
  tmp.remove();
  setTimeout(() => URL.revokeObjectURL(tmp.href), 10000);
}

// artifactNode shows an image inline (fetched with the key, as a blob:
// URL) or a download link.
function artifactNode(a) {
  const box = el("div", "artifact");
  if (!a.url) {
    box.append(el("span", "muted", `${a.name} (${humanSize(a.size)}, not kept)`));
    return box;
  }
  if ((a.mime || "").startsWith("image/") && a.mime !== "image/svg+xml") {
    const img = el("img");
    img.alt = a.name;
    box.append(img);
    api("GET", a.url, { raw: true })
      .then((r) => r.blob())
      .then((b) => { img.src = URL.createObjectURL(b); })
      .catch((e) => box.append(el("span", "error", `could not load ${a.name}: ${explain(e)}`)));
    return box;
  }
  const link = el("a", null, `Download ${a.name} (${humanSize(a.size)})`);
  link.href = "#";
  link.addEventListener("click", (ev) => { ev.preventDefault(); download(a.url, a.name); });
  box.append(link);
  return box;
}

function statusBadge(status) {
  return el("span", `badge status-${status}`, status);
}

const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;
const WARNING_LINE = /\b[A-Z][A-Za-z]*Warning\b/;

// stderrNode shows stderr: warnings (FutureWarning, UserWarning, ...) in
// amber, the rest as errors; a plain ok run's stderr is amber too.
function stderrNode(text, ok) {
  const clean = text.replace(ANSI, "");
  const warn = ok || (WARNING_LINE.test(clean) && !/Traceback \(most recent call last\)/.test(clean));
  return el("pre", warn ? "stderr warning" : "stderr", clean);
}

// failingLine finds the cell's line a traceback points at.
function failingLine(traceback, source) {
  const text = (traceback || []).join("\n").replace(ANSI, "");
  const lines = String(source || "").split("\n");
  let n = null;
  const re = /(?:Cell In\s*\[\d*\]|File "<[^>]*>"|<cell[^>]*>|<string>|<ipython-input[^>]*>)[^\n]*?line (\d+)/g;
  let m;
  while ((m = re.exec(text)) !== null) n = parseInt(m[1], 10);
  if (n === null) {
    const alt = /line (\d+)/g;
    while ((m = alt.exec(text)) !== null) {
      const k = parseInt(m[1], 10);
      if (k >= 1 && k <= lines.length) n = k;
    }
  }
  if (n === null || n < 1 || n > lines.length) return null;
  return { line: n, text: lines[n - 1] };
}

// renderResult shows a tool result for people: status, stdout, stderr,
// the error with its failing line, display items and files. The text
// meant for the model (the message content) is left out unless nothing
// else explains the outcome (fallback).
function renderResult(out, r, source, fallback) {
  out.replaceChildren();
  const head = el("div", "result-head");
  head.append(statusBadge(r.status));
  if (r.exit_code !== undefined && r.exit_code !== null && r.exit_code !== 0) head.append(el("span", "muted", ` exit ${r.exit_code}`));
  if (r.duration_ms !== undefined) head.append(el("span", "muted", ` · ${fmtDuration(r.duration_ms)}`));
  if (r.truncated) head.append(el("span", "muted", " · truncated"));
  out.append(head);
  if (r.stdout) out.append(el("pre", "stdout", r.stdout.replace(ANSI, "")));
  const ok = r.status === "ok";
  if (r.stderr && !(r.error && r.error.traceback && r.error.traceback.length && r.stderr.includes("Traceback"))) out.append(stderrNode(r.stderr, ok));
  if (r.dropped && (r.dropped.stdout || r.dropped.stderr)) {
    out.append(el("p", "muted", `output cut in the middle: ${humanSize(r.dropped.stdout || 0)} of stdout, ${humanSize(r.dropped.stderr || 0)} of stderr`));
  }
  if (r.error && r.error.name) {
    const box = el("div", "error-box");
    box.append(el("p", "error exc", `${r.error.name}: ${r.error.value || ""}`));
    const fl = failingLine(r.error.traceback, source);
    if (fl) {
      const p = el("pre", "failing-line");
      p.append(el("span", "lineno", `line ${fl.line}: `), document.createTextNode(fl.text));
      box.append(p);
    }
    if (r.error.traceback && r.error.traceback.length) {
      const d = el("details", "traceback");
      d.append(el("summary", null, "Traceback"), el("pre", "stderr", r.error.traceback.join("\n").replace(ANSI, "")));
      box.append(d);
    }
    out.append(box);
  }
  if (r.kernel_restarted) out.append(el("p", "muted", "The Python process was restarted: files are kept, variables are gone."));
  for (const d of r.display || []) out.append(displayNode(d.data || {}, d));
  if (!ok && r.message && !(r.error && r.error.name)) out.append(el("p", "muted", r.message));
  if (r.reason) out.append(el("p", "muted", `reason: ${r.reason}`));
  for (const a of r.artifacts || []) out.append(artifactNode(a));
  if (fallback && !r.stdout && !r.stderr && !(r.error && r.error.name)) head.after(el("pre", "stdout", fallback));
}

function fmtDuration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

const TABLE_CAP = 50;

// displayNode shows a rich output: a PNG, an HTML table (DataFrames; the
// HTML is sanitised, shown in a scrolling box capped at TABLE_CAP rows with
// "Show all" and a CSV download), other sanitised HTML, or plain text.
function displayNode(data) {
  const box = el("div", "display");
  if (data["image/png"]) {
    const img = el("img");
    img.alt = "display output";
    img.src = "data:image/png;base64," + data["image/png"];
    box.append(img);
  } else if (data["image/svg+xml"]) {
    const img = el("img");
    img.alt = "display output";
    img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(data["image/svg+xml"]);
    box.append(img);
  } else if (data["text/html"] && window.DOMPurify) {
    const html = el("div", "html-output");
    html.innerHTML = window.DOMPurify.sanitize(data["text/html"], { FORBID_TAGS: ["style", "script", "form", "input", "iframe"], FORBID_ATTR: ["style"] });
    for (const t of html.querySelectorAll("table")) {
      const wrap = el("div", "table-wrap");
      t.replaceWith(wrap);
      wrap.append(t);
      capTable(t, wrap);
    }
    box.append(html);
  } else {
    box.append(el("pre", "stdout", data["text/plain"] || ""));
  }
  return box;
}

function capTable(t, wrap) {
  const rows = [...t.querySelectorAll("tbody tr")];
  const bar = el("div", "row table-bar");
  if (rows.length > TABLE_CAP) {
    rows.slice(TABLE_CAP).forEach((r) => { r.hidden = true; });
    const more = el("button", "show-all", `Show all ${rows.length} rows`);
    more.type = "button";
    more.addEventListener("click", () => { rows.forEach((r) => { r.hidden = false; }); more.remove(); });
    bar.append(el("span", "muted", `${TABLE_CAP} of ${rows.length} rows shown`), more);
  }
  const dl = el("button", "download-csv", "Download CSV");
  dl.type = "button";
  dl.addEventListener("click", () => saveBlob(new Blob([tableCSV(t)], { type: "text/csv" }), "table.csv"));
  bar.append(dl);
  wrap.after(bar);
}

function tableCSV(t) {
  const q = (s) => (/[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s);
  return [...t.querySelectorAll("tr")].map((tr) => [...tr.children].map((c) => q(c.textContent.trim())).join(",")).join("\n") + "\n";
}

// parseSSE feeds each complete event of an SSE text buffer to onEvent(name,
// data, id) and returns what is left over.
function parseSSE(buf, onEvent) {
  buf = buf.replace(/\r\n/g, "\n");
  let i;
  while ((i = buf.indexOf("\n\n")) >= 0) {
    const block = buf.slice(0, i);
    buf = buf.slice(i + 2);
    let name = "message", data = "", id = null;
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
      else if (line.startsWith("id:")) id = line.slice(3).trim();
    }
    if (data) onEvent(name, data, id);
  }
  return buf;
}

// liveOutput shows a call's output as it arrives: stdout and stderr in one
// pre each (in order of arrival), rich items and file names below.
function liveOutput(out) {
  out.replaceChildren();
  const live = el("div", "live");
  out.append(live);
  let last = null;
  return (ev) => {
    if (ev.kind === "stdout" || ev.kind === "stderr") {
      if (!last || last.dataset.kind !== ev.kind) {
        last = el("pre", ev.kind);
        last.dataset.kind = ev.kind;
        live.append(last);
      }
      last.append(document.createTextNode((ev.text || "").replace(ANSI, "")));
    } else if (ev.kind === "display") {
      last = null;
      live.append(displayNode(ev.data || {}));
    } else if (ev.kind === "artifact" && ev.artifact) {
      last = null;
      live.append(el("p", "muted", `file: ${ev.artifact.name}`));
    }
  };
}

// streamToolCall posts a tool call with Accept: text/event-stream, passes
// live events to onEvent and resolves with the final answer (the same
// object as the JSON call). An error event or status rejects with APIError.
async function streamToolCall(path, body, onEvent, signal, key) {
  const headers = { Accept: "text/event-stream" };
  if (key) headers["Idempotency-Key"] = key;
  const res = await api("POST", path, { json: body, raw: true, signal, headers });
  if (!(res.headers.get("Content-Type") || "").startsWith("text/event-stream")) return res.json();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "", final = null, failure = null;
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      goneOffline();
      throw new Error("the connection to the server was lost while the cell ran");
    }
    if (chunk.done) break;
    buf = parseSSE(buf + chunk.value, (name, data) => {
      let v;
      try { v = JSON.parse(data); } catch { return; }
      if (name === "result") final = v;
      else if (name === "error") failure = new APIError(v.status || 500, v);
      else onEvent(v);
    });
  }
  if (failure) throw failure;
  if (!final) throw new Error("the stream ended without a result");
  return final;
}

// ---------- notebook ----------

let cellSeq = 0;

function cellEditor(node) {
  return node.querySelector(".CodeMirror") ? node.querySelector(".CodeMirror").CodeMirror : null;
}

function cellSource(node) {
  const cm = cellEditor(node);
  return cm ? cm.getValue() : node.querySelector("textarea.code").value;
}

function cellsRefresh() {
  for (const n of $("cells").children) {
    const cm = cellEditor(n);
    if (cm) cm.refresh();
  }
}

// indentKey is Tab's own work: indent the selection or insert spaces.
function indentKey(c) {
  if (c.somethingSelected()) c.indentSelection("add");
  else c.replaceSelection(" ".repeat(c.getOption("indentUnit")), "end");
}

// addCell appends (or inserts after `after`) a cell; c is a saved cell.
function addCell(lang, code, after, saved) {
  const node = $("cell-template").content.firstElementChild.cloneNode(true);
  node.dataset.cellId = (saved && saved.id) || `c${Date.now().toString(36)}${cellSeq++}`;
  const sel = node.querySelector(".lang");
  sel.value = lang || "python";
  const holder = node.querySelector(".editor");
  if (window.CodeMirror) {
    const cm = window.CodeMirror(holder, {
      value: code || "",
      mode: editorMode(sel.value),
      lineNumbers: true,
      viewportMargin: Infinity, // the editor grows with its content
      indentUnit: 4,
      tabSize: 4,
      indentWithTabs: false,
      screenReaderLabel: "Cell code",
      extraKeys: Object.assign({
        Tab: indentKey,
        "Shift-Tab": (c) => c.indentSelection("subtract"),
        "Shift-Enter": () => { runCell(node); focusNext(node); },
        "Ctrl-Enter": () => runCell(node),
        "Cmd-Enter": () => runCell(node),
        Esc: (c) => c.getInputField().blur(),
      }, typeof completionKeys === "function" ? completionKeys(indentKey) : {}),
    });
    cm.on("change", () => scheduleSave());
    if (typeof attachCompletion === "function") attachCompletion(cm);
  } else {
    const ta = el("textarea", "code");
    ta.value = code || "";
    ta.setAttribute("aria-label", "Cell code");
    holder.append(ta);
    ta.addEventListener("input", () => scheduleSave());
  }
  sel.addEventListener("change", () => {
    const cm = cellEditor(node);
    if (cm) cm.setOption("mode", editorMode(sel.value));
    node.dataset.lang = sel.value;
    scheduleSave();
  });
  node.querySelector(".run").addEventListener("click", () => runCell(node));
  node.querySelector(".stop").addEventListener("click", () => stopCell(node));
  node.querySelector(".delete").addEventListener("click", () => {
    if (state.running === node) return;
    state.queue = state.queue.filter((n) => n !== node);
    node.remove();
    if (!$("cells").children.length) addCell("python", "");
    scheduleSave();
  });
  node.querySelector(".move-up").addEventListener("click", () => {
    if (node.previousElementSibling) node.previousElementSibling.before(node);
    cellsRefresh();
    scheduleSave();
  });
  node.querySelector(".move-down").addEventListener("click", () => {
    if (node.nextElementSibling) node.nextElementSibling.after(node);
    cellsRefresh();
    scheduleSave();
  });
  node.querySelector(".clear").addEventListener("click", () => { clearCell(node); scheduleSave(); });
  node.querySelector(".cell-timeout").addEventListener("change", () => scheduleSave());
  const toggle = node.querySelector(".toggle-output");
  toggle.addEventListener("click", () => setCollapsed(node, toggle.getAttribute("aria-expanded") === "true"));
  node.dataset.lang = sel.value;
  if (saved && saved.lang === "markdown") renderMarkdownCell(node);
  if (saved) {
    if (saved.timeout) node.querySelector(".cell-timeout").value = saved.timeout;
    if (saved.execution_count) setExecCount(node, saved.execution_count);
    if (saved.result) {
      node.result = saved.result;
      renderResult(node.querySelector(".output"), saved.result, code);
      node.dataset.status = saved.result.status;
      node.querySelector(".out-bar").hidden = false;
    } else if (saved.error) {
      node.querySelector(".output").replaceChildren(el("p", "error", saved.error));
      node.dataset.status = "failed";
    }
    if (saved.collapsed) setCollapsed(node, true);
    if (saved.pending && saved.pending.key) {
      node.resume = saved.pending;
      node.pending = saved.pending;
    }
  }
  showCellTimeout(node);
  if (after) after.after(node);
  else $("cells").append(node);
  const cm = cellEditor(node);
  if (cm) cm.refresh();
  return node;
}

function setCollapsed(node, collapsed) {
  const t = node.querySelector(".toggle-output");
  t.setAttribute("aria-expanded", String(!collapsed));
  t.textContent = collapsed ? "Show output" : "Collapse output";
  node.querySelector(".output").hidden = collapsed;
  node.dataset.collapsed = String(collapsed);
  scheduleSave();
}

function setExecCount(node, n) {
  node.dataset.exec = n || "";
  node.querySelector(".exec-count").textContent = n ? `[${n}]` : "[ ]";
}

function clearCell(node) {
  node.querySelector(".output").replaceChildren();
  node.querySelector(".out-bar").hidden = true;
  node.result = null;
  delete node.dataset.status;
  setExecCount(node, null);
  node.querySelector(".cell-status").textContent = "";
}

function focusCell(node) {
  const cm = cellEditor(node);
  if (cm) cm.focus();
  else node.querySelector("textarea.code").focus();
}

// focusNext moves to the next cell, adding an empty Python one at the end
// (a new cell is Python whatever the previous one was).
function focusNext(node) {
  let next = node.nextElementSibling;
  if (!next) next = addCell("python", "", node);
  focusCell(next);
  next.scrollIntoView({ block: "nearest" });
}

function resetCells() {
  $("cells").replaceChildren();
  addCell("python", "");
}

// showTimeouts names the session's own limit (what a cell that names no
// timeout gets) in the notebook's and every cell's Timeout box.
function showTimeouts() {
  const t = state.sessionTimeout;
  const nb = $("nb-timeout");
  nb.placeholder = t ? `${t} s` : "session's";
  nb.title = t ? `Cells get the session's own limit, ${t} s, unless a timeout is set here or in the cell` : "Cells get the session's own limit unless a timeout is set";
  for (const n of $("cells").children) showCellTimeout(n);
}

// showCellTimeout shows the limit the cell runs with when its box is
// empty: the notebook's box, else the session's own.
function showCellTimeout(node) {
  const box = node.querySelector(".cell-timeout");
  const nb = parseFloat($("nb-timeout").value);
  const t = nb > 0 ? nb : state.sessionTimeout;
  box.placeholder = t ? `${t} s` : "session";
  box.title = t ? `Runs with ${nb > 0 ? "the notebook's" : "the session's"} limit, ${t} s, unless set here` : "Runs with the session's own limit unless set here";
}

// timeoutFor is the cell's timeout in seconds (the cell's own, else the
// notebook's, capped at the server's maximum once known), or 0 for the
// server's default.
function timeoutFor(node) {
  const own = parseFloat(node.querySelector(".cell-timeout").value);
  const nb = parseFloat($("nb-timeout").value);
  const t = own > 0 ? own : nb > 0 ? nb : 0;
  const max = state.maxTimeout;
  return max && t ? Math.min(t, max) : t;
}

// callCell runs the tool call; a timeout over the key's ceiling is capped
// to the ceiling the refusal names, and tried once more.
async function callCell(s, tool, args, node, onEvent) {
  // notebook: the cell's value comes once, as its richest representation
  // with a text fallback (a display marked "result"), never also printed.
  const body = { type: "function", function: { name: tool.name, arguments: JSON.stringify(args) }, notebook: true };
  const t = timeoutFor(node);
  if (t) body.limits = { timeout_seconds: t };
  try {
    return await streamToolCall(`/v1/sessions/${s.id}/tool-calls`, body, onEvent, undefined, detach(node, s, body));
  } catch (e) {
    const m = e instanceof APIError && /timeout_seconds \S+ is over (\d+(?:\.\d+)?)/.exec(e.message);
    if (!m) throw e;
    state.maxTimeout = parseFloat(m[1]);
    $("nb-timeout").max = String(state.maxTimeout);
    node.querySelector(".cell-status").textContent = `timeout capped at the server's maximum, ${state.maxTimeout} s`;
    body.limits = { timeout_seconds: state.maxTimeout };
    return streamToolCall(`/v1/sessions/${s.id}/tool-calls`, body, onEvent, undefined, detach(node, s, body));
  }
}

// detach gives the cell's call an idempotency key: the server runs a call
// with an explicit key to its end even when this page goes away (a reload,
// a closed tab), and the same request with the same key attaches to it.
// The key and the request are saved with the cell at once, so a reload
// re-attaches (resumeCell) and shows the output when the call ends.
function detach(node, s, body) {
  const key = `cell-${node.dataset.cellId}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  node.pending = { key, session: s.id, body: JSON.parse(JSON.stringify(body)) };
  saveNotebook();
  return key;
}

// editorMode is CodeMirror's mode for a cell language.
function editorMode(lang) {
  return lang === "shell" ? "shell" : lang === "markdown" ? "text/plain" : "python";
}

// renderMarkdownCell shows a Markdown cell as its text (sanitised, as a
// model's answer is); it runs nothing.
function renderMarkdownCell(node) {
  const out = node.querySelector(".output");
  out.replaceChildren(markdown(cellSource(node)));
  node.result = null;
  node.dataset.status = "markdown";
  setExecCount(node, null);
  node.querySelector(".out-bar").hidden = true;
}

// runCell queues the cell; cells run one at a time in order of asking. A
// Markdown cell is rendered at once.
function runCell(node) {
  if (node.querySelector(".lang").value === "markdown") { renderMarkdownCell(node); scheduleSave(); return; }
  if (state.running === node || state.queue.includes(node)) return;
  state.queue.push(node);
  node.querySelector(".run").disabled = true;
  node.querySelector(".stop").hidden = false;
  showQueue();
  pump();
}

// stopCell stops the cell: the running one with a KeyboardInterrupt (its
// session keeps its variables), a queued one by taking it out of the queue.
async function stopCell(node) {
  if (state.queue.includes(node)) {
    state.queue = state.queue.filter((n) => n !== node);
    delete node.dataset.queue;
    node.querySelector(".run").disabled = false;
    node.querySelector(".stop").hidden = true;
    node.querySelector(".cell-status").textContent = "not run (stopped)";
    showQueue();
    return;
  }
  if (state.running !== node) return;
  const s = node.pending ? { id: node.pending.session } : state.session;
  if (!s) return;
  node.querySelector(".cell-status").textContent = "stopping…";
  try {
    await api("POST", `/v1/sessions/${s.id}/interrupt`);
  } catch (e) {
    if (!sessionGone(e)) showAlert(explain(e));
  }
}

function showQueue() {
  state.queue.forEach((n, i) => {
    n.querySelector(".cell-status").textContent = `queued (${i + 1} waiting${state.running ? " behind the running cell" : ""})`;
    n.dataset.queue = String(i + 1);
  });
}

async function pump() {
  if (state.running || !state.queue.length) return;
  const node = state.queue.shift();
  delete node.dataset.queue;
  showQueue();
  if (node.resume) await resumeCell(node);
  else await execCell(node);
  pump();
}

// resumeCell re-attaches a restored cell to the call it started before a
// reload (same request, same idempotency key): the output shows when the
// call ends, or at once when it already has.
async function resumeCell(node) {
  const p = node.resume;
  node.resume = null;
  await execCell(node, (onEvent) => streamToolCall(`/v1/sessions/${p.session}/tool-calls`, p.body, onEvent, undefined, p.key), "re-attached, running");
}

async function execCell(node, attach, label) {
  const btn = node.querySelector(".run");
  const status = node.querySelector(".cell-status");
  const out = node.querySelector(".output");
  const lang = node.querySelector(".lang").value;
  const code = cellSource(node);
  state.running = node;
  node.dataset.status = "running";
  $("interrupt").disabled = false;
  const started = Date.now();
  const tick = () => { status.textContent = `${label || "running"} ${((Date.now() - started) / 1000).toFixed(1)} s`; };
  tick();
  const timer = setInterval(tick, 100);
  setExecCount(node, "*");
  node.querySelector(".out-bar").hidden = false;
  if (node.dataset.collapsed === "true") setCollapsed(node, false);
  try {
    let res;
    if (attach) {
      res = await attach(liveOutput(out));
    } else {
      const tools = state.tools || (await loadTools());
      const tool = tools[lang];
      if (!tool) throw new Error(`no ${lang} tool on this server`);
      const s = await ensureSession();
      const args = {};
      args[tool.arg] = code;
      res = await callCell(s, tool, args, node, liveOutput(out));
    }
    const r = res.result || {};
    node.pending = null;
    node.reattempts = 0;
    node.result = r;
    renderResult(out, r, code);
    status.textContent = "";
    node.dataset.status = r.status;
    setExecCount(node, r.execution_count || null);
    if (r.status === "pending_approval" && r.approval_token) cellApproval(node, r.approval_token, code);
    if (r.session_ended) sessionGone(new APIError(404, { error: { code: "not_found" } }));
  } catch (e) {
    if (node.pending && !(e instanceof APIError) && (node.reattempts = (node.reattempts || 0) + 1) <= 5) {
      // The connection broke (a reload, the server restarting): the call
      // goes on under its key; keep it, to re-attach.
      if (state.unloading) return;
      node.resume = node.pending;
      status.textContent = "connection lost: the call goes on; re-attaching when the server answers";
      setTimeout(() => { if (node.resume && !state.queue.includes(node)) { state.queue.unshift(node); pump(); } }, 2000);
      return;
    }
    node.pending = null;
    sessionGone(e);
    status.textContent = "";
    setExecCount(node, null);
    node.result = null;
    out.replaceChildren(el("p", "error", explain(e)));
    node.dataset.status = "failed";
  } finally {
    clearInterval(timer);
    btn.disabled = false;
    node.querySelector(".stop").hidden = true;
    state.running = null;
    $("interrupt").disabled = true;
    scheduleSave();
    // The cell may have written files: the Files panel shows them.
    if (!state.unloading) refreshFiles();
    if (!state.unloading && !state.queue.length && typeof refreshVariables === "function") refreshVariables();
  }
}

// cellApproval asks, in the cell, about its call held for approval (the
// key's policy): Approve runs it now, in the session; Reject resolves it
// without running. Reject has the focus (Enter must not approve).
function cellApproval(node, token, code) {
  const out = node.querySelector(".output");
  const card = el("div", "approval");
  card.setAttribute("role", "group");
  card.setAttribute("aria-label", "Approval needed");
  card.append(el("p", null, "This cell waits for approval (the API key's policy). Run it?"));
  const lab = el("label", "reason-label", "Reason (optional)");
  const reason = el("input", "reason");
  reason.type = "text";
  reason.id = "reason-" + token;
  lab.htmlFor = reason.id;
  const row = el("div", "row");
  const no = el("button", "reject", "Reject");
  const yes = el("button", "approve", "Approve");
  no.type = yes.type = "button";
  const st = el("p", "approval-state", "waiting for your decision");
  st.setAttribute("aria-live", "polite");
  const decide = async (approve) => {
    setCardState(card, "sending", approve ? "approving: the cell runs…" : "rejecting…");
    node.dataset.status = "running";
    try {
      const res = await api("POST", `/v1/tool-calls/approvals/${encodeURIComponent(token)}`, { json: { approve, reason: reason.value.trim() } });
      const r = res.result || {};
      node.result = r;
      renderResult(out, r, code);
      node.dataset.status = r.status;
      setExecCount(node, r.execution_count || null);
    } catch (e) {
      node.dataset.status = "pending_approval";
      setCardState(card, "waiting", "not sent: " + explain(e));
      if (e instanceof APIError && e.status === 404) setCardState(card, "expired", "no longer waiting (decided elsewhere or expired)");
    }
    scheduleSave();
    refreshFiles();
  };
  yes.addEventListener("click", () => decide(true));
  no.addEventListener("click", () => decide(false));
  row.append(no, yes);
  card.append(lab, reason, row, st);
  card.dataset.state = "waiting";
  out.append(card);
  no.focus();
}

function runAll() {
  for (const n of $("cells").children) {
    if (cellSource(n).trim()) runCell(n);
  }
}

// interruptSession stops the running cell (KeyboardInterrupt); the
// session keeps its variables. Queued cells are dropped.
async function interruptSession() {
  if (!state.session) return;
  for (const n of state.queue) {
    n.querySelector(".cell-status").textContent = "not run (interrupted)";
    n.querySelector(".run").disabled = false;
    n.querySelector(".stop").hidden = true;
    delete n.dataset.queue;
  }
  state.queue = [];
  try {
    const r = await api("POST", `/v1/sessions/${state.session.id}/interrupt`);
    $("kernel-status").textContent = r.interrupted ? "interrupted" : "nothing was running";
  } catch (e) {
    if (!sessionGone(e)) showAlert(explain(e));
  }
}

// restartSession gives the session a fresh Python process; files stay.
async function restartSession() {
  if (!state.session) return;
  $("restart").disabled = true;
  try {
    await api("POST", `/v1/sessions/${state.session.id}/restart`);
    $("kernel-status").textContent = "restarted: variables cleared, files kept";
    for (const n of $("cells").children) if (n !== state.running) setExecCount(n, null);
  } catch (e) {
    if (!sessionGone(e)) showAlert(explain(e));
  } finally {
    $("restart").disabled = false;
  }
}

// ---------- notebook persistence ----------

function notebookCells() {
  return [...$("cells").children].map((n) => ({
    id: n.dataset.cellId,
    lang: n.querySelector(".lang").value,
    source: cellSource(n),
    timeout: parseFloat(n.querySelector(".cell-timeout").value) || undefined,
    execution_count: parseInt(n.dataset.exec, 10) || undefined,
    result: n.result || undefined,
    error: n.dataset.status === "failed" ? n.querySelector(".output").textContent : undefined,
    collapsed: n.dataset.collapsed === "true" || undefined,
    pending: n.pending || undefined,
  }));
}

function scheduleSave() {
  if (state.restoring || state.unloading) return;
  state.nb.dirty = true;
  state.nb.edits++;
  clearTimeout(state.nb.timer);
  state.nb.timer = setTimeout(saveNotebook, 600);
}

// saveNotebook keeps the cells in local storage and on the server (PUT
// with the version last seen; a 409 means another tab saved: take its
// version and save ours over it).
async function saveNotebook() {
  if (!state.session) return;
  const id = state.session.id;
  let cells = notebookCells();
  try {
    localStorage.setItem("airlock.nb." + id, JSON.stringify({ cells, saved: Date.now() }));
  } catch { /* full: the server copy is the one that matters */ }
  state.nb.dirty = false;
  if (!state.nb.server) { $("save-status").textContent = "saved in this browser"; return; }
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const r = await api("PUT", `/v1/sessions/${id}/notebook`, { json: { cells, version: state.nb.version } });
      state.nb.version = r && r.version !== undefined ? r.version : state.nb.version + 1;
      setBase(cells);
      $("save-status").textContent = attempt ? "saved (merged with another tab's changes)" : "saved";
      return;
    } catch (e) {
      if (e instanceof APIError && e.status === 409) {
        // Another tab saved first: merge its cells into ours (no cell of
        // either is dropped) and save the merge over its version.
        try {
          const cur = await api("GET", `/v1/sessions/${id}/notebook`);
          mergeNotebook(cur.cells || []);
          state.nb.version = cur.version;
          cells = notebookCells();
        } catch { /* try again below */ }
        continue;
      }
      if (e instanceof APIError && (e.status === 404 || e.status === 405 || e.status === 501)) {
        state.nb.server = false; // no notebook API on this server: this browser only
        $("save-status").textContent = "saved in this browser";
        return;
      }
      $("save-status").textContent = "not saved: " + explain(e);
      return;
    }
  }
}

// setBase remembers the cells as last agreed with the server: the base of
// a three-way merge with another tab's save.
function setBase(cells) {
  state.nb.base = new Map((cells || []).map((c) => [c.id, c.source || ""]));
}

// mergeNotebook merges the server's cells (another tab's save) into this
// page's, three ways against the base: a cell only they added is
// inserted after its predecessor, a cell only they changed takes their
// version, a cell they deleted and we left alone goes; our additions and
// edits stay. It reports whether the page changed.
function mergeNotebook(theirs) {
  const base = state.nb.base || new Map();
  const box = $("cells");
  const nodes = new Map([...box.children].map((n) => [n.dataset.cellId, n]));
  const ids = new Set(theirs.map((c) => c.id));
  let changed = false;
  state.restoring = true;
  try {
    for (const n of [...box.children]) {
      const id = n.dataset.cellId;
      if (!ids.has(id) && base.has(id) && cellSource(n) === base.get(id) && n !== state.running && !n.pending) {
        n.remove();
        nodes.delete(id);
        changed = true;
      }
    }
    let prev = null;
    for (const c of theirs) {
      const n = nodes.get(c.id);
      if (n) {
        const mine = cellSource(n);
        if (base.has(c.id) && mine === base.get(c.id) && (c.source || "") !== mine && n !== state.running && !n.pending) {
          const fresh = addCell(c.lang, c.source, n, c);
          n.remove();
          nodes.set(c.id, fresh);
          prev = fresh;
          changed = true;
        } else {
          prev = n;
        }
        continue;
      }
      if (base.has(c.id)) continue; // we deleted it
      const fresh = addCell(c.lang, c.source, prev, c);
      if (!prev) box.prepend(fresh);
      nodes.set(c.id, fresh);
      prev = fresh;
      changed = true;
    }
  } finally {
    state.restoring = false;
  }
  if (changed) cellsRefresh();
  return changed;
}

// syncNotebook takes in another tab's saves when this page comes back
// into view (a save of ours merges anyway).
async function syncNotebook() {
  if (!state.session || !state.nb.server || state.nb.dirty) return;
  const id = state.session.id;
  try {
    const cur = await api("GET", `/v1/sessions/${id}/notebook`);
    if (!state.session || state.session.id !== id || state.nb.dirty || cur.version === state.nb.version) return;
    mergeNotebook(cur.cells || []);
    state.nb.version = cur.version;
    setBase(cur.cells || []);
  } catch { /* the next save merges */ }
}

function restoreCells(cells) {
  state.restoring = true;
  $("cells").replaceChildren();
  for (const c of cells || []) addCell(c.lang, c.source, null, c);
  if (!$("cells").children.length) addCell("python", "");
  state.restoring = false;
  // Calls started before a reload: re-attach, in order, before anything else runs.
  const resumed = [...$("cells").children].filter((n) => n.resume);
  if (resumed.length) {
    state.queue = resumed.concat(state.queue.filter((n) => !resumed.includes(n)));
    resumed.forEach((n) => { n.querySelector(".run").disabled = true; n.querySelector(".stop").hidden = false; });
    pump();
  }
}

function loadLocalNotebook(id) {
  try {
    const v = JSON.parse(localStorage.getItem("airlock.nb." + id) || "null");
    if (v && v.cells) { restoreCells(v.cells); return true; }
  } catch { /* ignore a broken copy */ }
  return false;
}

// loadNotebook restores the session's cells: the server copy, else this
// browser's.
//
// The load is a network round trip: one a newer load or another session
// overtook is dropped, and cells edited or added while it was on the way
// are kept, the server's cells merged in around them (a person who clicks
// Add cell right after opening a session keeps the cell).
async function loadNotebook() {
  if (!state.session) return;
  const id = state.session.id;
  const load = ++state.nb.loads;
  const edits = state.nb.edits;
  const current = () => load === state.nb.loads && state.session && state.session.id === id;
  try {
    const nb = await api("GET", `/v1/sessions/${id}/notebook`);
    if (!current()) return;
    state.nb.version = nb.version || 0;
    state.nb.server = true;
    if (state.nb.edits === edits) restoreCells(nb.cells);
    else {
      state.nb.base = new Map();
      mergeNotebook(nb.cells || []);
    }
    setBase(nb.cells);
    $("save-status").textContent = "restored";
    return;
  } catch (e) {
    if (!current()) return;
    if (!(e instanceof APIError && e.status === 404)) showAlert("Could not load the notebook: " + explain(e));
  }
  if (state.nb.edits !== edits) return;
  if (!loadLocalNotebook(id)) resetCells();
}

// ---------- .ipynb import and export ----------
// nbformat's own names (cell_type, output_type, ...) are a file format,
// not the Airlock API: they are written quoted so TestUIReadsTheWire,
// which checks the API's names, leaves them alone.

// ipynbLines splits text into nbformat's list of lines (newlines kept).
function ipynbLines(text) {
  return String(text || "").split(/(?<=\n)/).filter((l) => l !== "");
}

// ipynbOutputs turns a cell's result into nbformat outputs.
function ipynbOutputs(r, count) {
  const outs = [];
  if (!r) return outs;
  if (r.stdout) outs.push({ "output_type": "stream", name: "stdout", text: ipynbLines(r.stdout) });
  if (r.stderr) outs.push({ "output_type": "stream", name: "stderr", text: ipynbLines(r.stderr) });
  for (const d of r.display || []) {
    const data = {};
    for (const [k, v] of Object.entries(d.data || {})) data[k] = k.startsWith("text/") ? ipynbLines(v) : v;
    outs.push(d.result ? { "output_type": "execute_result", "execution_count": count || null, data, metadata: {} } : { "output_type": "display_data", data, metadata: {} });
  }
  if (r.error && r.error.name) outs.push({ "output_type": "error", ename: r.error.name, evalue: r.error.value || "", traceback: r.error.traceback || [] });
  return outs;
}

// notebookIpynb is the notebook as nbformat 4: Python cells as code,
// shell cells as %%bash code, Markdown cells as markdown.
function notebookIpynb() {
  const cells = notebookCells().map((c) => {
    if (c.lang === "markdown") return { "cell_type": "markdown", metadata: {}, source: ipynbLines(c.source) };
    const src = c.lang === "shell" ? "%%bash\n" + c.source : c.source;
    return { "cell_type": "code", metadata: {}, "execution_count": c.execution_count || null, source: ipynbLines(src), outputs: ipynbOutputs(c.result, c.execution_count) };
  });
  return { nbformat: 4, "nbformat_minor": 5, metadata: { kernelspec: { name: "python3", "display_name": "Python 3", language: "python" }, "language_info": { name: "python" } }, cells };
}

function exportIpynb() {
  const name = (state.session ? state.session.id : "notebook") + ".ipynb";
  saveBlob(new Blob([JSON.stringify(notebookIpynb(), null, 1)], { type: "application/x-ipynb+json" }), name);
}

// importIpynb appends the cells of a Jupyter notebook file (code, %%bash
// code as shell, markdown; outputs are not imported: run the cells).
async function importIpynb(file) {
  try {
    const nb = JSON.parse(await file.text());
    if (!nb || !Array.isArray(nb.cells)) throw new Error(`${file.name} is not a Jupyter notebook (no "cells" list)`);
    const box = $("cells");
    const last = box.lastElementChild;
    if (box.children.length === 1 && last && !cellSource(last).trim()) last.remove();
    let n = 0;
    for (const c of nb.cells) {
      let src = Array.isArray(c.source) ? c.source.join("") : String(c.source || "");
      let lang = c['cell_type'] === "markdown" ? "markdown" : "python";
      if (c['cell_type'] === "raw") continue;
      if (lang === "python" && /^%%(bash|sh)\s*\n/.test(src)) { lang = "shell"; src = src.replace(/^%%(bash|sh)\s*\n/, ""); }
      addCell(lang, src);
      n++;
    }
    if (!box.children.length) addCell("python", "");
    cellsRefresh();
    scheduleSave();
    $("kernel-status").textContent = `imported ${n} cells from ${file.name}`;
  } catch (e) {
    showAlert("Could not import: " + explain(e));
  }
}

// ---------- files panel ----------

let filesToken = 0;
async function refreshFiles() {
  const s = viewSession();
  const list = $("uploaded");
  // Every refresh takes a new token, also one with no session, so a listing
  // still under way for another view or session never lands here.
  const my = ++filesToken;
  $("files-session").textContent = s ? `Work folder of session ${s.id}` : "No session yet: one opens with your first upload, cell or question.";
  if (!s) { list.replaceChildren(); return; }
  try {
    const entries = await listFiles(s);
    if (my !== filesToken || (viewSession() || {}).id !== s.id) return;
    list.replaceChildren();
    if (!entries.length) list.append(el("li", "muted", "The work folder is empty."));
    for (const f of entries) {
      const li = el("li", "file");
      const a = el("a", null, f.path);
      a.href = "#";
      a.addEventListener("click", (ev) => { ev.preventDefault(); download(`/v1/sessions/${s.id}/files/${f.path.split("/").map(encodeURIComponent).join("/")}`, f.path.split("/").pop()); });
      li.append(a, el("span", "muted size", ` ${humanSize(f.size)}`));
      list.append(li);
    }
  } catch (e) {
    if (my !== filesToken) return;
    if (sessionGone(e, s)) return;
    list.replaceChildren(el("li", "muted", "Could not list files: " + explain(e)));
  }
}

// listFiles lists every file under the work folder (GET .../files).
async function listFiles(s) {
  const r = await api("GET", `/v1/sessions/${s.id}/files`);
  return r.files.filter((e) => e.type !== "dir").map((e) => ({ path: e.path, size: e.size }));
}

async function uploadList(files) {
  if (!files.length) return;
  $("upload").disabled = true;
  const list = $("uploaded");
  let s = null;
  try {
    s = viewSession() || (currentView() === "assistant" && !$("share-session").checked ? await assistantSession() : await ensureSession());
    for (const f of files) {
      if (state.info && f.size > state.info.max_upload_bytes) throw new Error(`${f.name} (${humanSize(f.size)}) is over the upload limit of ${humanSize(state.info.max_upload_bytes)}`);
      const li = el("li", "muted", `uploading ${f.name} (${humanSize(f.size)})…`);
      list.prepend(li);
      await api("PUT", `/v1/sessions/${s.id}/files/${encodeURIComponent(f.name)}`, {
        body: f, headers: { "Content-Type": "application/octet-stream" },
      });
      li.textContent = `${f.name} (${humanSize(f.size)}) uploaded`;
    }
    $("upload-files").value = "";
    showAlert("");
    await refreshFiles();
  } catch (e) {
    if (!sessionGone(e, s)) showAlert(explain(e));
  } finally {
    $("upload").disabled = false;
  }
}

function initFiles() {
  $("upload-form").addEventListener("submit", (ev) => { ev.preventDefault(); uploadList([...$("upload-files").files]); });
  $("files-refresh").addEventListener("click", refreshFiles);
  const dz = $("files-panel");
  const on = (ev) => { ev.preventDefault(); $("dropzone").classList.add("over"); };
  const off = () => $("dropzone").classList.remove("over");
  dz.addEventListener("dragover", on);
  dz.addEventListener("dragenter", on);
  dz.addEventListener("dragleave", off);
  dz.addEventListener("drop", (ev) => {
    ev.preventDefault();
    off();
    uploadList([...(ev.dataTransfer ? ev.dataTransfer.files : [])]);
  });
}

// ---------- assistant ----------

function setRunning(on) {
  $("ask").disabled = on;
  $("cancel").disabled = !on;
  $("question-label").textContent = state.conv.length && !on ? "Follow-up question" : "Question";
}

function saveConv() {
  const v = { runs: state.conv, assist: state.assistSession && state.assistSession.id, shared: $("share-session").checked };
  localStorage.setItem("airlock.conv", JSON.stringify(v));
  rememberConv();
}

const CONVS_KEPT = 30;

// pastConvs is this browser's list of conversations, newest first:
// [{runs: [{id, goal, answer}], at}] (the runs themselves live on the server).
function pastConvs() {
  try {
    const v = JSON.parse(localStorage.getItem("airlock.convs") || "[]");
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

// rememberConv keeps the current conversation in the list (keyed by its
// first run) and redraws the list.
function rememberConv() {
  const list = pastConvs();
  if (state.conv.length) {
    const first = state.conv[0].id;
    const i = list.findIndex((c) => c.runs && c.runs.length && c.runs[0].id === first);
    const entry = { runs: state.conv.map((r) => ({ id: r.id, goal: r.goal, answer: String(r.answer || "").slice(0, 300) })), at: Date.now() };
    if (i >= 0) list.splice(i, 1);
    list.unshift(entry);
    try { localStorage.setItem("airlock.convs", JSON.stringify(list.slice(0, CONVS_KEPT))); } catch { /* full */ }
  }
  showConvs();
}

// showConvs lists the past conversations; a click reopens one (its runs
// replay from the server).
function showConvs() {
  const list = pastConvs();
  const ul = $("convs");
  ul.replaceChildren();
  const current = state.conv.length ? state.conv[0].id : null;
  for (const c of list) {
    if (!c.runs || !c.runs.length) continue;
    const li = el("li");
    const b = el("button", "link", c.runs[0].goal || "(question)");
    b.type = "button";
    b.addEventListener("click", () => openConversation(c));
    const n = c.runs.length;
    li.append(b, el("span", "muted", `${n} question${n === 1 ? "" : "s"} · ${new Date(c.at).toLocaleString()}`));
    if (c.runs[0].id === current) li.setAttribute("aria-current", "true");
    ul.append(li);
  }
  $("convs-box").hidden = !ul.children.length;
}

// openConversation shows a past conversation in place of the current one.
async function openConversation(c) {
  if (state.run && !state.run.done) { showAlert("A run is still going: cancel it or wait before opening another conversation."); return; }
  state.conv = [];
  state.run = null;
  $("conversation").replaceChildren();
  const saved = JSON.parse(localStorage.getItem("airlock.conv") || "{}") || {};
  localStorage.setItem("airlock.conv", JSON.stringify(Object.assign(saved, { runs: c.runs })));
  await restoreConversation(c.runs[c.runs.length - 1].id).catch((e) => showAlert(explain(e)));
  showConvs();
}

function newTurn(goal) {
  const li = el("li", "turn");
  li.append(el("div", "question-text", goal));
  const details = el("details", "steps-box");
  details.open = true;
  details.append(el("summary", null, "Steps"));
  const steps = el("ol", "steps");
  details.append(steps);
  const status = el("p", "turn-status muted");
  const answer = el("div", "final");
  answer.hidden = true;
  li.append(details, status, answer);
  $("conversation").append(li);
  return { li, steps, status, answer, stepBoxes: {} };
}

async function ask(ev) {
  ev.preventDefault();
  const goal = $("question").value.trim();
  if (!goal) return;
  if (state.info && !state.info.model_configured) {
    showAlert("No model is configured; see the banner above.");
    return;
  }
  setRunning(true);
  $("run-status").textContent = "starting…";
  const turn = newTurn(goal);
  turn.status.textContent = "starting…";
  let s = null;
  try {
    s = await assistantSession();
    const body = { goal, session_id: s.id };
    const prev = state.conv.length ? state.conv[state.conv.length - 1].id : null;
    if (prev) body.previous_run_id = prev;
    let view;
    try {
      view = await api("POST", "/v1/runs", { json: body });
    } catch (e) {
      // A server without follow-ups refuses the field: carry the earlier
      // questions and answers in the goal instead.
      if (!(prev && e instanceof APIError && e.status === 400 && /previous_run_id/.test(e.message))) throw e;
      delete body.previous_run_id;
      body.goal = conversationContext() + "Follow-up question: " + goal;
      view = await api("POST", "/v1/runs", { json: body });
    }
    $("question").value = "";
    state.conv.push({ id: view.id, goal, answer: "" });
    saveConv();
    state.run = { id: view.id, lastSeq: 0, done: false, abort: new AbortController(), turn };
    updateURL();
    setTurnStatus(state.run, view.status);
    await streamRun(state.run);
  } catch (e) {
    sessionGone(e, s);
    turn.status.textContent = "failed: " + explain(e);
    turn.status.className = "turn-status error";
    $("run-status").textContent = "";
    showAlert(explain(e));
  } finally {
    setRunning(!!(state.run && !state.run.done && state.run.turn === turn && state.run.streaming));
  }
}

// conversationContext is the earlier questions and answers, for a server
// that does not take previous_run_id.
function conversationContext() {
  let out = "Earlier in this conversation:\n";
  for (const r of state.conv) out += `Question: ${r.goal}\nAnswer: ${r.answer || "(none)"}\n`;
  return out + "\n";
}

function setTurnStatus(run, text, cls) {
  run.turn.status.textContent = text;
  run.turn.status.className = "turn-status " + (cls || "muted");
  $("run-status").textContent = text;
}

// streamRun reads the run's SSE stream with fetch, resuming with
// Last-Event-ID after a dropped connection; while the server is away it
// waits for the reconnect (probe) and says so.
async function streamRun(run) {
  run.streaming = true;
  try {
    let failures = 0;
    while (!run.done) {
      try {
        const res = await api("GET", `/v1/runs/${run.id}/events`, {
          raw: true, signal: run.abort.signal, headers: run.lastSeq ? { "Last-Event-ID": String(run.lastSeq) } : {},
        });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf = parseSSE(buf + value, (name, data, id) => handleRunEvent(run, name, data, id));
        }
        failures = 0;
        if (!run.done) {
          const v = await api("GET", `/v1/runs/${run.id}`);
          if (v.status !== "running" && v.status !== "waiting_approval") finishRun(run, v);
        }
      } catch (e) {
        if (run.abort.signal.aborted) return;
        if (e instanceof APIError && e.status !== 429 && e.status < 500) {
          finishRun(run, { status: "failed", error: explain(e) });
          return;
        }
        failures++;
        setTurnStatus(run, "connection lost — reconnecting…", "error");
        run.turn.li.dataset.state = "disconnected";
        if (!(e instanceof APIError)) goneOffline();
        await new Promise((r) => setTimeout(r, Math.min(500 * failures, 3000)));
      }
    }
  } finally {
    run.streaming = false;
    if (state.run === run) setRunning(!run.done);
  }
}

function handleRunEvent(run, name, data, id) {
  let ev;
  try { ev = JSON.parse(data); } catch { return; }
  const seq = id !== null && id !== undefined && id !== "" ? parseInt(id, 10) : ev.seq;
  if (seq !== undefined && seq !== null && !isNaN(seq)) {
    if (seq <= run.lastSeq) return;
    run.lastSeq = seq;
  }
  if (run.turn.li.dataset.state === "disconnected") delete run.turn.li.dataset.state;
  renderEvent(run, ev);
}

function stepBox(run, step) {
  const t = run.turn;
  if (!t.stepBoxes[step]) {
    const li = el("li", "step");
    li.append(el("h3", null, `Step ${step}`));
    t.steps.append(li);
    t.stepBoxes[step] = li;
  }
  return t.stepBoxes[step];
}

function argsOf(a) {
  if (typeof a === "string") {
    try { return JSON.parse(a); } catch { return { raw: a }; }
  }
  return a || {};
}

function codeOf(args) {
  const c = args.code || args.command || args.script || args.query;
  return typeof c === "string" ? c : null;
}

function findCall(box, id) {
  return [...box.querySelectorAll(".tool-call")].find((c) => c.dataset.callId === (id || ""));
}

function renderEvent(run, ev) {
  const d = ev.data || {};
  switch (ev.type) {
    case "step_started":
      stepBox(run, ev.step);
      setTurnStatus(run, `running: step ${ev.step}`);
      break;
    case "assistant_message":
      if (d.content) {
        const m = markdown(d.content);
        m.dataset.message = "true";
        m.message = d.content;
        stepBox(run, ev.step).append(m);
      }
      break;
    case "tool_call": {
      const box = stepBox(run, ev.step);
      const args = argsOf(d.arguments);
      const code = codeOf(args);
      const lang = (d.name || "").includes("shell") ? "shell" : "python";
      const call = el("div", "tool-call");
      call.dataset.callId = d.id || "";
      const head = el("div", "row tool-head");
      head.append(el("span", "tool-name", d.name || "tool"));
      if (code !== null) {
        const copy = el("button", "copy-to-notebook", "Copy to notebook");
        copy.type = "button";
        copy.addEventListener("click", () => {
          const cells = $("cells");
          const last = cells.lastElementChild;
          const target = last && !cellSource(last).trim() ? last : null;
          if (target) target.remove();
          addCell(lang, code);
          scheduleSave();
          copy.textContent = "Copied ✓";
        });
        head.append(copy);
      }
      call.append(head);
      call.append(code !== null ? highlight(code, lang) : el("pre", "code-block", JSON.stringify(args, null, 2)));
      call.append(el("div", "output"));
      box.append(call);
      break;
    }
    case "tool_output": {
      const box = stepBox(run, ev.step);
      const call = findCall(box, d.id);
      if (!call) break;
      const out = call.querySelector(".output");
      if (!out.live) out.live = liveOutput(out);
      out.live(d);
      break;
    }
    case "tool_result": {
      const box = stepBox(run, ev.step);
      let call = findCall(box, d.id);
      if (!call) { call = el("div", "tool-call"); call.append(el("div", "output")); box.append(call); }
      const r = Object.assign({ status: d.status, duration_ms: d.duration_ms, reason: d.reason, artifacts: d.artifacts,
        stdout: d.stdout, stderr: d.stderr, exit_code: d.exit_code, truncated: d.truncated, error: d.error,
        display: d.display, dropped: d.dropped, execution_count: d.execution_count, message: d.message }, d.result || {});
      const out = call.querySelector(".output");
      out.live = null;
      const pre = call.querySelector("pre.code-block");
      renderResult(out, r, pre ? pre.textContent : "", d.content);
      const card = box.querySelector(`.approval[data-call-id="${CSS.escape(d.id || "")}"]`);
      if (card && card.dataset.state === "waiting") setCardState(card, r.status === "rejected" ? "rejected" : "decided", r.status === "rejected" ? "rejected" + (r.reason ? ": " + r.reason : "") : "approved");
      break;
    }
    case "approval_needed":
      approvalCard(run, ev, d);
      break;
    case "final_answer":
      showAnswer(run, d.content);
      break;
    case "error":
      stepBox(run, ev.step || 0).append(el("p", "error", d.message || "error"));
      break;
    case "run_finished":
      finishRun(run, d);
      break;
  }
}

function setCardState(card, st, text) {
  card.dataset.state = st;
  card.querySelector(".approval-state").textContent = text;
  for (const b of card.querySelectorAll("button, input")) b.disabled = st !== "waiting";
}

// approvalCard asks the person; Reject has the focus (Enter must not
// approve), a reason may be given, and the card shows its state.
function approvalCard(run, ev, d) {
  const box = stepBox(run, ev.step);
  const card = el("div", "approval");
  card.dataset.callId = d.call_id || d.id || "";
  card.setAttribute("role", "group");
  card.setAttribute("aria-label", "Approval needed");
  card.append(el("p", null, `The model wants to run ${d.name}. Approve?`));
  const args = argsOf(d.arguments);
  const code = codeOf(args);
  card.append(code !== null ? highlight(code, (d.name || "").includes("shell") ? "shell" : "python") : el("pre", "code-block", JSON.stringify(args, null, 2)));
  const lab = el("label", "reason-label", "Reason (optional)");
  const reason = el("input", "reason");
  reason.type = "text";
  reason.id = "reason-" + (d.token || Math.random().toString(36).slice(2));
  lab.htmlFor = reason.id;
  const row = el("div", "row");
  const no = el("button", "reject", "Reject");
  const yes = el("button", "approve", "Approve");
  no.type = yes.type = "button";
  const st = el("p", "approval-state", "waiting for your decision");
  st.setAttribute("aria-live", "polite");
  const decide = async (approve) => {
    setCardState(card, "sending", approve ? "approving…" : "rejecting…");
    const why = reason.value.trim();
    try {
      await api("POST", `/v1/runs/${run.id}/approvals/${encodeURIComponent(d.token)}`, { json: { approve, reason: why || (approve ? "" : "rejected in the web UI") } });
      setCardState(card, approve ? "approved" : "rejected", approve ? "approved" : "rejected" + (why ? `: ${why}` : ""));
    } catch (e) {
      setCardState(card, "waiting", "not sent: " + explain(e));
      if (e instanceof APIError && (e.status === 404 || e.status === 409)) setCardState(card, "expired", "no longer waiting (decided elsewhere or expired)");
    }
  };
  yes.addEventListener("click", () => decide(true));
  no.addEventListener("click", () => decide(false));
  row.append(no, yes);
  card.append(lab, reason, row, st);
  card.dataset.state = "waiting";
  box.append(card);
  setTurnStatus(run, "waiting for your approval", "warning-text");
  if (!run.replaying) no.focus();
}

// showAnswer renders the answer once (Markdown, sanitised) and scrolls it
// into view.
function showAnswer(run, content) {
  const a = run.turn.answer;
  if (a.dataset.shown === "true") return;
  a.dataset.shown = "true";
  a.replaceChildren(el("h2", null, "Answer"), markdown(content));
  a.hidden = false;
  dropAnswerMessage(run, content);
  const c = state.conv.find((r) => r.id === run.id);
  if (c) { c.answer = String(content || "").slice(0, 4000); saveConv(); }
  a.scrollIntoView({ block: "start" });
}

// dropAnswerMessage removes the step message that repeats the answer (the
// model's last message comes both as its step's message and as the
// answer): the answer is shown once, in the Answer box. A step left with
// nothing but its heading goes too.
function dropAnswerMessage(run, content) {
  const text = String(content || "").trim();
  for (const m of run.turn.steps.querySelectorAll('.md[data-message="true"]')) {
    if (String(m.message || "").trim() !== text) continue;
    const step = m.closest(".step");
    m.remove();
    if (step && step.children.length === 1) {
      for (const k of Object.keys(run.turn.stepBoxes)) if (run.turn.stepBoxes[k] === step) delete run.turn.stepBoxes[k];
      step.remove();
    }
  }
}

function finishRun(run, v) {
  if (run.done) return;
  run.done = true;
  const failed = ["failed", "loop", "budget"].includes(v.status);
  const labels = { done: "done", max_steps: "stopped at the step limit", loop: "stopped: repeated calls", budget: "stopped: budget spent", cancelled: "cancelled", failed: "failed" };
  const label = labels[v.status] || v.status;
  setTurnStatus(run, label + (v.error ? " — " + v.error : ""), v.status === "cancelled" || v.status === "canceled" ? "muted" : failed ? "error" : "muted");
  run.turn.li.dataset.state = v.status;
  for (const c of run.turn.li.querySelectorAll('.approval[data-state="waiting"]')) setCardState(c, "expired", `no longer waiting (run ${label})`);
  if (v.final_answer) showAnswer(run, v.final_answer);
  if (state.run === run) setRunning(false);
  refreshFiles();
  if ($("share-session").checked && typeof refreshVariables === "function") refreshVariables();
}

async function cancelRun() {
  const run = state.run;
  if (!run || run.done) return;
  $("cancel").disabled = true;
  setTurnStatus(run, "cancelling…");
  try {
    const v = await api("POST", `/v1/runs/${run.id}/cancel`);
    if (v && v.status && v.status !== "running" && v.status !== "waiting_approval") {
      run.abort.abort();
      finishRun(run, v);
    }
  } catch (e) {
    showAlert(explain(e));
    $("cancel").disabled = false;
  }
}

function newConversation() {
  if (state.run && !state.run.done) return;
  state.conv = [];
  state.run = null;
  $("conversation").replaceChildren();
  saveConv();
  updateURL();
  setRunning(false);
}

// restoreConversation replays the runs of the stored conversation that
// ends at runID; the last one, if still running, stays attached.
async function restoreConversation(runID) {
  let saved = null;
  try { saved = JSON.parse(localStorage.getItem("airlock.conv") || "null"); } catch { /* none */ }
  let runs = saved && saved.runs ? saved.runs : [];
  let i = runs.findIndex((r) => r.id === runID);
  if (i < 0) { // a run of an earlier conversation of this browser
    const c = pastConvs().find((x) => (x.runs || []).some((r) => r.id === runID));
    if (c) { runs = c.runs; i = runs.findIndex((r) => r.id === runID); }
  }
  runs = i >= 0 ? runs.slice(0, i + 1) : [{ id: runID, goal: "" }];
  if (saved && saved.assist) state.assistSession = { id: saved.assist };
  if (saved && saved.shared === false) $("share-session").checked = false; // the workspace's session unless the person chose a separate one
  state.conv = runs;
  for (const r of runs) {
    const turn = newTurn(r.goal || "(question asked earlier)");
    const run = { id: r.id, lastSeq: 0, done: false, abort: new AbortController(), turn, replaying: true };
    state.run = run;
    if (r === runs[runs.length - 1]) {
      setRunning(true);
      streamRun(run).catch((e) => showAlert(explain(e))); // re-attached: events replay, then live
    } else {
      await streamRun(run).catch(() => {});
    }
  }
  setTimeout(() => { if (state.run) state.run.replaying = false; }, 0);
  updateURL();
}

// ---------- start ----------

async function init() {
  initTabs();
  initKeyDialog();
  initSessionBar();
  initFiles();
  $("ask-form").addEventListener("submit", ask);
  $("question").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) $("ask-form").requestSubmit();
  });
  $("cancel").addEventListener("click", cancelRun);
  $("new-conversation").addEventListener("click", newConversation);
  showConvs();
  $("share-session").addEventListener("change", () => { saveConv(); refreshFiles(); });
  $("interrupt").addEventListener("click", interruptSession);
  $("restart").addEventListener("click", restartSession);
  $("run-all").addEventListener("click", runAll);
  $("nb-timeout").addEventListener("input", showTimeouts);
  $("clear-all").addEventListener("click", () => { for (const n of $("cells").children) clearCell(n); scheduleSave(); });
  $("add-cell").addEventListener("click", () => { focusCell(addCell("python", "")); scheduleSave(); });
  $("add-shell-cell").addEventListener("click", () => { focusCell(addCell("shell", "")); scheduleSave(); });
  $("add-md-cell").addEventListener("click", () => { focusCell(addCell("markdown", "")); scheduleSave(); });
  $("export-ipynb").addEventListener("click", exportIpynb);
  $("import-ipynb").addEventListener("change", (ev) => { const f = ev.target.files[0]; if (f) importIpynb(f); ev.target.value = ""; });
  initBatches();
  if (typeof initVariables === "function") initVariables();
  // A cell restored while the notebook view was hidden measured nothing;
  // refresh the editors whenever the view's size changes (shown, resized).
  // Only a change of width counts: output growing a cell must not refresh
  // every editor again.
  let nbWidth = 0;
  if (window.ResizeObserver) {
    new ResizeObserver((entries) => {
      const w = Math.round(entries[entries.length - 1].contentRect.width);
      if (w === nbWidth) return;
      nbWidth = w;
      if (w > 0) cellsRefresh();
    }).observe($("view-notebook"));
  }
  $("reconnect").addEventListener("click", probe);
  $("welcome-close").addEventListener("click", () => { localStorage.setItem("airlock.welcomed", "1"); $("welcome").hidden = true; });
  $("help-button").addEventListener("click", () => { $("welcome").hidden = false; $("welcome-close").focus(); });
  $("welcome").hidden = !!localStorage.getItem("airlock.welcomed");
  window.addEventListener("beforeunload", () => { if (state.nb.dirty) saveNotebook(); });
  window.addEventListener("pagehide", () => { state.unloading = true; });
  window.addEventListener("focus", syncNotebook);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) syncNotebook(); });
  try {
    state.info = await (await fetch("/v1/info")).json();
  } catch (e) {
    goneOffline();
    showAlert("Cannot reach the server: " + explain(e));
    return;
  }
  $("model-banner").hidden = !!state.info.model_configured;
  $("key-button").hidden = !state.info.auth_required;
  if (state.info.auth_required && !state.key) await askKey();
  loadTools().catch((e) => showAlert(explain(e)));
  const params = new URLSearchParams(location.search);
  if (params.get("session")) {
    await openSession(params.get("session"));
  } else {
    addCell("python", "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9, 16])\nplt.title('squares')\nplt.show()");
  }
  if (params.get("run")) await restoreConversation(params.get("run")).catch((e) => showAlert(explain(e)));
  if (params.get("view")) state.selectTab(params.get("view"));
  if (params.get("batch")) openBatch(params.get("batch"));
  setRunning(!!(state.run && !state.run.done));
  document.body.dataset.ready = "true";
}

init();

// loadEnvironments fills the environment picker of new notebook sessions
// (GET /v1/environments); without the route only python is offered.
async function loadEnvironments() {
  try {
    const data = await api("GET", "/v1/environments");
    const pick = $("session-env");
    for (const e of data.environments || []) {
      if (e.name === "python" || e.status !== "ready") continue;
      const o = document.createElement("option");
      o.value = e.name;
      o.textContent = e.name;
      pick.append(o);
    }
  } catch (_) {
    // no environments service: the built-in python only
  }
}
