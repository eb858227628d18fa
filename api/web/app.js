// Airlock web UI: plain JavaScript, no build step. Talks to the /v1 API
// with fetch (so the API key can travel in the Authorization header, which
// <img> and EventSource cannot send); artifacts become blob: URLs.
"use strict";

const KEY_STORAGE = "airlock.key";
const $ = (id) => document.getElementById(id);

const state = {
  info: null,
  key: localStorage.getItem(KEY_STORAGE) || "",
  session: null,
  tools: null,
  run: null, // {id, lastSeq, done, abort}
  running: null, // the notebook cell whose call is running
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

// api calls the JSON API; on 401 it asks for a key and retries once.
async function api(method, path, opts = {}, retried = false) {
  const headers = authHeaders(opts.headers);
  let body = opts.body;
  if (opts.json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(opts.json);
  }
  const res = await fetch(path, { method, headers, body, signal: opts.signal });
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
  return String(err && err.message ? err.message : err);
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

function initTabs() {
  const tabs = [$("tab-assistant"), $("tab-notebook")];
  const select = (t) => {
    tabs.forEach((x) => {
      const on = x === t;
      x.setAttribute("aria-selected", String(on));
      x.tabIndex = on ? 0 : -1;
      $(x.getAttribute("aria-controls")).hidden = !on;
    });
    t.focus();
  };
  tabs.forEach((t, i) => {
    t.addEventListener("click", () => select(t));
    t.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
        ev.preventDefault();
        select(tabs[(i + (ev.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length]);
      }
    });
  });
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

function setSession(s) {
  state.session = s;
  $("session-label").textContent = s ? `Session ${s.id.slice(0, 18)}` : "No session";
  $("session-close").disabled = !s;
  if (!s) $("uploaded").replaceChildren();
}

async function ensureSession() {
  if (state.session) return state.session;
  const s = await api("POST", "/v1/sessions", { json: {} });
  setSession(s);
  return s;
}

// sessionGone drops a session the server no longer knows.
function sessionGone(err) {
  if (err instanceof APIError && (err.code === "not_found" || err.code === "session_lost")) {
    setSession(null);
    showAlert("The session ended (its state is gone); a new one opens on the next action.");
    return true;
  }
  return false;
}

function initSessionBar() {
  $("session-new").addEventListener("click", async () => {
    try {
      if (state.session) await api("DELETE", `/v1/sessions/${state.session.id}`).catch(() => {});
      setSession(null);
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
    setSession(null);
  });
}

// ---------- rendering helpers ----------

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

const PY_KW = new Set("False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield print".split(" "));
const SH_KW = new Set("if then else elif fi for while do done case esac in function return export local echo cd ls cat grep awk sed head tail wc sort uniq python3 pip".split(" "));

// highlight renders code as spans (never innerHTML): comments, strings,
// numbers and keywords.
function highlight(code, lang) {
  const pre = el("pre", "code-block");
  const codeEl = el("code");
  const kw = lang === "shell" ? SH_KW : PY_KW;
  const re = /(#[^\n]*)|("""[\s\S]*?"""|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)/g;
  let last = 0;
  let m;
  while ((m = re.exec(code)) !== null) {
    if (m.index > last) codeEl.append(code.slice(last, m.index));
    if (m[1]) codeEl.append(el("span", "tok-comment", m[1]));
    else if (m[2]) codeEl.append(el("span", "tok-string", m[2]));
    else if (m[3]) codeEl.append(el("span", "tok-number", m[3]));
    else if (kw.has(m[4])) codeEl.append(el("span", "tok-keyword", m[4]));
    else codeEl.append(m[4]);
    last = re.lastIndex;
  }
  codeEl.append(code.slice(last));
  pre.append(codeEl);
  return pre;
}

// artifactNode shows an image inline (fetched with the key, as a blob:
// URL) or a download link.
function artifactNode(a) {
  const box = el("div", "artifact");
  if (!a.url) {
    box.append(el("span", "muted", `${a.name} (${a.size} bytes, not kept)`));
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
  const link = el("a", null, `Download ${a.name} (${a.size} bytes)`);
  link.href = "#";
  link.addEventListener("click", async (ev) => {
    ev.preventDefault();
    try {
      const b = await (await api("GET", a.url, { raw: true })).blob();
      const tmp = el("a");
      tmp.href = URL.createObjectURL(b);
      tmp.download = a.name;
      tmp.click();
    } catch (e) {
      showAlert(explain(e));
    }
  });
  box.append(link);
  return box;
}

function statusBadge(status) {
  return el("span", `badge status-${status}`, status);
}

// renderResult shows a tool result: status, stdout, stderr, message, plots.
function renderResult(out, r, fallbackContent) {
  out.replaceChildren();
  const head = el("div", "result-head");
  head.append(statusBadge(r.status));
  if (r.execution_count) head.append(el("span", "muted", ` [${r.execution_count}]`));
  if (r.exit_code !== undefined && r.exit_code !== null) head.append(el("span", "muted", ` exit ${r.exit_code}`));
  if (r.duration_ms !== undefined) head.append(el("span", "muted", ` · ${r.duration_ms} ms`));
  if (r.truncated) head.append(el("span", "muted", " · truncated"));
  out.append(head);
  if (r.stdout) out.append(el("pre", "stdout", r.stdout));
  if (r.stderr) out.append(el("pre", "stderr", r.stderr));
  if (!r.stdout && !r.stderr && fallbackContent) out.append(el("pre", "stdout", fallbackContent));
  if (r.dropped && (r.dropped.stdout || r.dropped.stderr)) {
    out.append(el("p", "muted", `output cut in the middle: ${r.dropped.stdout} bytes of stdout, ${r.dropped.stderr} of stderr`));
  }
  if (r.error && r.error.name) out.append(el("p", "error exc", `${r.error.name}: ${r.error.value || ""}`));
  if (r.kernel_restarted) out.append(el("p", "muted", "The Python process was restarted: files are kept, variables are gone."));
  for (const d of r.display || []) out.append(displayNode(d.data || {}));
  if (r.message) out.append(el("p", "muted", r.message));
  if (r.reason) out.append(el("p", "muted", `reason: ${r.reason}`));
  for (const a of r.artifacts || []) out.append(artifactNode(a));
}

// displayNode shows a rich output: an image, HTML in a sandboxed frame
// (no scripts, no access to this page or its key), or plain text.
function displayNode(data) {
  const box = el("div", "display");
  if (data["image/png"]) {
    const img = el("img");
    img.alt = "display output";
    img.src = "data:image/png;base64," + data["image/png"];
    box.append(img);
  } else if (data["text/html"]) {
    const f = el("iframe");
    f.setAttribute("sandbox", "");
    f.title = "HTML output";
    f.srcdoc = data["text/html"];
    box.append(f);
  } else {
    box.append(el("pre", "stdout", data["text/plain"] || ""));
  }
  return box;
}

// parseSSE feeds each complete event of an SSE text buffer to onEvent(name,
// data) and returns what is left over.
function parseSSE(buf, onEvent) {
  let i;
  while ((i = buf.indexOf("\n\n")) >= 0) {
    const block = buf.slice(0, i);
    buf = buf.slice(i + 2);
    let name = "message", data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
    }
    if (data) onEvent(name, data);
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
      if (!last || last.className !== ev.kind) {
        last = el("pre", ev.kind);
        live.append(last);
      }
      last.append(document.createTextNode(ev.text || ""));
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
async function streamToolCall(path, body, onEvent, signal) {
  const res = await api("POST", path, { json: body, raw: true, signal, headers: { Accept: "text/event-stream" } });
  if (!(res.headers.get("Content-Type") || "").startsWith("text/event-stream")) return res.json();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "", final = null, failure = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf = parseSSE(buf + value, (name, data) => {
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

function addCell(lang, code) {
  const node = $("cell-template").content.firstElementChild.cloneNode(true);
  const ta = node.querySelector(".code");
  node.querySelector(".lang").value = lang || "python";
  ta.value = code || "";
  node.querySelector(".run").addEventListener("click", () => runCell(node));
  ta.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.shiftKey || ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      runCell(node);
    }
  });
  $("cells").append(node);
  return node;
}

async function runCell(node) {
  const btn = node.querySelector(".run");
  const status = node.querySelector(".cell-status");
  const out = node.querySelector(".output");
  const lang = node.querySelector(".lang").value;
  const code = node.querySelector(".code").value;
  btn.disabled = true;
  status.textContent = "running…";
  try {
    const tools = state.tools || (await loadTools());
    const tool = tools[lang];
    if (!tool) throw new Error(`no ${lang} tool on this server`);
    const s = await ensureSession();
    const args = {};
    args[tool.arg] = code;
    state.running = node;
    $("interrupt").disabled = false;
    const res = await streamToolCall(`/v1/sessions/${s.id}/tool-calls`,
      { type: "function", function: { name: tool.name, arguments: JSON.stringify(args) } }, liveOutput(out));
    renderResult(out, res.result, res.message.content);
    status.textContent = "";
    node.dataset.status = res.result.status;
    if (res.result.session_ended) sessionGone(new APIError(404, { error: { code: "not_found" } }));
    const cells = [...$("cells").children];
    if (cells[cells.length - 1] === node) addCell(lang, "");
  } catch (e) {
    sessionGone(e);
    status.textContent = "";
    out.replaceChildren(el("p", "error", explain(e)));
    node.dataset.status = "failed";
  } finally {
    btn.disabled = false;
    if (state.running === node) {
      state.running = null;
      $("interrupt").disabled = true;
    }
  }
}

// interruptSession stops the running cell (KeyboardInterrupt); the
// session keeps its variables.
async function interruptSession() {
  if (!state.session) return;
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
  } catch (e) {
    if (!sessionGone(e)) showAlert(explain(e));
  } finally {
    $("restart").disabled = false;
  }
}

// ---------- assistant ----------

async function uploadFiles(ev) {
  ev.preventDefault();
  const files = [...$("upload-files").files];
  if (!files.length) return;
  $("upload").disabled = true;
  try {
    const s = await ensureSession();
    for (const f of files) {
      if (state.info && f.size > state.info.max_upload_bytes) throw new Error(`${f.name} is over the upload limit`);
      await api("PUT", `/v1/sessions/${s.id}/files/${encodeURIComponent(f.name)}`, {
        body: f, headers: { "Content-Type": "application/octet-stream" },
      });
      $("uploaded").append(el("li", null, `${f.name} (${f.size} bytes)`));
    }
    $("upload-files").value = "";
    showAlert("");
  } catch (e) {
    if (!sessionGone(e)) showAlert(explain(e));
  } finally {
    $("upload").disabled = false;
  }
}

function setRunning(on) {
  $("ask").disabled = on;
  $("cancel").disabled = !on;
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
  $("steps").replaceChildren();
  $("final").hidden = true;
  $("run-status").textContent = "starting…";
  try {
    const s = await ensureSession();
    const view = await api("POST", "/v1/runs", { json: { goal, session_id: s.id } });
    state.run = { id: view.id, lastSeq: 0, done: false, steps: {}, abort: new AbortController() };
    $("run-status").textContent = view.status;
    await streamRun(state.run);
  } catch (e) {
    sessionGone(e);
    showAlert(explain(e));
  } finally {
    setRunning(false);
  }
}

// streamRun reads the run's SSE stream with fetch, resuming with
// Last-Event-ID after a dropped connection.
async function streamRun(run) {
  let failures = 0;
  while (!run.done && failures < 6) {
    try {
      const res = await api("GET", `/v1/runs/${run.id}/events`, {
        raw: true, signal: run.abort.signal, headers: run.lastSeq ? { "Last-Event-ID": String(run.lastSeq) } : {},
      });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          handleSSE(run, buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      }
      failures = 0;
      if (!run.done) {
        const v = await api("GET", `/v1/runs/${run.id}`);
        if (v.status !== "running" && v.status !== "waiting_approval") finishRun(run, v);
      }
    } catch (e) {
      if (run.abort.signal.aborted) return;
      if (e instanceof APIError && e.status !== 429 && e.status < 500) throw e;
      failures++;
      await new Promise((r) => setTimeout(r, 500 * failures));
    }
  }
}

function handleSSE(run, block) {
  let id = null, data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("id:")) id = parseInt(line.slice(3).trim(), 10);
    else if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  if (!data) return;
  let ev;
  try { ev = JSON.parse(data); } catch { return; }
  if (id !== null && id <= run.lastSeq) return;
  run.lastSeq = id !== null ? id : ev.seq;
  renderEvent(run, ev);
}

function stepBox(run, step) {
  if (!run.steps[step]) {
    const li = el("li", "step");
    li.append(el("h3", null, `Step ${step}`));
    $("steps").append(li);
    run.steps[step] = li;
  }
  return run.steps[step];
}

function argsOf(a) {
  if (typeof a === "string") {
    try { return JSON.parse(a); } catch { return { raw: a }; }
  }
  return a || {};
}

function renderEvent(run, ev) {
  const d = ev.data || {};
  switch (ev.type) {
    case "step_started":
      stepBox(run, ev.step);
      $("run-status").textContent = `step ${ev.step}`;
      break;
    case "assistant_message":
      if (d.content) stepBox(run, ev.step).append(el("p", "assistant", d.content));
      break;
    case "tool_call": {
      const box = stepBox(run, ev.step);
      const args = argsOf(d.arguments);
      const code = args.code || args.command || args.script || args.query;
      const call = el("div", "tool-call");
      call.dataset.callId = d.id || "";
      call.append(el("div", "tool-name", d.name || "tool"));
      if (typeof code === "string") call.append(highlight(code, (d.name || "").includes("shell") ? "shell" : "python"));
      else call.append(el("pre", "code-block", JSON.stringify(args, null, 2)));
      call.append(el("div", "output"));
      box.append(call);
      break;
    }
    case "tool_output": {
      // live output of a running tool call (stdout, stderr, display, artifact)
      const box = stepBox(run, ev.step);
      const call = [...box.querySelectorAll(".tool-call")].find((c) => c.dataset.callId === (d.id || ""));
      if (!call) break;
      const out = call.querySelector(".output");
      if (!out.live) out.live = liveOutput(out);
      out.live(d);
      break;
    }
    case "tool_result": {
      const box = stepBox(run, ev.step);
      let call = [...box.querySelectorAll(".tool-call")].find((c) => c.dataset.callId === (d.id || ""));
      if (!call) { call = el("div", "tool-call"); call.append(el("div", "output")); box.append(call); }
      const r = Object.assign({ status: d.status, duration_ms: d.duration_ms, reason: d.reason, artifacts: d.artifacts,
        stdout: d.stdout, stderr: d.stderr, exit_code: d.exit_code, truncated: d.truncated, error: d.error,
        display: d.display, dropped: d.dropped, execution_count: d.execution_count }, d.result || {});
      const out = call.querySelector(".output");
      out.live = null;
      renderResult(out, r, d.content);
      break;
    }
    case "approval_needed": {
      const box = stepBox(run, ev.step);
      const card = el("div", "approval");
      card.append(el("p", null, `The model wants to run ${d.name}. Approve?`));
      const args = argsOf(d.arguments);
      const code = args.code || args.command;
      card.append(typeof code === "string" ? highlight(code, (d.name || "").includes("shell") ? "shell" : "python") : el("pre", "code-block", JSON.stringify(args, null, 2)));
      const yes = el("button", "approve", "Approve");
      const no = el("button", "reject", "Reject");
      const decide = async (approve) => {
        yes.disabled = no.disabled = true;
        try {
          await api("POST", `/v1/runs/${run.id}/approvals/${encodeURIComponent(d.token)}`, { json: { approve, reason: approve ? "" : "rejected in the web UI" } });
          card.append(el("p", "muted", approve ? "approved" : "rejected"));
        } catch (e) {
          yes.disabled = no.disabled = false;
          showAlert(explain(e));
        }
      };
      yes.addEventListener("click", () => decide(true));
      no.addEventListener("click", () => decide(false));
      card.append(yes, no);
      box.append(card);
      yes.focus();
      break;
    }
    case "final_answer":
      stepBox(run, ev.step).append(el("p", "muted", "Final answer given (below)."));
      $("final-text").replaceChildren(...String(d.content || "").split(/\n{2,}/).map((p) => el("p", null, p)));
      $("final").hidden = false;
      break;
    case "error":
      stepBox(run, ev.step || 0).append(el("p", "error", d.message || "error"));
      break;
    case "run_finished":
      finishRun(run, d);
      break;
  }
}

function finishRun(run, v) {
  run.done = true;
  $("run-status").textContent = `finished: ${v.status}${v.error ? " — " + v.error : ""}`;
  if (v.final_answer && $("final").hidden) {
    $("final-text").replaceChildren(el("p", null, v.final_answer));
    $("final").hidden = false;
  }
}

async function cancelRun() {
  const run = state.run;
  if (!run || run.done) return;
  try {
    const v = await api("POST", `/v1/runs/${run.id}/cancel`);
    $("run-status").textContent = v.status;
  } catch (e) {
    showAlert(explain(e));
  }
}

// ---------- start ----------

async function init() {
  initTabs();
  initKeyDialog();
  initSessionBar();
  $("upload-form").addEventListener("submit", uploadFiles);
  $("ask-form").addEventListener("submit", ask);
  $("question").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) $("ask-form").requestSubmit();
  });
  $("cancel").addEventListener("click", cancelRun);
  $("interrupt").addEventListener("click", interruptSession);
  $("restart").addEventListener("click", restartSession);
  $("add-cell").addEventListener("click", () => addCell("python", "").querySelector(".code").focus());
  addCell("python", "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9, 16])\nplt.title('squares')\nplt.show()");
  try {
    state.info = await (await fetch("/v1/info")).json();
  } catch (e) {
    showAlert("Cannot reach the server: " + explain(e));
    return;
  }
  $("model-banner").hidden = !!state.info.model_configured;
  $("key-button").hidden = !state.info.auth_required;
  if (state.info.auth_required && !state.key) await askKey();
  loadTools().catch((e) => showAlert(explain(e)));
  document.body.dataset.ready = "true";
}

init();
