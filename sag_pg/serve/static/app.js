// The sag-pg web page: plain JavaScript over the REST API (no build step, no CDN). Views by URL hash:
//   #/search?q=…&strategy=…&source=…   #/doc?source=…&uri=…   #/entity?source=…&name=…
//   #/communities?source=…             #/ingest
"use strict";

const view = document.getElementById("view");
let service = { allow_writes: false, sources: null };

function esc(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function token() { return localStorage.getItem("sag-pg-token") || ""; }

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (token()) headers.Authorization = "Bearer " + token();
  const response = await fetch(path, Object.assign({}, options, { headers }));
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) {
    document.getElementById("token-dialog").hidden = false;
    throw new Error("this server needs its API token");
  }
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}

function params() {
  const hash = location.hash.slice(1) || "/";
  const [route, query] = hash.split("?");
  return [route, new URLSearchParams(query || "")];
}

function go(route, values) { location.hash = route + "?" + new URLSearchParams(values).toString(); }

function currentSource() { return document.getElementById("source").value; }

function keyChip(key, source) {
  const name = key.name ?? key.value;
  const href = "#/entity?" + new URLSearchParams({ source, name }).toString();
  return `<a class="key" data-type="${esc(key.type)}" href="${href}" title="${esc(key.type)}">${esc(name)}</a>`;
}

function fail(error) { view.innerHTML = `<p class="error">Error: ${esc(error.message)}</p>`; }

// -- search ------------------------------------------------------------------------------------------

async function showSearch(p) {
  const q = p.get("q"), strategy = p.get("strategy") || "sag", source = p.get("source") || currentSource();
  document.getElementById("q").value = q || "";
  document.getElementById("strategy").value = strategy;
  if (!q) return;
  view.innerHTML = `<p class="muted">Searching…</p>`;
  const query = new URLSearchParams({ q, strategy, top_n: "10" });
  if (source) query.set("source", source);
  const data = await api("search?" + query.toString());
  if (strategy === "local") return showLocal(data, source);
  const steps = (data.keys || []).map((k) => `${esc(k.name)} <span class="muted">(${esc(k.type)}, hop ${k.step}, ${(+k.weight).toFixed(3)})</span>`);
  // As the CLI prints them: passages that scored 0 are not shown, only counted.
  const zero = data.chunks.filter((hit) => !(+hit.score > 0)).length;
  data.chunks = data.chunks.filter((hit) => +hit.score > 0);
  let html = `<p class="muted">${data.chunks.length} relevant passage${data.chunks.length === 1 ? "" : "s"}` + (zero ? ` (the other ${zero} found scored 0)` : "") +
    (steps.length ? ` · keys followed: ${steps.slice(0, 12).join(", ")}` : "") + `</p>`;
  if (!data.chunks.length) html += `<p>No relevant passage.</p>`;
  data.chunks.forEach((hit, n) => {
    const docHref = "#/doc?" + new URLSearchParams({ source, uri: hit.document_uri }).toString();
    const e = hit.explain || {};
    const via = [e.via_keys && "keys", e.via_vector && "vector", e.via_text && "words"].filter(Boolean).join(" + ");
    html += `<article class="hit" data-rank="${n + 1}">
      <h3><span class="score">${(+hit.score).toFixed(4)}</span><a href="${docHref}">${esc(hit.document_title || hit.document_uri)}</a></h3>
      <div class="meta">${esc(hit.document_uri)} · ${esc(hit.title)} · chunk ${hit.chunk_id}</div>
      <div class="text">${esc(hit.content)}</div>
      <div class="trail">found via ${esc(via || "-")}${e.direct_match ? " · the question names one of its keys" : ""}</div>
      <div class="keys">${(hit.keys || []).slice(0, 12).map((k) => keyChip(k, source)).join("")}</div>
    </article>`;
  });
  view.innerHTML = html;
}

function showLocal(data, source) {
  let html = `<h2>GraphRAG local context</h2>`;
  for (const [name, rows] of Object.entries(data.tables || {})) {
    if (!Array.isArray(rows) || !rows.length) continue;
    const cols = Object.keys(rows[0]);
    html += `<h3>${esc(name)}</h3><table><tr>${cols.map((c) => `<th>${esc(c)}</th>`).join("")}</tr>` +
      rows.map((r) => `<tr>${cols.map((c) => `<td>${esc(typeof r[c] === "object" ? JSON.stringify(r[c]) : r[c])}</td>`).join("")}</tr>`).join("") + `</table>`;
  }
  if (!data.tables) html += `<pre class="text">${esc(data.context_text || "no context")}</pre>`;
  view.innerHTML = html;
}

// -- a document ----------------------------------------------------------------------------------------

async function showDocument(p) {
  const source = p.get("source"), uri = p.get("uri");
  const doc = await api("documents/" + uri.split("/").map(encodeURIComponent).join("/") + "?" +
                        new URLSearchParams(source ? { source } : {}).toString());
  let html = `<h2 id="doc-title">${esc(doc.title || doc.uri)}</h2>
    <p class="muted">${esc(doc.uri)} · source ${esc(doc.source)} · ${doc.chunk_count} chunks, ${doc.event_count} events, ${doc.key_count} keys</p>`;
  for (const chunk of doc.chunks) {
    html += `<section class="chunk" id="chunk-${chunk.id}"><div class="meta">${chunk.ordinal + 1}. ${esc(chunk.title)} · lines ${chunk.start_line}–${chunk.end_line}</div>
      <div class="text">${esc(chunk.content)}</div><ul class="events">` +
      chunk.events.map((e) => `<li>${esc(e.content)}<div class="keys">${(e.keys || []).map((k) => keyChip(k, doc.source)).join("")}</div></li>`).join("") +
      `</ul></section>`;
  }
  view.innerHTML = html;
}

// -- an entity and its neighbourhood ------------------------------------------------------------------------

async function showEntity(p) {
  const source = p.get("source"), name = p.get("name");
  const q = new URLSearchParams(source ? { source } : {}).toString();
  const path = "entities/" + encodeURIComponent(name);
  const [entity, related] = await Promise.all([api(path + "?" + q), api(path + "/related?" + q + "&depth=2&limit=40")]);
  view.innerHTML = `<h2 id="entity-title">${esc(entity.name)} <span class="muted">(${esc(entity.type)})</span></h2>
    <p class="muted">source ${esc(entity.source)} · ${entity.event_count} events${entity.description ? " · " + esc(entity.description) : ""}</p>
    <div class="columns"><div id="graph" aria-label="neighbours"></div>
    <div><h3>Events</h3><ul class="events">${(entity.events || []).slice(0, 20).map((e) =>
      `<li>${esc(e.content)} <a class="muted" href="#/doc?${new URLSearchParams({ source: entity.source, uri: e.document_uri })}">${esc(e.document_uri)}</a></li>`).join("")}</ul></div></div>`;
  const elements = [{ data: { id: "root", label: entity.name, type: entity.type, root: 1 } }];
  const seen = new Set();
  for (const r of related) {
    const id = "k" + r.id;
    if (seen.has(id)) continue;
    seen.add(id);
    elements.push({ data: { id, label: r.name, type: r.type, name: r.name } });
    elements.push({ data: { id: "e" + r.id, source: "root", target: id, weight: r.score, distance: r.distance } });
  }
  const colors = { person: "#c06a1b", organization: "#2b8a4a", location: "#6d4bb0", time: "#777", topic: "#1f5fa8" };
  const cy = cytoscape({
    container: document.getElementById("graph"), elements, wheelSensitivity: 0.3,
    layout: { name: "cose", animate: false, nodeRepulsion: 8000 },
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 11, "background-color": (n) => colors[n.data("type")] || "#1f5fa8",
                                   width: 14, height: 14, color: "#1d232b", "text-valign": "bottom", "text-margin-y": 3 } },
      { selector: "node[root]", style: { width: 26, height: 26, "font-weight": 700, "font-size": 13 } },
      { selector: "edge", style: { width: (e) => 1 + 4 * Math.min(1, +e.data("weight") || 0), "line-color": "#c5ced8",
                                   "line-style": (e) => (e.data("distance") > 1 ? "dashed" : "solid") } },
    ],
  });
  cy.on("tap", "node", (event) => {
    const n = event.target.data("name");
    if (n) go("/entity", { source: entity.source, name: n });
  });
  window.sagGraph = cy;  // for tests and the console
}

// -- communities -----------------------------------------------------------------------------------

async function showCommunities(p) {
  const source = p.get("source") || currentSource();
  const rows = await api("communities?" + new URLSearchParams(source ? { source } : {}).toString());
  if (!rows.length) {
    view.innerHTML = `<p>No community reports yet: run <code>sag-pg communities build --source ${esc(source)}</code>.</p>`;
    return;
  }
  view.innerHTML = `<h2>Communities</h2>` + rows.map((r) => `<details class="card"><summary><b>${esc(r.title)}</b>
    <span class="muted">level ${r.level} · ${r.size} events · rating ${(+r.rating).toFixed(1)}</span></summary>
    <div class="text">${esc(r.summary || r.full_content || "")}</div></details>`).join("");
}

// -- ingest ---------------------------------------------------------------------------------------------

function showIngest() {
  if (!service.allow_writes) {
    view.innerHTML = `<p>This server is read-only (start it with <code>--allow-writes</code> to ingest).</p>`;
    return;
  }
  view.innerHTML = `<h2>Ingest</h2><div id="drop">Drop .md, .txt or .jsonl files here, or
    <input type="file" id="files" multiple accept=".md,.markdown,.txt,.jsonl"></div><div id="jobs"></div>`;
  const drop = document.getElementById("drop");
  const send = (files) => upload(Array.from(files));
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); send(e.dataTransfer.files); });
  document.getElementById("files").addEventListener("change", (e) => send(e.target.files));
}

async function upload(files) {
  if (!files.length) return;
  const form = new FormData();
  files.forEach((f) => form.append("files", f, f.name));
  const box = document.createElement("div");
  box.className = "card";
  box.innerHTML = `${files.length} file(s) → ${esc(currentSource())}: <progress></progress> <span class="muted">queued</span>`;
  document.getElementById("jobs").prepend(box);
  try {
    let job = await api("ingest?" + new URLSearchParams({ source: currentSource() }), { method: "POST", body: form });
    while (job.status === "queued" || job.status === "running") {
      await new Promise((r) => setTimeout(r, 500));
      job = await api("jobs/" + job.id);
      const pr = job.progress;
      box.querySelector("span").textContent = `${job.status}: ${pr.stored} stored, ${pr.skipped} unchanged, ${pr.failed} failed`;
    }
    box.querySelector("progress").replaceWith(job.status === "done" ? "✓" : "✗");
    if (job.error || job.errors.length) box.insertAdjacentHTML("beforeend", `<p class="error">${esc(job.error || job.errors.join("; "))}</p>`);
  } catch (error) {
    box.insertAdjacentHTML("beforeend", `<p class="error">Error: ${esc(error.message)}</p>`);
  }
}

// -- wiring --------------------------------------------------------------------------------------------

async function route() {
  const [path, p] = params();
  try {
    if (path === "/search") await showSearch(p);
    else if (path === "/doc") await showDocument(p);
    else if (path === "/entity") await showEntity(p);
    else if (path === "/communities") await showCommunities(p);
    else if (path === "/ingest") showIngest();
  } catch (error) { fail(error); }
}

async function start() {
  document.getElementById("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    localStorage.setItem("sag-pg-token", document.getElementById("token").value);
    location.reload();
  });
  document.getElementById("search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    go("/search", { q: document.getElementById("q").value, strategy: document.getElementById("strategy").value,
                    source: currentSource() });
  });
  try {
    service = await api("service");
    const sources = await api("sources");
    const select = document.getElementById("source");
    select.innerHTML = sources.map((s) => `<option value="${esc(s.name)}">${esc(s.name)} (${s.documents})</option>`).join("");
    const wanted = params()[1].get("source");
    if (wanted) select.value = wanted;
    document.getElementById("ingest-link").hidden = !service.allow_writes;
  } catch (error) { fail(error); return; }
  window.addEventListener("hashchange", route);
  await route();
  document.body.dataset.ready = "1";
}

start();
