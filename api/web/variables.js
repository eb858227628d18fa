// Airlock web UI, the variable panel (issue 32): the notebook session's
// globals with type, shape and size (GET /v1/sessions/{id}/variables,
// answered by the kernel between calls without changing anything),
// refreshed after each cell and each assistant run. Uses $, api, el,
// humanSize, explain and state of app.js, loaded after this file.
"use strict";

let varsToken = 0;

// varShape is a shape as Python prints a tuple: (5, 1), (3,).
function varShape(v) {
  if (!v.shape) return "";
  return v.shape.length === 1 ? `(${v.shape[0]},)` : `(${v.shape.join(", ")})`;
}

// refreshVariables lists the notebook session's variables; a listing under
// way for an earlier session or refresh never lands.
async function refreshVariables() {
  const s = state.session;
  const my = ++varsToken;
  const body = $("vars").tBodies[0];
  const note = $("vars-status");
  if (!s) {
    body.replaceChildren();
    note.textContent = "No session yet.";
    return;
  }
  if (s.state === "hibernated") {
    // Asking would wake it: the list comes with its next cell.
    body.replaceChildren();
    note.textContent = "The session is hibernated: its variables show after its next cell.";
    return;
  }
  note.textContent = "Loading…";
  try {
    const r = await api("GET", `/v1/sessions/${s.id}/variables`);
    if (my !== varsToken || !state.session || state.session.id !== s.id) return;
    body.replaceChildren();
    for (const v of r.variables) {
      const tr = el("tr");
      tr.dataset.name = v.name;
      const name = el("td", "var-name");
      name.append(el("code", null, v.name));
      if (v.summary) name.title = v.summary;
      const type = el("td", null, v.module ? `${v.type}` : v.type);
      if (v.module) type.title = `${v.module}.${v.type}`;
      tr.append(name, type, el("td", "var-shape", varShape(v)), el("td", "var-size", v.size === null ? "" : humanSize(v.size)));
      for (const [i, label] of ["Name", "Type", "Shape", "Size"].entries()) tr.children[i].dataset.label = label;
      body.append(tr);
    }
    note.textContent = r.variables.length ? (r.more ? `${r.more} more not listed.` : "") : "No variables yet.";
  } catch (e) {
    if (my !== varsToken) return;
    body.replaceChildren();
    note.textContent = "Could not list variables: " + explain(e);
  }
}

function initVariables() {
  $("vars-refresh").addEventListener("click", refreshVariables);
}
