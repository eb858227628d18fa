// Airlock web UI, the Batches view: the caller's batches with live
// progress (the batch's SSE stream, read with fetch so the API key travels;
// polling when a stream is not open), submitting a JSONL file (picker or
// drag and drop), per-item drill-down, cancel, retry of failed items and
// downloads of results, errors and the HTML report.
// Uses the helpers of app.js ($, api, el, download, statusBadge,
// renderResult, markdown, fmtDuration, parseSSE, explain, updateURL), which
// loads after this file; they are only called once the page has started.
"use strict";

const BATCH_STREAMS = 3; // SSE streams open at once; more batches are polled
const BATCH_POLL_MS = 2000;
const ITEMS_SHOWN = 1000; // result lines read for the drill-down table

const batchUI = {
  visible: false,
  list: new Map(), // id → batch, as last seen
  streams: new Map(), // id → AbortController of its events stream
  unstreamed: new Set(), // ids whose stream was refused: polled instead
  poll: null,
  open: null, // the batch shown in the detail pane
  itemsTimer: null,
  itemsToken: 0,
  lines: [], // the detail pane's result lines
  item: null, // custom_id of the item shown
  file: null, // the JSONL file chosen or dropped
};

function batchEnded(b) {
  return ["completed", "failed", "cancelled", "expired"].includes(b.status);
}

function batchCounts(b) {
  const c = b.request_counts || {};
  const total = c.total || 0, ok = c.completed || 0, failed = c.failed || 0;
  return { total, ok, failed, done: ok + failed };
}

function countsText(b) {
  const c = batchCounts(b);
  const pct = c.total ? Math.floor((100 * c.done) / c.total) : 0;
  return `${c.done} of ${c.total} done (${pct}%) · ${c.ok} ok · ${c.failed} failed`;
}

function progressBar(b) {
  const c = batchCounts(b);
  const bar = el("progress");
  bar.max = c.total || 1;
  bar.value = c.done;
  bar.setAttribute("aria-label", `${c.done} of ${c.total} items done`);
  return bar;
}

function cell(label, ...nodes) {
  const td = el("td");
  td.dataset.label = label;
  td.append(...nodes);
  return td;
}

// ---------- list ----------

function showBatches() {
  batchUI.visible = true;
  loadBatches();
}

// hideBatches closes the streams and stops polling when the view is left.
function hideBatches() {
  batchUI.visible = false;
  for (const c of batchUI.streams.values()) c.abort();
  batchUI.streams.clear();
  clearInterval(batchUI.poll);
  batchUI.poll = null;
}

async function loadBatches(quiet) {
  const status = $("batches-status");
  if (quiet !== true) status.textContent = "loading…";
  try {
    const data = await api("GET", "/v1/batches");
    const list = data.data || [];
    const body = $("batches").querySelector("tbody");
    const rows = new Map([...body.children].map((tr) => [tr.dataset.batchId, tr]));
    body.replaceChildren(...list.map((b) => rows.get(b.id) || el("tr", "batch")));
    list.forEach((b) => updateBatch(b));
    status.textContent = list.length ? "" : "No batches yet: submit a JSONL file above.";
    followRunning();
  } catch (e) {
    status.textContent = e instanceof APIError && e.status === 503 ? "This server has no batches (no state store)." : explain(e);
  }
}

// batchStage orders what one batch goes through: a later attempt (a
// retry), then a later status, then more items done.
function batchStage(b) {
  const rank = { validating: 0, in_progress: 1, finalizing: 2, cancelling: 2 }[b.status] ?? 3;
  return [b.attempt || 0, rank, batchCounts(b).done];
}

// isStale tells whether b is older than before: a list or record answer
// that left the server before a streamed snapshot but arrived after it.
function isStale(b, before) {
  if (!before) return false;
  const x = batchStage(b), y = batchStage(before);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i];
  return false;
}

// updateBatch records b and shows it in its row and, when open, the
// detail pane; a change of its counts reloads the open item table. An
// answer older than what is shown yields to it: the stream sends a
// snapshot only when counts change, so nothing would correct it.
function updateBatch(b) {
  const before = batchUI.list.get(b.id);
  if (isStale(b, before)) b = before;
  batchUI.list.set(b.id, b);
  const tr = $("batches").querySelector(`tr[data-batch-id="${CSS.escape(b.id)}"]`) || $("batches").querySelector("tbody tr:not([data-batch-id])");
  if (tr) fillRow(tr, b);
  if (batchUI.open !== b.id) return;
  showDetailHead(b);
  const changed = !before || before.status !== b.status || countsText(before) !== countsText(b);
  if (changed) scheduleItems();
}

function fillRow(tr, b) {
  tr.dataset.batchId = b.id;
  tr.dataset.status = b.status;
  tr.classList.toggle("selected", batchUI.open === b.id);
  const open = el("button", "link", b.id);
  open.type = "button";
  open.title = "Show the items of this batch";
  open.addEventListener("click", () => openBatch(b.id));
  const created = el("time", null, b.created_at ? new Date(b.created_at * 1000).toLocaleString() : "");
  if (b.created_at) created.dateTime = new Date(b.created_at * 1000).toISOString();
  const actions = [];
  if (!batchEnded(b)) actions.push(cancelButton(b, "Cancel"));
  if (batchEnded(b) && batchCounts(b).failed > 0) actions.push(retryButton(b, "Retry failed"));
  tr.replaceChildren(
    cell("Batch", open),
    cell("Created", created),
    cell("Status", statusBadge(b.status)),
    cell("Progress", progressBar(b), el("span", "counts", " " + countsText(b))),
    cell("Actions", ...actions),
  );
}

function cancelButton(b, label) {
  const btn = el("button", "reject batch-cancel", b.status === "cancelling" ? "Cancelling…" : label);
  btn.type = "button";
  btn.disabled = b.status === "cancelling";
  btn.addEventListener("click", () => cancelBatch(b.id));
  return btn;
}

function retryButton(b, label) {
  const btn = el("button", "batch-retry", label);
  btn.type = "button";
  btn.addEventListener("click", () => retryBatch(b.id));
  return btn;
}

async function cancelBatch(id) {
  for (const b of document.querySelectorAll(`tr[data-batch-id="${CSS.escape(id)}"] .batch-cancel`)) { b.disabled = true; b.textContent = "Cancelling…"; }
  if (batchUI.open === id) $("batch-cancel").disabled = true;
  try {
    updateBatch(await api("POST", `/v1/batches/${encodeURIComponent(id)}/cancel`));
    followBatch(id);
  } catch (e) {
    showAlert(explain(e));
    const b = batchUI.list.get(id);
    if (b) updateBatch(b);
  }
}

async function retryBatch(id) {
  if (batchUI.open === id) $("batch-retry").disabled = true;
  try {
    updateBatch(await api("POST", `/v1/batches/${encodeURIComponent(id)}/retry`));
    batchUI.unstreamed.delete(id);
    followBatch(id);
    ensurePoll();
  } catch (e) {
    showAlert(explain(e));
    const b = batchUI.list.get(id);
    if (b) updateBatch(b);
  }
}

// followRunning opens streams for running batches (up to BATCH_STREAMS)
// and polls while any running batch has none.
function followRunning() {
  for (const b of batchUI.list.values()) if (!batchEnded(b)) followBatch(b.id);
  ensurePoll();
}

function ensurePoll() {
  const unfollowed = [...batchUI.list.values()].some((b) => !batchEnded(b) && !batchUI.streams.has(b.id));
  if (unfollowed && batchUI.visible && !batchUI.poll) {
    batchUI.poll = setInterval(() => loadBatches(true), BATCH_POLL_MS);
  } else if (!unfollowed && batchUI.poll) {
    clearInterval(batchUI.poll);
    batchUI.poll = null;
  }
}

// followBatch reads /v1/batches/{id}/events until the batch ends,
// resuming with Last-Event-ID when the stream is cut.
async function followBatch(id) {
  if (!batchUI.visible || batchUI.streams.has(id) || batchUI.unstreamed.has(id) || batchUI.streams.size >= BATCH_STREAMS) return;
  const ctrl = new AbortController();
  batchUI.streams.set(id, ctrl);
  let last = 0, ended = false, failures = 0;
  try {
    while (!ended && !ctrl.signal.aborted) {
      if (failures >= 3) {
        batchUI.unstreamed.add(id); // the poll takes over
        break;
      }
      try {
        const res = await api("GET", `/v1/batches/${encodeURIComponent(id)}/events`, {
          raw: true, signal: ctrl.signal, headers: last ? { "Last-Event-ID": String(last) } : {},
        });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf = parseSSE(buf + value, (name, data, seq) => {
            if (name === "done") { ended = true; return; }
            if (name !== "progress") return;
            if (seq) last = parseInt(seq, 10) || last;
            let b;
            try { b = JSON.parse(data); } catch { return; }
            if (b && b.id === id) updateBatch(b);
            if (batchEnded(b)) ended = true;
          });
        }
        failures = 0;
      } catch (e) {
        if (ctrl.signal.aborted) return;
        if (e instanceof APIError && e.status !== 429 && e.status < 500) {
          batchUI.unstreamed.add(id);
          return;
        }
        failures++;
        await new Promise((r) => setTimeout(r, 500 * failures));
      }
    }
    if (ended && !ctrl.signal.aborted) {
      // The last snapshot may predate the final counts: read the record.
      updateBatch(await api("GET", `/v1/batches/${encodeURIComponent(id)}`));
    }
  } catch (e) {
    if (!ctrl.signal.aborted) showAlert(explain(e));
  } finally {
    if (batchUI.streams.get(id) === ctrl) batchUI.streams.delete(id);
    if (!ctrl.signal.aborted) {
      followRunning(); // a slot is free: another running batch may take it
    }
  }
}

// ---------- submitting ----------

function chooseBatchFile(f) {
  batchUI.file = f || null;
  const st = $("batch-submit-status");
  st.className = "";
  st.textContent = f ? `${f.name} (${humanSize(f.size)}) ready to submit` : "";
}

async function submitBatch(ev) {
  ev.preventDefault();
  const f = batchUI.file || $("batch-file").files[0];
  const st = $("batch-submit-status");
  if (!f) {
    st.className = "error";
    st.textContent = "Choose or drop a JSONL file first.";
    return;
  }
  if (state.info && state.info.max_upload_bytes && f.size > state.info.max_upload_bytes) {
    st.className = "error";
    st.textContent = `${f.name} (${humanSize(f.size)}) is over the upload limit of ${humanSize(state.info.max_upload_bytes)}`;
    return;
  }
  const form = new FormData();
  form.append("file", f, f.name);
  const conc = $("batch-concurrency").value.trim();
  $("batch-submit").disabled = true;
  st.className = "muted";
  st.textContent = `submitting ${f.name}…`;
  try {
    const b = await api("POST", "/v1/batches" + (conc ? `?concurrency=${encodeURIComponent(conc)}` : ""), { body: form });
    st.className = "status-completed";
    st.textContent = `Batch ${b.id} created with ${batchCounts(b).total} items.`;
    $("batch-file").value = "";
    batchUI.file = null;
    batchUI.list.set(b.id, b);
    await loadBatches(true);
    openBatch(b.id);
  } catch (e) {
    st.className = "error";
    st.textContent = `${f.name} was refused: ${explain(e)}`;
  } finally {
    $("batch-submit").disabled = false;
  }
}

function initBatchDrop() {
  const dz = $("batch-form");
  const on = (ev) => { ev.preventDefault(); dz.classList.add("over"); };
  const off = () => dz.classList.remove("over");
  dz.addEventListener("dragover", on);
  dz.addEventListener("dragenter", on);
  dz.addEventListener("dragleave", off);
  dz.addEventListener("drop", (ev) => {
    ev.preventDefault();
    off();
    const files = ev.dataTransfer ? [...ev.dataTransfer.files] : [];
    if (files.length !== 1) {
      $("batch-submit-status").className = "error";
      $("batch-submit-status").textContent = "Drop one JSONL file.";
      return;
    }
    chooseBatchFile(files[0]);
  });
}

// ---------- drill-down ----------

async function openBatch(id) {
  batchUI.open = id;
  batchUI.item = null;
  $("batch-item").hidden = true;
  $("batch-detail").hidden = false;
  $("batch-title").textContent = `Batch ${id}`;
  for (const tr of $("batches").querySelectorAll("tbody tr")) tr.classList.toggle("selected", tr.dataset.batchId === id);
  updateURL();
  try {
    const b = await api("GET", `/v1/batches/${encodeURIComponent(id)}`);
    if (batchUI.open !== id) return;
    updateBatch(b);
    showDetailHead(b);
    loadItems();
    if (!batchEnded(b)) followBatch(id);
  } catch (e) {
    $("batch-note").textContent = explain(e);
  }
  $("batch-detail").scrollIntoView({ block: "start" });
}

function closeBatch() {
  batchUI.open = null;
  $("batch-detail").hidden = true;
  for (const tr of $("batches").querySelectorAll("tbody tr.selected")) tr.classList.remove("selected");
  updateURL();
}

function showDetailHead(b) {
  $("batch-detail").dataset.status = b.status;
  $("batch-status-badge").replaceChildren(statusBadge(b.status));
  const c = batchCounts(b);
  const bar = $("batch-bar");
  bar.max = c.total || 1;
  bar.value = c.done;
  bar.setAttribute("aria-label", `${c.done} of ${c.total} items done`);
  $("batch-counts").textContent = countsText(b);
  const notes = {
    validating: "Checking the items…",
    in_progress: `Running, ${b.concurrency || "?"} at a time.`,
    finalizing: "Writing the results…",
    cancelling: "Cancel requested: running items are being stopped and queued ones dropped.",
    cancelled: "Cancelled: items that had not finished are marked cancelled.",
    expired: "The completion window passed before every item ran.",
    completed: c.failed ? `Finished; ${c.failed} failed — Retry failed reruns only those.` : "Finished.",
    failed: "The batch failed.",
  };
  $("batch-note").textContent = notes[b.status] || "";
  const cancel = $("batch-cancel");
  cancel.disabled = batchEnded(b) || b.status === "cancelling";
  cancel.textContent = b.status === "cancelling" ? "Cancelling…" : "Cancel batch";
  cancel.hidden = batchEnded(b);
  $("batch-retry").disabled = !(batchEnded(b) && c.failed > 0);
}

function scheduleItems() {
  clearTimeout(batchUI.itemsTimer);
  batchUI.itemsTimer = setTimeout(loadItems, 250);
}

// readLines reads at most max JSONL lines of url, then stops the download.
async function readLines(url, max) {
  const res = await api("GET", url, { raw: true });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const out = [];
  let buf = "", more = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      try { out.push(JSON.parse(line)); } catch { /* a partial line */ }
    }
    if (out.length >= max) { more = true; reader.cancel().catch(() => {}); break; }
  }
  if (buf.trim() && out.length < max) {
    try { out.push(JSON.parse(buf)); } catch { /* cut */ }
  }
  return { lines: out.slice(0, max), more };
}

async function loadItems() {
  const id = batchUI.open;
  if (!id) return;
  const my = ++batchUI.itemsToken;
  const errorsOnly = $("batch-errors-only").checked;
  const st = $("batch-items-status");
  try {
    const { lines, more } = await readLines(`/v1/batches/${encodeURIComponent(id)}/results${errorsOnly ? "?view=errors" : ""}`, ITEMS_SHOWN);
    if (my !== batchUI.itemsToken) return;
    batchUI.lines = lines;
    const body = $("batch-items").querySelector("tbody");
    const byID = new Intl.Collator(undefined, { numeric: true });
    body.replaceChildren(...[...lines].sort((a, c) => byID.compare(a.custom_id, c.custom_id)).map(itemRow));
    const b = batchUI.list.get(id);
    const pending = b ? batchCounts(b).total - batchCounts(b).done : 0;
    let text = `${lines.length}${more ? "+" : ""} ${errorsOnly ? "failed " : ""}item${lines.length === 1 ? "" : "s"}`;
    if (more) text += ` (the first ${ITEMS_SHOWN}; download results.jsonl for all)`;
    if (b && !batchEnded(b) && pending > 0) text += ` · ${pending} still running or queued`;
    if (!lines.length) text = errorsOnly ? "No failed items." : "No results yet.";
    st.textContent = text;
    if (batchUI.item) {
      const l = lines.find((x) => x.custom_id === batchUI.item);
      if (l) showItem(l);
    }
  } catch (e) {
    if (my === batchUI.itemsToken) st.textContent = explain(e);
  }
}

// preview is an item's output in one line: the first line of stdout (or
// the answer, or the error), and for a failure the last line of stderr
// (where Python names the exception).
function preview(l) {
  const lines = (t) => String(t || "").split("\n").filter((x) => x.trim());
  let first = "";
  if (l.status !== "ok" && lines(l.stderr).length && !l.stdout) first = lines(l.stderr).pop();
  else first = lines(l.stdout || l.final_answer || (l.error && l.error.message) || l.message || l.stderr)[0] || "";
  return first.length > 80 ? first.slice(0, 79) + "…" : first;
}

function itemRow(l) {
  const tr = el("tr", "batch-item");
  tr.dataset.customId = l.custom_id;
  tr.dataset.status = l.status;
  const open = el("button", "link", l.custom_id);
  open.type = "button";
  open.title = "Show this item's full result";
  open.addEventListener("click", () => showItem(l));
  const exit = l.exit_code === undefined || l.exit_code === null ? "" : String(l.exit_code);
  const code = String(l.code || "").split("\n").find((x) => x.trim()) || "";
  const codeCell = el("code", "item-code-preview", code.length > 60 ? code.slice(0, 59) + "…" : code);
  if (l.code) codeCell.title = l.code;
  tr.append(
    cell("Item", open),
    cell("Code", codeCell),
    cell("Status", statusBadge(l.status)),
    cell("Duration", el("span", "duration", l.duration_ms !== undefined ? fmtDuration(l.duration_ms) : "")),
    cell("Exit", el("span", "exit-code", exit)),
    cell("Output", el("code", "preview", preview(l))),
  );
  return tr;
}

function showItem(l) {
  batchUI.item = l.custom_id;
  const box = $("batch-item");
  box.hidden = false;
  box.dataset.customId = l.custom_id;
  $("batch-item-title").textContent = `Item ${l.custom_id}` + (l.attempt > 1 ? ` (attempt ${l.attempt})` : "");
  const body = $("batch-item-body");
  renderResult(body, l, "", "");
  if (l.code) {
    // What the item ran: a tool call's code, or a run's goal.
    const code = el("details", "item-code");
    code.open = true;
    const run = !!l.run_id;
    code.append(el("summary", null, run ? "Goal" : "Code"), run ? el("pre", "code-block", l.code) : highlight(l.code, "python"));
    body.prepend(code);
  }
  if (l.error && l.error.message) body.append(el("p", "error item-error", `${l.error.code || "error"}: ${l.error.message}`));
  if (l.final_answer) body.append(markdown(l.final_answer));
  if (l.run_id) body.append(el("p", "muted", `run ${l.run_id}`));
  const raw = el("details", "raw");
  raw.append(el("summary", null, "Result line (JSON)"), el("pre", "raw-json", JSON.stringify(l, null, 2)));
  body.append(raw);
  for (const tr of $("batch-items").querySelectorAll("tbody tr")) tr.classList.toggle("selected", tr.dataset.customId === l.custom_id);
  box.scrollIntoView({ block: "nearest" });
}

function initBatches() {
  $("batches-refresh").addEventListener("click", () => loadBatches());
  $("batch-form").addEventListener("submit", submitBatch);
  $("batch-file").addEventListener("change", () => chooseBatchFile($("batch-file").files[0]));
  initBatchDrop();
  $("batch-close").addEventListener("click", closeBatch);
  $("batch-item-close").addEventListener("click", () => { batchUI.item = null; $("batch-item").hidden = true; });
  $("batch-errors-only").addEventListener("change", loadItems);
  $("batch-cancel").addEventListener("click", () => batchUI.open && cancelBatch(batchUI.open));
  $("batch-retry").addEventListener("click", () => batchUI.open && retryBatch(batchUI.open));
  const dl = (suffix, name) => () => {
    const id = batchUI.open;
    if (id) download(`/v1/batches/${encodeURIComponent(id)}/${suffix}`, `${id}-${name}`);
  };
  $("batch-dl-results").addEventListener("click", dl("results", "results.jsonl"));
  $("batch-dl-errors").addEventListener("click", dl("errors", "errors.jsonl"));
  $("batch-dl-report").addEventListener("click", dl("report", "report.html"));
}
