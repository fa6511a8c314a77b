// The openkoi-memory inspector: a page over the REST API. Every read and change is an API call with the
// user's bearer token; the page itself holds no data. Routes live in the URL fragment: #/view/arg?ns=...
"use strict";

const TOKEN_KEY = "openkoi-inspector-token";
const NS_KEY = "openkoi-inspector-namespace";
const state = {token: null, principal: null, namespaces: [], ns: "default"};

// -- DOM helpers: text goes in as text, never as HTML -----------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}
const $ = (sel) => document.querySelector(sel);
const fmtTime = (iso) => iso ? new Date(iso).toLocaleString() : "-";
const fmtDay = (iso) => iso ? iso.slice(0, 10) : "-";
const num = (x, d = 3) => x === null || x === undefined ? "-" : Number(x).toFixed(d).replace(/\.?0+$/, "") || "0";
function bytes(n) {
  if (n === null || n === undefined) return "-";
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}
const short = (text, n) => text.length > n ? text.slice(0, n - 1) + "…" : text;
const link = (route, text, cls) => h("a", {href: "#" + route + (route.includes("?") ? "&" : "?") +
                                                 "ns=" + encodeURIComponent(state.ns), class: cls}, text);

// -- the API ---------------------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, detail) { super(detail); this.status = status; }
}

async function api(method, path, {query, body} = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value === null || value === undefined || value === "") continue;
    for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(key, v);
  }
  const headers = {"Accept": "application/json"};
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
  if (response.status === 204) return null;
  const data = await response.json().catch(() => ({detail: response.statusText}));
  if (!response.ok) {
    const detail = typeof data.detail === "string" ? data.detail
      : (data.detail || []).map((e) => `${(e.loc || []).slice(1).join(".")}: ${e.msg}`).join("; ");
    throw new ApiError(response.status, detail || response.statusText);
  }
  return data;
}
const nsq = (extra) => Object.assign({namespace: state.ns}, extra || {});

function showError(error) {
  const box = $("#error");
  if (!error) { box.hidden = true; box.textContent = ""; return; }
  box.hidden = false;
  box.textContent = error instanceof ApiError ? `${error.status}: ${error.message}` : String(error.message || error);
}

// -- the token: from the URL fragment (openkoi-memory ui), the tab's storage, or typed in --------------------
function takeTokenFromUrl() {
  const params = new URLSearchParams(location.hash.replace(/^#\/?/, "").split("?").pop());
  const token = location.hash.startsWith("#token=") ? new URLSearchParams(location.hash.slice(1)).get("token")
    : params.get("token");
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    const ns = new URLSearchParams(location.hash.slice(1)).get("ns");
    if (ns) sessionStorage.setItem(NS_KEY, ns);
    history.replaceState(null, "", location.pathname + "#/overview");  // the token leaves the address bar
  }
  state.token = sessionStorage.getItem(TOKEN_KEY);
}

function tokenForm(message) {
  document.body.dataset.view = "token";
  const input = h("input", {id: "token-input", type: "password", placeholder: "okm_...", autocomplete: "off", size: 50});
  const form = h("form", {class: "card token", onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    start();
  }},
  h("h2", {}, "A token, please"),
  h("p", {}, message || "This server needs a bearer token. `openkoi-memory ui` prints a link that carries one; " +
    "or paste a token from `openkoi-memory token add NAME` (a token limited to namespaces sees only those)."),
  input, " ", h("button", {type: "submit"}, "Open"));
  $("#main").replaceChildren(form);
  document.body.dataset.state = "ready";
}

async function start() {
  state.token = sessionStorage.getItem(TOKEN_KEY);
  showError(null);
  try {
    state.principal = await api("GET", "/api/health");
  } catch (error) {
    if (error.status === 401) return tokenForm(state.token ? "That token was refused (revoked, or for another " +
                                                             "server). Paste another." : null);
    return showError(error);
  }
  const listed = await api("GET", "/api/namespaces");
  state.namespaces = listed.map((n) => n.namespace);
  const exact = state.principal.namespaces.filter((p) => !p.endsWith("*"));
  for (const n of exact) if (!state.namespaces.includes(n)) state.namespaces.push(n);
  const stored = sessionStorage.getItem(NS_KEY);
  state.ns = routeNs() || stored || (exact.length ? exact[0] : state.namespaces[0]) || "default";
  $("#namespaces").replaceChildren(...state.namespaces.map((n) => h("option", {value: n})));
  $("#namespace").value = state.ns;
  $("#who").replaceChildren(h("span", {class: "muted"}, `token ${state.principal.principal} · ` +
    state.principal.namespaces.join(", ")), " ", h("button", {class: "link", onclick: () => {
      sessionStorage.removeItem(TOKEN_KEY); tokenForm("Token forgotten in this tab.");
    }}, "forget token"));
  render();
}

// -- routing -----------------------------------------------------------------------------------------------
function route() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return {view: parts[0] || "overview", arg: parts.slice(1).join("/") || null, params: new URLSearchParams(query || "")};
}
const routeNs = () => route().params.get("ns");
function go(routePath) { location.hash = routePath + (routePath.includes("?") ? "&" : "?") + "ns=" + encodeURIComponent(state.ns); }

const VIEWS = {};
async function render() {
  if (!state.principal) return;
  const r = route();
  const ns = r.params.get("ns");
  if (ns && ns !== state.ns) { state.ns = ns; $("#namespace").value = ns; }
  sessionStorage.setItem(NS_KEY, state.ns);
  const view = VIEWS[r.view] || VIEWS.overview;
  document.body.dataset.state = "loading";
  document.body.dataset.view = r.view;
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.dataset.view === r.view || (r.view === "memory" && a.dataset.view === "search"));
    a.href = "#/" + a.dataset.view + "?ns=" + encodeURIComponent(state.ns);
  }
  showError(null);
  try {
    const content = await view(r);
    $("#main").replaceChildren(content);
  } catch (error) {
    $("#main").replaceChildren(h("p", {class: "muted"}, "Nothing to show."));
    showError(error);
  }
  document.body.dataset.state = "ready";
}

// -- overview --------------------------------------------------------------------------------------------
VIEWS.overview = async () => {
  const [o, beliefs] = await Promise.all([api("GET", "/api/inspector/overview", {query: nsq()}),
    api("GET", "/api/inspector/memories", {query: nsq({kind: ["fact", "note"], limit: 8})})]);
  const live = Object.values(o.live_by_kind).reduce((a, b) => a + b, 0);
  const archived = Object.values(o.archived_by_kind).reduce((a, b) => a + b, 0);
  const kinds = [...new Set([...Object.keys(o.live_by_kind), ...Object.keys(o.archived_by_kind)])].sort();
  const most = Math.max(1, ...kinds.map((k) => (o.live_by_kind[k] || 0) + (o.archived_by_kind[k] || 0)));
  const stat = (label, value, route) => h("div", {class: "stat"}, h("b", {}, route ? link(route, String(value)) : value),
                                         h("span", {}, label));
  const m = o.maintenance;
  return h("section", {class: "overview"},
    h("h1", {}, "Overview of ", h("code", {}, o.namespace)),
    h("div", {class: "stats"}, stat("live memories", live, "/search"), stat("archived", archived),
      stat("superseded versions", o.superseded), stat("pinned", o.pinned), stat("documents", o.documents, "/documents"),
      stat("sessions", o.sessions, "/sessions"), stat("links", o.links),
      o.file_bytes === null ? stat("file size: for a token of every namespace", "-") : stat("file size", bytes(o.file_bytes))),
    h("div", {class: "card", id: "beliefs"}, h("h3", {}, `What it holds about ${o.namespace}: the latest facts and notes`),
      beliefs.length ? h("ul", {}, beliefs.map((m) => h("li", {}, link("/memory/" + encodeURIComponent(m.id), m.text),
        h("span", {class: "muted"}, ` ${m.kind} · score ${num(m.score, 2)}${m.pinned ? " · pinned" : ""} · ${fmtDay(m.created_at)}`))))
        : h("p", {class: "muted"}, "No facts or notes."), h("p", {}, link("/search", "Search them, with why each one ranks where it does →"))),
    h("div", {class: "grid"},
      h("div", {class: "card"}, h("h3", {}, "By kind (live + archived)"),
        kinds.length ? Charts.bars(kinds.map((k) => ({label: k, value: (o.live_by_kind[k] || 0), max: most,
          text: `${o.live_by_kind[k] || 0}` + (o.archived_by_kind[k] ? ` + ${o.archived_by_kind[k]} archived` : "")})),
          {width: 340, label: 80, text: 110}) : h("p", {class: "muted"}, "No memories yet.")),
      h("div", {class: "card"}, h("h3", {}, "Tiers"),
        Charts.bars([...Object.entries(o.message_tiers).map(([t, n]) => ({label: `messages ${t}`, value: n, text: String(n),
          max: Math.max(1, ...Object.values(o.message_tiers))})),
        ...Object.entries(o.summary_tiers).map(([t, n]) => ({label: `summaries ${t}`, value: n, text: String(n),
          max: Math.max(1, ...Object.values(o.summary_tiers))}))], {width: 340, label: 140, text: 40})),
      h("div", {class: "card wide"}, h("h3", {}, "Growth (memories created, running total)"),
        o.growth.length ? Charts.line(o.growth.map((g, i) => ({x: i, y: g.total})), {width: 700,
          xFormat: (i) => o.growth[Math.round(i)] ? o.growth[Math.round(i)].day : "", yFormat: (y) => y.toFixed(0)})
          : h("p", {class: "muted"}, "Nothing yet.")),
      h("div", {class: "card wide"}, h("h3", {}, "Maintenance"),
        h("p", {}, m.last_run_at ? `Last run ${fmtTime(m.last_run_at)}: ${m.status}. ` : "Never run yet. ",
          m.next_due ? `Next due ${fmtTime(m.next_due)}.` : ""),
        m.steps.length ? h("table", {class: "steps"}, h("tbody", {}, m.steps.map((s) =>
          h("tr", {}, h("th", {}, s.name), h("td", {}, s.summary === null ? "(shown to an all-namespace token)" : s.summary)))))
          : null)),
    eraseBox(o.namespace));
};

function eraseBox(namespace) {
  const input = h("input", {id: "erase-confirm", autocomplete: "off", placeholder: namespace, spellcheck: "false"});
  const button = h("button", {id: "erase-button", class: "danger", disabled: true, onclick: async () => {
    const report = await api("DELETE", "/api/namespaces/" + encodeURIComponent(namespace));
    $("#main").replaceChildren(h("section", {class: "card"}, h("h2", {}, `Erased ${namespace}`),
      h("p", {}, `${report.memories} memories and everything else of the namespace removed; status: ${report.status}.`)));
  }}, "Erase this namespace");
  input.addEventListener("input", () => { button.disabled = input.value !== namespace; });
  return h("details", {class: "card danger-zone"}, h("summary", {}, "Erase this namespace"),
    h("p", {}, "Removes every memory, document, session, link and file of ", h("code", {}, namespace),
      ", for good. Type the namespace to confirm."), input, " ", button);
}

// -- search and browse -----------------------------------------------------------------------------------
VIEWS.search = async (r) => {
  const p = r.params;
  const field = (name, label, attrs) => h("label", {}, label, h("input", Object.assign({name, value: p.get(name) || ""}, attrs)));
  const form = h("form", {id: "search-form", class: "filters", onsubmit: (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const q = new URLSearchParams();
    for (const [k, v] of data.entries()) if (String(v).trim()) q.set(k, String(v).trim());
    go("/search?" + q.toString());
  }},
  h("input", {id: "query", name: "q", type: "search", placeholder: "What does the agent believe about...", value: p.get("q") || "",
              size: 40}),
  field("kind", "kind", {placeholder: "fact, note", size: 10}), field("tags", "tags", {placeholder: "any of", size: 10}),
  field("category", "category", {size: 10}), field("since", "since", {type: "date"}), field("until", "until", {type: "date"}),
  h("label", {}, h("input", {type: "checkbox", name: "archive", value: "1", checked: p.get("archive") === "1"}), "archive"),
  h("button", {type: "submit"}, "Search"));
  const list = (text) => text ? text.split(",").map((s) => s.trim()).filter(Boolean) : null;
  const day = (text, end) => text ? new Date(text + (end ? "T23:59:59.999Z" : "T00:00:00Z")).toISOString() : null;
  const q = p.get("q");
  let results;
  if (q) {
    const out = await api("POST", "/api/inspector/search", {query: nsq(), body: {
      query: q, limit: 25, kind: list(p.get("kind")), tags: list(p.get("tags")), category: list(p.get("category")),
      since: day(p.get("since")), until: day(p.get("until"), true), include_archive: p.get("archive") === "1"}});
    results = out.hits.length ? out.hits.map(hitCard) : [h("p", {class: "muted"}, "No memory matches.")];
  } else {
    const found = await api("GET", "/api/inspector/memories", {query: nsq({kind: list(p.get("kind")),
      tag: list(p.get("tags")), category: p.get("category"), since: day(p.get("since")), until: day(p.get("until"), true),
      limit: 50})});
    results = [h("p", {class: "muted"}, `The ${found.length} most recent memories` +
      (found.length ? "; search to see why each one ranks where it does." : ".")), ...found.map((m) => memoryRow(m))];
  }
  return h("section", {}, form, h("div", {id: "results"}, results));
};

function memoryRow(m, extra) {
  return h("article", {class: "hit", dataset: {id: m.id}},
    h("div", {class: "hit-text"}, link("/memory/" + encodeURIComponent(m.id), short(m.text, 300), "memory-link")),
    h("div", {class: "meta"}, h("span", {class: "kind"}, m.kind), m.pinned ? h("span", {class: "pin"}, "pinned") : null,
      m.archived_at ? h("span", {class: "archived"}, "archived") : null,
      ...m.tags.map((t) => h("span", {class: "tag"}, "#" + t)), m.category ? h("span", {}, m.category) : null,
      h("span", {class: "muted"}, `score ${num(m.score, 2)} · ${m.access_count} accesses · ${fmtDay(m.created_at)}`)),
    extra || null);
}

function hitCard(hit) {
  const p = hit.parts;
  const chart = Charts.bars([
    {label: "BM25", value: p.keyword, max: 1, text: p.bm25 === null ? "not searched" : `${num(p.bm25)} (${num(p.keyword, 2)})`,
     title: "keyword match, relative to this query's best"},
    {label: "similarity", value: p.vector, max: 1, text: p.similarity === null ? "not searched" : num(p.similarity),
     title: "cosine similarity (bar: the part above the embedder's noise floor)"},
    {label: "feedback", value: Math.log(p.feedback) + 1, max: 2, text: `x${num(p.feedback)}`,
     title: "exp(0.2 x score): reinforce raises it, demote lowers it"},
    {label: "recency", value: p.recency, max: 1, text: `x${num(p.recency)} (${num(p.days_since_hit, 1)} d)`,
     title: "1 / (1 + 0.01 x days since the last hit)"},
  ], {width: 380, row: 15, label: 70, text: 130, cls: "bars explain"});
  return memoryRow(hit.memory, h("div", {class: "why"}, h("div", {class: "score"}, h("b", {}, num(hit.score, 4)),
    h("span", {class: "muted"}, ` ${p.fusion}`)), chart, h("code", {class: "formula"}, hit.explanation)));
}

// -- one memory ----------------------------------------------------------------------------------------------
VIEWS.memory = async (r) => {
  const d = await api("GET", "/api/inspector/memories/" + encodeURIComponent(r.arg), {query: nsq()});
  const m = d.memory;
  const row = (k, v) => v === null || v === undefined || v === "" ? null : h("tr", {}, h("th", {}, k), h("td", {}, v));
  const pv = d.provenance;
  return h("section", {class: "memory"},
    h("p", {class: "crumbs"}, link("/search", "search"), " / memory ", h("code", {}, m.id)),
    h("blockquote", {id: "memory-text"}, m.text),
    h("div", {class: "meta"}, h("span", {class: "kind"}, m.kind), m.pinned ? h("span", {class: "pin"}, "pinned") : null,
      d.archived ? h("span", {class: "archived"}, `archived (${d.archive_reason || "?"})`) : null,
      m.superseded_by ? h("span", {class: "archived"}, "superseded") : null, ...m.tags.map((t) => h("span", {class: "tag"}, "#" + t))),
    actions(d),
    h("div", {class: "grid"},
      h("div", {class: "card"}, h("h3", {}, "Metadata"), h("table", {}, h("tbody", {},
        row("namespace", m.namespace), row("category", m.category), row("importance", m.importance),
        row("confidence", m.confidence), row("created", fmtTime(m.created_at)), row("updated", fmtTime(m.updated_at)),
        row("expires", m.expires_at ? fmtTime(m.expires_at) : null),
        ...Object.entries(d.metadata).map(([k, v]) => row(k, typeof v === "string" ? v : JSON.stringify(v)))))),
      h("div", {class: "card"}, h("h3", {}, "Provenance"), h("table", {}, h("tbody", {},
        row("source", pv.source), row("session", pv.session_id ? link("/sessions/" + encodeURIComponent(pv.session_id), pv.session_id) : null),
        row("document", pv.document_id ? link("/documents/" + encodeURIComponent(pv.document_id), pv.document_name || pv.document_id) : null),
        row("record", pv.owner_id && pv.owner_id !== m.id ? pv.owner_id : null), row("task", pv.task_id),
        row("owned by", d.owner_domain)))),
      h("div", {class: "card"}, h("h3", {}, "Access and feedback"), h("table", {}, h("tbody", {},
        row("feedback score", `${num(m.score, 2)} (reinforce +3, demote -1)`), row("accesses", m.access_count),
        row("last access", fmtTime(m.last_access_at)), row("last hit", fmtTime(m.last_hit_at))))),
      activityCard(d),
      h("div", {class: "card", id: "history"}, h("h3", {}, "Version history"), d.history.length ? h("ol", {},
        d.history.map((v) => h("li", {class: v.id === m.id ? "this" : ""},
          v.id === m.id ? h("b", {}, v.text) : link("/memory/" + encodeURIComponent(v.id), v.text),
          h("div", {class: "muted"}, `${fmtDay(v.valid_from)} – ${v.valid_to ? fmtDay(v.valid_to) : "now"}` +
            (v.superseded_by ? `; superseded: ${REASONS[v.reason] || v.reason || "reason not recorded"}` : "; current") +
            (v.archived ? "; archived" : "")))))
        : h("p", {class: "muted"}, "One version: nothing superseded it, and it superseded nothing.")),
      h("div", {class: "card", id: "links"}, h("h3", {}, "Linked memories (recalled together)"), d.links.length ?
        h("ul", {}, d.links.map((l) => h("li", {}, link("/memory/" + encodeURIComponent(l.memory_id),
          short(l.text || l.memory_id, 120)), h("span", {class: "muted"}, ` ${l.kind || ""}${l.archived ? " · archived" : ""}`),
          Charts.bars([{label: "strength", value: l.strength, max: Math.max(...d.links.map((x) => x.strength)),
            text: num(l.strength, 1)}], {width: 220, label: 56, text: 40, cls: "bars tiny"}))))
          : h("p", {class: "muted"}, "No links yet: memories found together by a search link together.")),
      h("div", {class: "card wide" + (d.decays ? "" : " never"), id: "fate", dataset: {decays: String(d.decays)}},
        h("h3", {}, d.decays ? "How it can be forgotten" : "It does not decay"), h("p", {}, d.fate)),
      ...d.curves.map(curveCard)));
};

// the last 30 days (more if older activity is kept) of accesses and feedback, up to the store's today
function activityCard(d) {
  const to = d.as_of.slice(0, 10);
  const back = (days) => new Date(Date.parse(to + "T00:00:00Z") - days * 86400000).toISOString().slice(0, 10);
  const first = d.activity.length ? d.activity[0].day : to;
  const from = first < back(29) ? first : back(29);
  const sum = (key) => d.activity.reduce((a, x) => a + x[key], 0);
  return h("div", {class: "card wide", id: "activity"}, h("h3", {}, "Access and feedback over time"),
    d.activity.length ? Charts.activity(d.activity, from, to) : h("p", {class: "muted"},
      "No access or feedback in the last 90 days: searches that count as access and reinforce or demote show here."),
    h("p", {class: "legend muted"}, `${sum("accesses")} access(es) since ${from}: bars; `,
      h("span", {class: "up"}, `▲ reinforced ${sum("reinforcements")}`), ", ",
      h("span", {class: "down"}, `▼ demoted ${sum("demotions")}`), ". Kept for 90 days, one row a day."));
}

// why a version was superseded (metadata superseded_reason, written by the facts' write rule)
const REASONS = {explicit: "replaced explicitly (supersedes=...)", changed: "a near-duplicate that changed a detail",
  rule: "a newer fact with the same subject and category", update: "the text model judged it updated",
  delete: "the text model judged it no longer true"};

function curveCard(c) {
  const marks = [];
  if (c.crosses_at_day !== null) marks.push({x: c.crosses_at_day, label: c.measure === "value" ? "judged" : "crosses"});
  if (c.ends_at_day !== null) marks.push({x: c.ends_at_day, label: "expires"});
  return h("div", {class: "card wide curve", dataset: {measure: c.measure}}, h("h3", {}, `Ahead: ${c.label}`),
    Charts.line(c.points.map((p) => ({x: p.day, y: p.value})), {width: 700, xLabel: "days from now",
      threshold: c.threshold !== null ? {value: c.threshold, label: c.threshold_label || "threshold"} : null, marks,
      yFormat: (y) => y.toFixed(2), xFormat: (x) => `${Math.round(x)}`}),
    h("p", {class: "muted"}, c.explanation), c.protected ? h("p", {class: "pin"}, c.protected) : null);
}

function actions(d) {
  const m = d.memory;
  const path = "/api/memories/" + encodeURIComponent(m.id);
  const act = (label, fn, attrs) => h("button", Object.assign({onclick: async () => {
    try { await fn(); } catch (error) { showError(error); return; }
    render();
  }}, attrs || {}), label);
  if (d.archived) {
    return h("div", {class: "actions"}, d.editable ? act("Restore", () => api("POST",
      `/api/inspector/memories/${encodeURIComponent(m.id)}/restore`, {query: nsq()}), {id: "restore"})
      : h("span", {class: "muted"}, "Its domain's lifecycle restores it."));
  }
  if (!d.editable) {
    return h("div", {class: "actions"}, act("Reinforce", () => api("POST", path + "/feedback", {query: nsq(), body: {signal: "reinforce"}}), {id: "reinforce"}),
      act("Demote", () => api("POST", path + "/feedback", {query: nsq(), body: {signal: "demote"}}), {id: "demote"}),
      h("span", {class: "muted"}, ` kept by ${d.owner_domain}: change it there (a document is re-ingested, a message edited in its session).`));
  }
  const edit = () => {
    const area = h("textarea", {id: "edit-text", rows: 4, cols: 80}, m.text);
    const tags = h("input", {id: "edit-tags", value: m.tags.join(", "), size: 40});
    $("#memory-text").replaceWith(h("form", {class: "card edit", onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api("PATCH", path, {query: nsq(), body: {text: area.value,
          tags: tags.value.split(",").map((s) => s.trim()).filter(Boolean)}});
      } catch (error) { showError(error); return; }
      render();
    }}, area, h("label", {}, "tags ", tags), " ", h("button", {type: "submit", id: "save"}, "Save"), " ",
      h("button", {type: "button", onclick: () => render()}, "Cancel")));
  };
  return h("div", {class: "actions"},
    h("button", {id: "edit", onclick: edit}, "Edit"),
    act("Reinforce", () => api("POST", path + "/feedback", {query: nsq(), body: {signal: "reinforce"}}), {id: "reinforce"}),
    act("Demote", () => api("POST", path + "/feedback", {query: nsq(), body: {signal: "demote"}}), {id: "demote"}),
    act(m.pinned ? "Unpin" : "Pin", () => api("PATCH", path, {query: nsq(), body: {pinned: !m.pinned}}), {id: "pin"}),
    act("Archive", () => api("POST", `/api/inspector/memories/${encodeURIComponent(m.id)}/archive`, {query: nsq()}), {id: "archive"}),
    h("button", {id: "delete", class: "danger", onclick: () => confirmDialog(
      `Delete this memory for good? Its text, index entry, vector and links go; archiving keeps it restorable instead.`,
      "Delete", async () => { await api("DELETE", path, {query: nsq()}); go("/search"); })}, "Delete"));
}

function confirmDialog(message, label, onConfirm) {
  const box = $("#dialog");
  const close = () => { box.hidden = true; box.replaceChildren(); };
  box.replaceChildren(h("div", {class: "card modal", role: "dialog"}, h("p", {}, message),
    h("button", {id: "confirm", class: "danger", onclick: async () => {
      try { await onConfirm(); } catch (error) { showError(error); }
      close();
    }}, label), " ", h("button", {id: "cancel", onclick: close}, "Cancel")));
  box.hidden = false;
}

// -- documents and sessions ----------------------------------------------------------------------------------
VIEWS.documents = async (r) => {
  if (r.arg) {
    const [doc, chunks] = await Promise.all([
      api("GET", "/api/kb/documents/" + encodeURIComponent(r.arg), {query: nsq()}),
      api("GET", `/api/inspector/documents/${encodeURIComponent(r.arg)}/chunks`, {query: nsq()})]);
    return h("section", {}, h("p", {class: "crumbs"}, link("/documents", "documents"), " / ", doc.file_name),
      h("h1", {}, doc.metadata.title || doc.file_name),
      h("p", {class: "muted"}, `${doc.content_type} · ${bytes(doc.size_bytes)} · ${doc.total_chunks} chunks · uploaded ${fmtTime(doc.uploaded_at)}`),
      h("ol", {class: "chunks"}, chunks.map((c) => h("li", {}, h("div", {class: "muted"}, `characters ${c.start}–${c.end}`),
        link("/memory/" + encodeURIComponent(c.id), short(c.content, 600))))));
  }
  const docs = await api("GET", "/api/kb/documents", {query: nsq({limit: 200})});
  return h("section", {}, h("h1", {}, "Knowledge base"), docs.length ? h("table", {class: "list"},
    h("thead", {}, h("tr", {}, h("th", {}, "document"), h("th", {}, "type"), h("th", {}, "chunks"), h("th", {}, "uploaded"))),
    h("tbody", {}, docs.map((d) => h("tr", {}, h("td", {}, link("/documents/" + encodeURIComponent(d.id), d.metadata.title || d.file_name)),
      h("td", {}, d.content_type), h("td", {}, d.total_chunks), h("td", {}, fmtTime(d.uploaded_at))))))
    : h("p", {class: "muted"}, "No documents in this namespace."));
};

VIEWS.sessions = async (r) => {
  if (r.arg) {
    const s = await api("GET", "/api/inspector/sessions/" + encodeURIComponent(r.arg), {query: nsq()});
    return h("section", {}, h("p", {class: "crumbs"}, link("/sessions", "sessions"), " / ", h("code", {}, s.session.id)),
      h("div", {class: "grid"},
        h("div", {class: "card wide transcript"}, h("h3", {}, `Transcript (${s.messages.length} messages)`),
          s.messages.map((m) => h("div", {class: "msg " + m.role + (m.archived_at ? " compressed" : "")},
            h("span", {class: "role"}, m.role), h("span", {class: "muted"}, ` ${fmtTime(m.sent_at)} · tier ${m.tier}` +
              (m.archived_at ? " · compressed" : "")),
            h("div", {}, link("/memory/" + encodeURIComponent("msg:" + m.message_id), m.content))))),
        h("div", {class: "card"}, h("h3", {}, "Working summaries"), s.working_summaries.length ?
          s.working_summaries.map((w) => h("p", {}, h("span", {class: "muted"}, `messages ${w.first_seq}–${w.last_seq} (${w.method}): `), w.summary))
          : h("p", {class: "muted"}, "None yet.")),
        h("div", {class: "card"}, h("h3", {}, "Summaries of compressed messages"), s.summaries.length ?
          s.summaries.map((x) => h("p", {}, h("span", {class: "muted"}, `${x.summary_tier} from ${x.source_tier}, ${x.message_count} messages: `), x.summary_text))
          : h("p", {class: "muted"}, "None: the forgetting engine has compressed none of its messages."))));
  }
  const list = await api("GET", "/api/inspector/sessions", {query: nsq({limit: 100})});
  return h("section", {}, h("h1", {}, "Sessions"), list.length ? h("table", {class: "list"},
    h("thead", {}, h("tr", {}, h("th", {}, "session"), h("th", {}, "messages"), h("th", {}, "channel"), h("th", {}, "updated"))),
    h("tbody", {}, list.map((s) => h("tr", {}, h("td", {}, link("/sessions/" + encodeURIComponent(s.id), s.id)),
      h("td", {}, s.messages), h("td", {}, s.channel || "-"), h("td", {}, fmtTime(s.updated_at)))))) :
    h("p", {class: "muted"}, "No sessions in this namespace."));
};

// -- wiring ----------------------------------------------------------------------------------------------------
window.addEventListener("hashchange", () => {
  if (/[#&?]token=/.test(location.hash)) { takeTokenFromUrl(); start(); } else render();
});
document.addEventListener("DOMContentLoaded", () => {
  $("#namespace").addEventListener("change", (e) => {
    state.ns = e.target.value.trim() || "default";
    const view = route().view;  // the same list in the other namespace; a memory's page becomes a search
    go("/" + (view === "memory" ? "search" : view));
  });
  takeTokenFromUrl();
  start();
});
