// Airlock web UI, the Sessions dialog (issues 30 and 32): the caller's
// sessions (GET /v1/sessions) with their state (hibernated ones included),
// environment and last use, each with Open, Fork, Export notebook,
// Snapshot and Close; and the caller's snapshots (GET /v1/snapshots), each
// with Restore (a new session from it) and Delete. Uses $, api, el,
// humanSize, download, explain, setSession, resetCells, openSession,
// loadNotebook and state of app.js, loaded after this file.
"use strict";

// sessionStates labels a session's state for a person.
const sessionStates = {
  idle: "idle",
  busy: "running a call",
  hibernated: "hibernated (saved; wakes on its next use)",
  unknown: "state unknown",
};

// ago is how long ago t was, in words.
function ago(t) {
  const ms = Date.now() - new Date(t).getTime();
  if (!(ms >= 0)) return "";
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(t).toLocaleString();
}

// sessionsNote shows what the last action did, in the dialog.
function sessionsNote(text, cls) {
  const n = $("sessions-note");
  n.textContent = text;
  n.className = cls || "muted";
}

// button makes a dialog button.
function dlgButton(text, cls, onClick, title) {
  const b = el("button", cls, text);
  b.type = "button";
  if (title) b.title = title;
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      await onClick();
    } catch (e) {
      sessionsNote(explain(e), "error");
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

// copyNotebook gives session to the cells of session from (a fork starts
// with the same notebook); best effort: the fork works without.
async function copyNotebook(from, to) {
  try {
    const nb = await api("GET", `/v1/sessions/${from}/notebook`);
    if (nb && nb.cells && nb.cells.length) await api("PUT", `/v1/sessions/${to}/notebook`, { json: { cells: nb.cells, version: 0 } });
  } catch (e) {
    // no notebook saved for the original: the fork starts empty
  }
}

// useSession makes s the notebook's session and shows its cells.
async function useSession(s) {
  $("sessions-dialog").close();
  resetCells();
  setSession(s);
  await loadNotebook();
  state.selectTab("notebook");
}

function sessionItem(s) {
  const li = el("li", "session-item");
  li.dataset.id = s.id;
  li.dataset.state = s.state || "";
  const current = s.id === (state.session && state.session.id);
  const head = el("div", "session-head");
  head.append(el("code", "session-id", s.id));
  const st = s.state || "";
  if (st) head.append(el("span", `badge session-state state-${st}`, sessionStates[st] || st));
  if (current) head.append(el("span", "badge", "current"));
  const meta = el("p", "muted session-meta",
    `${s.environment || "python"} · last used ${ago(s.last_used || s.created)} · created ${new Date(s.created).toLocaleString()}`);
  const actions = el("div", "row session-actions");
  actions.append(
    dlgButton(current ? "Current" : "Open", null, async () => {
      $("sessions-dialog").close();
      await openSession(s.id);
      state.selectTab("notebook");
    }),
    dlgButton("Fork", "session-fork", async () => {
      sessionsNote(`Forking ${s.id}…`);
      const f = await api("POST", `/v1/sessions/${s.id}/fork`);
      await copyNotebook(s.id, f.id);
      const skipped = ((f.restored && f.restored.skipped) || []).map((k) => k.name);
      sessionsNote(`Forked into ${f.id}` + (skipped.length ? ` (not copied: ${skipped.join(", ")})` : "") + ".");
      await loadSessions();
    }, "A new session with the same variables, files and cells, independent afterwards"),
    dlgButton("Export notebook", "session-export", () => download(`/v1/sessions/${s.id}/notebook.ipynb`, `${s.id}.ipynb`),
      "Download the session's calls and outputs as a Jupyter notebook (.ipynb)"),
    dlgButton("Snapshot", "session-snapshot", async () => {
      sessionsNote(`Saving a snapshot of ${s.id}…`);
      const r = await api("POST", `/v1/sessions/${s.id}/snapshot`);
      const skipped = (r.skipped || []).map((k) => `${k.name} (${k.type})`);
      sessionsNote(`Snapshot ${r.snapshot_id} saved, ${humanSize(r.bytes)}` + (skipped.length ? `; not saved: ${skipped.join(", ")}` : "") + ".");
      await loadSnapshots();
    }, "Save the variables and files; restore them later into a new session"),
    dlgButton("Close", "reject session-close", async () => {
      await api("DELETE", `/v1/sessions/${s.id}`);
      localStorage.removeItem("airlock.nb." + s.id);
      if (state.session && state.session.id === s.id) { setSession(null); resetCells(); }
      li.remove();
      sessionsNote(`Closed ${s.id}.`);
    }),
  );
  li.append(head, meta, actions);
  return li;
}

// loadSessions lists the caller's sessions in the dialog.
async function loadSessions() {
  const list = $("sessions-list");
  try {
    const data = await api("GET", "/v1/sessions");
    const ss = (data.sessions || []).slice().sort((a, b) => new Date(b.last_used || b.created) - new Date(a.last_used || a.created));
    list.replaceChildren(...ss.map(sessionItem));
    if (!ss.length) list.append(el("li", "muted", "No open sessions."));
  } catch (e) {
    list.replaceChildren(el("li", "error", explain(e)));
  }
}

function snapshotItem(p) {
  const li = el("li", "snapshot-item");
  li.dataset.id = p.snapshot_id;
  const head = el("div", "session-head");
  head.append(el("code", "session-id", p.snapshot_id));
  const names = p.names || [];
  const meta = el("p", "muted session-meta",
    `of ${p.session_id} · ${p.environment || "python"} · ${humanSize(p.bytes)} · ${new Date(p.created).toLocaleString()}` +
    (names.length ? ` · ${names.slice(0, 8).join(", ")}${names.length > 8 ? "…" : ""}` : ""));
  const actions = el("div", "row session-actions");
  actions.append(
    dlgButton("Restore", "snapshot-restore", async () => {
      sessionsNote(`Restoring ${p.snapshot_id}…`);
      const s = await api("POST", "/v1/sessions", { json: { snapshot: p.snapshot_id, restore: "namespace" } });
      await copyNotebook(p.session_id, s.id);
      await useSession(s);
    }, "Open a new session with this snapshot's variables and files"),
    dlgButton("Delete", "reject snapshot-delete", async () => {
      await api("DELETE", `/v1/snapshots/${p.snapshot_id}`);
      li.remove();
    }),
  );
  li.append(head, meta, actions);
  return li;
}

// loadSnapshots lists the caller's snapshots in the dialog.
async function loadSnapshots() {
  const list = $("snapshots-list");
  try {
    const data = await api("GET", "/v1/snapshots");
    const ps = (data.snapshots || []).slice().sort((a, b) => new Date(b.created) - new Date(a.created));
    list.replaceChildren(...ps.map(snapshotItem));
    if (!ps.length) list.append(el("li", "muted", "No snapshots. Snapshot a session to keep its state past its end."));
  } catch (e) {
    list.replaceChildren(el("li", "muted", "Snapshots are not available: " + explain(e)));
  }
}

// openSessions shows the dialog and loads both lists.
async function openSessions() {
  $("sessions-list").replaceChildren(el("li", "muted", "Loading…"));
  $("snapshots-list").replaceChildren();
  sessionsNote("");
  $("sessions-dialog").showModal();
  await Promise.all([loadSessions(), loadSnapshots()]);
}
