// Satchel Lab: the page only gathers settings and shows what the library returned.
// Every pack comes from POST /api/pack (satchel.pack on the server), so what is shown is
// byte for byte what the library would send. Data from chunks is only ever put into the
// page as text (textContent, setAttribute): never as markup.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);

/** Build an element; string children become text nodes, attributes go through setAttribute. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

const state = {
  options: null,        // GET /api/options
  candidates: [],
  sourceName: "",
  extra: {},            // options carried by a loaded request that the controls do not own
  order: "relevance",
  result: null,         // the last PackResult.to_dict()
  seq: 0,
};

const PARTS = [
  ["system", "system"],
  ["question", "question"],
  ["history", "history"],
  ["framing", "chat framing"],
  ["sources", "sources"],
  ["answer_reserve", "answer reserve"],
  ["free", "free"],
];

// -- talking to the server ---------------------------------------------------------

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (!response.ok) {
    const message = (data && data.error) || `${response.status} ${response.statusText}`;
    const err = new Error(message);
    err.status = response.status;
    throw err;
  }
  return data;
}

function showError(message) {
  const box = $("#error");
  if (!message) { box.hidden = true; box.textContent = ""; return; }
  box.textContent = message;
  box.hidden = false;
}

// -- settings -> pack options ------------------------------------------------------------

function intOrNull(input) {
  if (input.value.trim() === "") return null;
  const n = Number(input.value);
  return Number.isFinite(n) ? Math.round(n) : null;
}

function packOptions(overrides = {}) {
  const o = { ...state.extra };
  o.model = $("#model").value;
  o.source_budget = Number($("#budget").value);
  const reserve = intOrNull($("#reserve-answer"));
  if (reserve !== null) o.reserve_answer = reserve;
  o.order = state.order;
  o.dedupe = $("#dedupe").checked;
  if ($("#tokenizer").value) o.tokenizer = $("#tokenizer").value;
  // compress and role_caps are only sent when asked for: older versions do not know them
  if ($("#compress").checked) o.compress = true;
  const caps = {};
  for (const role of ["supporting", "background"]) {
    const v = intOrNull($(`#cap-${role}`));
    if (v !== null) caps[role] = v;
  }
  if (Object.keys(caps).length) o.role_caps = caps;
  return Object.assign(o, overrides);
}

function request(options = packOptions()) {
  return { candidates: state.candidates, question: $("#question").value, options };
}

// -- packing (debounced) ------------------------------------------------------------------

let timer = null;
function repackSoon(delay = 120) {
  clearTimeout(timer);
  timer = setTimeout(repack, delay);
}

async function repack() {
  const seq = ++state.seq;
  $("#pack-status").textContent = "packing…";
  try {
    const result = await api("/api/pack", request());
    if (seq !== state.seq) return;          // a newer pack is on its way
    state.result = result;
    showError("");
    render(result);
    if (!$("#panel-compare").hidden) compareSoon();
  } catch (err) {
    if (seq !== state.seq) return;
    $("#pack-status").textContent = "error";
    $("#pack-status").dataset.state = "error";
    showError(err.message);
  }
}

// -- rendering a pack -------------------------------------------------------------------

function kept(result) {
  return result.manifest.filter((e) => e.status === "kept").sort((a, b) => a.position - b.position || a.rank - b.rank);
}

function tableOrder(result) {
  const k = kept(result);
  const d = result.manifest.filter((e) => e.status !== "kept").sort((a, b) => a.rank - b.rank);
  return k.concat(d);
}

function render(result) {
  const k = kept(result);
  const status = $("#pack-status");
  status.textContent = `${k.length} of ${result.manifest.length} kept · ${result.tokens.sources} / ${result.tokens.source_budget} source tokens`;
  status.dataset.state = "ok";
  status.dataset.sha = result.prompt_sha256;
  $("#ask-summary").textContent = `prompt ${result.tokens.prompt} tokens · order ${result.config.order}`;
  renderChips(result);
  renderPrompt($("#ask-prompt"), result);
  renderTrace(result);
}

function renderChips(result) {
  const box = clear($("#ask-kept"));
  for (const e of kept(result)) {
    box.append(el("button", {
      type: "button", class: `chip src-${(e.position - 1) % 6}`, "data-label": e.label,
      title: e.reason, onclick: () => focusSource(e.label),
    }, el("b", {}, e.label), " ", e.id));
  }
  const dropped = result.manifest.length - kept(result).length;
  if (dropped) box.append(el("span", { class: "note" }, `+ ${dropped} dropped (see Trace)`));
}

/** Find each source's span in the prompt: chunk text is escaped, so only real tags match. */
function sourceSpans(result) {
  const text = result.text;
  const spans = [];
  const userAt = text.lastIndexOf("\n\nUSER\n");
  let from = text.indexOf("<sources>", userAt < 0 ? 0 : userAt);
  if (from < 0) return spans;
  for (let n = 1; `S${n}` in result.labels; n++) {
    const open = text.indexOf(`<source_${n} id="S${n}"`, from);
    if (open < 0) break;
    const closeTag = `</source_${n}>`;
    const close = text.indexOf(closeTag, open);
    if (close < 0) break;
    spans.push({ label: `S${n}`, n, start: open, end: close + closeTag.length });
    from = close + closeTag.length;
  }
  return spans;
}

function renderPrompt(pre, result) {
  clear(pre);
  const text = result.text;
  let at = 0;
  for (const s of sourceSpans(result)) {
    if (s.start > at) pre.append(document.createTextNode(text.slice(at, s.start)));
    const ids = result.labels[s.label];
    pre.append(el("span", {
      class: `src src-${(s.n - 1) % 6}`, "data-label": s.label,
      title: `${s.label}: ${Array.isArray(ids) ? ids.join(", ") : ids}`,
    }, text.slice(s.start, s.end)));
    at = s.end;
  }
  if (at < text.length) pre.append(document.createTextNode(text.slice(at)));
}

function focusSource(label) {
  for (const pre of [$("#ask-prompt"), $("#trace-prompt")]) {
    for (const s of pre.querySelectorAll(".src.flash")) s.classList.remove("flash");
    const span = [...pre.querySelectorAll(".src")].find((s) => s.dataset.label === label);
    if (!span || pre.closest("[hidden]")) continue;
    span.classList.add("flash");
    const top = span.offsetTop - pre.offsetTop - 8;
    pre.scrollTo({ top, behavior: "smooth" });
  }
}

function renderTrace(result) {
  renderBudget(result);
  const tbody = clear($("#trace-table tbody"));
  for (const e of tableOrder(result)) {
    const comp = e.compression;
    let ratio = "";
    if (comp && typeof comp === "object") {
      const r = comp.ratio ?? (comp.tokens_before ? (comp.tokens_after ?? e.sent_tokens) / comp.tokens_before : null);
      if (typeof r === "number" && Number.isFinite(r)) ratio = r.toFixed(2);
    }
    let reason = e.reason;
    if (e.conflicts_with && e.conflicts_with.length) reason += `; conflicts with ${e.conflicts_with.join(", ")}`;
    const row = el("tr", { class: e.status, "data-id": e.id, "data-label": e.label || "" },
      el("td", { class: "n" }, e.position ?? "–"),
      el("td", {}, e.label ? el("span", { class: `tag src-${(e.position - 1) % 6}` }, e.label) : "–"),
      el("td", { class: "id" }, e.id),
      el("td", {}, el("span", { class: `status ${e.status}` }, e.status)),
      el("td", { class: "reason" }, reason),
      el("td", {}, e.role ?? "–"),
      el("td", { class: "n" }, e.tokens),
      el("td", { class: "n" }, e.status === "kept" ? e.sent_tokens : "–"),
      el("td", { class: "n" }, e.status === "kept" ? e.cost : "–"),
      el("td", { class: "n" }, ratio || "–"),
      el("td", { class: "n" }, e.rank),
    );
    if (e.label) row.addEventListener("click", () => focusSource(e.label));
    tbody.append(row);
  }
  const k = kept(result).length;
  $("#trace-summary").textContent =
    `${k} kept, ${result.manifest.length - k} dropped · order ${result.config.order} · tokenizer ${result.tokenizer.name}` +
    (result.tokenizer.exact ? " (exact)" : " (estimated)");
  renderPrompt($("#trace-prompt"), result);
}

function renderBudget(result) {
  const t = result.tokens;
  const window = t.context_window;
  const bar = clear($("#budget-bar"));
  const zoom = clear($("#budget-bar-zoom"));
  const legend = clear($("#budget-legend"));
  const zoomTotal = window - t.free;
  for (const [key, name] of PARTS) {
    const value = t[key];
    const seg = (total) => el("div", {
      class: `seg part-${key}`, "data-part": key, "data-tokens": value,
      title: `${name}: ${value} tokens (${(100 * value / total).toFixed(1)}%)`,
    });
    const a = seg(window);
    a.style.width = `${(100 * value) / window}%`;
    bar.append(a);
    if (key !== "free") {
      const b = seg(zoomTotal);
      b.style.width = `${zoomTotal ? (100 * value) / zoomTotal : 0}%`;
      if ((100 * value) / zoomTotal > 7) b.append(el("span", {}, String(value)));
      zoom.append(b);
    }
    legend.append(el("div", { class: "item", "data-part": key },
      el("span", { class: `swatch part-${key}` }), el("span", { class: "name" }, name),
      el("span", { class: "num" }, String(value))));
  }
  legend.append(el("div", { class: "item total", "data-part": "context_window" },
    el("span", { class: "name" }, "window"), el("span", { class: "num" }, String(window))));
  const b = result.budget;
  $("#budget-caption").textContent =
    `sources ${t.sources} of a ${t.source_budget}-token source budget` +
    (b.cap !== null && b.cap !== undefined ? ` (capped at ${b.cap})` : "") + ` · prompt ${t.prompt} tokens`;
}

// -- Ask: the model's answer with citations ---------------------------------------------------

function citationNodes(text, labels, unknown) {
  const out = [];
  const re = /\[(S\d+(?:\s*[,;]\s*S\d+)*)\]/g;
  let at = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > at) out.push(document.createTextNode(text.slice(at, m.index)));
    out.push("[");
    m[1].split(/\s*[,;]\s*/).forEach((label, i) => {
      if (i) out.push(", ");
      const known = label in labels && !unknown.includes(label);
      out.push(known
        ? el("a", { href: "#", class: "cite", "data-label": label, title: String(labels[label]),
            onclick: (ev) => { ev.preventDefault(); focusSource(label); } }, label)
        : el("span", { class: "cite unknown", title: "this label was never sent" }, label));
    });
    out.push("]");
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push(document.createTextNode(text.slice(at)));
  return out;
}

async function ask() {
  const box = clear($("#answer"));
  box.append(el("p", { class: "note" }, "asking…"));
  $("#ask-btn").disabled = true;
  try {
    const data = await api("/api/ask", request());
    state.result = data.pack;
    render(data.pack);
    clear(box);
    if (!data.answer) {
      box.append(el("p", { class: "notice", id: "no-model" }, data.notice || "No model is configured."));
      return;
    }
    const labels = data.pack.labels;
    const cit = data.citations || {};
    const unknown = cit.unknown_labels || [];
    box.append(el("p", { class: "answer-text" }, ...citationNodes(data.answer.text || "", labels, unknown)));
    const a = data.answer;
    const facts = [a.model, a.prompt_tokens != null && `${a.prompt_tokens} prompt tokens`,
      a.completion_tokens != null && `${a.completion_tokens} answer tokens`,
      a.latency_s != null && `${Number(a.latency_s).toFixed(1)} s`, a.finish_reason].filter(Boolean);
    box.append(el("p", { class: "note" }, facts.join(" · ")));
    if (data.citations) {
      const parts = [];
      if (cit.cited_ids && cit.cited_ids.length) parts.push(`cites ${cit.cited_ids.join(", ")}`);
      if (unknown.length) parts.push(`unknown labels ${unknown.join(", ")}`);
      if (cit.uncited_labels && cit.uncited_labels.length) parts.push(`not cited ${cit.uncited_labels.join(", ")}`);
      if (parts.length) box.append(el("p", { class: "note" }, parts.join(" · ")));
    }
  } catch (err) {
    clear(box).append(el("p", { class: "notice bad" }, err.message));
  } finally {
    $("#ask-btn").disabled = false;
  }
}

// -- Compare --------------------------------------------------------------------------------

function sideOptions(side) {
  const root = $(side);
  return packOptions({
    order: $(".cmp-order", root).value,
    source_budget: Number($(".cmp-budget", root).value),
    dedupe: $(".cmp-dedupe", root).checked,
  });
}

let compareTimer = null;
function compareSoon() {
  clearTimeout(compareTimer);
  compareTimer = setTimeout(compare, 120);
}

async function compare() {
  try {
    const data = await api("/api/compare", {
      candidates: state.candidates, question: $("#question").value,
      left: sideOptions("#cmp-left"), right: sideOptions("#cmp-right"),
    });
    for (const [side, result] of [["left", data.left], ["right", data.right]]) {
      const list = clear($(`#cmp-${side}-list`));
      for (const e of kept(result)) {
        list.append(el("li", { "data-id": e.id }, el("span", { class: `tag src-${(e.position - 1) % 6}` }, e.label), " ", e.id,
          el("span", { class: "note" }, ` ${e.cost} tok`)));
      }
      $(`#cmp-${side}-summary`).textContent =
        `${kept(result).length} kept · ${result.tokens.sources} / ${result.tokens.source_budget} source tokens · order ${result.config.order}`;
    }
    const tbody = clear($("#cmp-table tbody"));
    const where = (s) => (s.status === "kept" ? `${s.label} (pos ${s.position})` : s.status || "–");
    for (const r of data.rows) {
      const why = r.left.reason === r.right.reason ? r.left.reason : `${r.left.reason} / ${r.right.reason}`;
      tbody.append(el("tr", { class: `change-${r.change.replace(" ", "-")}`, "data-id": r.id },
        el("td", { class: "id" }, r.id), el("td", {}, el("span", { class: "change" }, r.change)),
        el("td", {}, where(r.left)), el("td", {}, where(r.right)), el("td", { class: "reason" }, why)));
    }
    showError("");
  } catch (err) {
    showError(err.message);
  }
}

function initCompare() {
  const budget = Number($("#budget").value);
  const pairs = [["#cmp-left", "relevance", budget], ["#cmp-right", state.options.orders.includes("edges") ? "edges" : state.order, budget]];
  for (const [side, order, b] of pairs) {
    const select = clear($(".cmp-order", $(side)));
    for (const name of state.options.orders) {
      select.append(el("option", { value: name }, state.options.order_labels[name] || name));
    }
    select.value = order;
    $(".cmp-budget", $(side)).value = b;
    for (const input of $(side).querySelectorAll("select, input")) {
      input.addEventListener("input", () => { $(side).dataset.touched = "1"; compareSoon(); });
    }
  }
}

// -- Ablation ----------------------------------------------------------------------------------

function lines(id) {
  return $(id).value.split("\n").map((s) => s.trim()).filter(Boolean);
}

const ABLATION_COLUMNS = [
  ["variant", "variant"], ["correct", "correct"], ["evidence_present", "evidence in prompt"],
  ["gold_position", "gold at"], ["prompt_tokens", "prompt tokens"], ["cited_ids", "cited"],
  ["answer", "answer"], ["reused_from", "same prompt as"],
];

function renderAblation(result) {
  const variants = result && result.variants;
  if (!variants || typeof variants !== "object" || Array.isArray(variants)) return renderAny(result);
  const cell = (v) => (v === true ? "yes" : v === false ? "no" : Array.isArray(v) ? v.join(", ") || "–" : v ?? "–");
  const table = el("table", { class: "grid", id: "ablate-table" },
    el("thead", {}, el("tr", {}, ...ABLATION_COLUMNS.map(([, name]) => el("th", {}, name)))),
    el("tbody", {}, ...Object.values(variants).map((run) => el("tr", { "data-variant": run.variant },
      ...ABLATION_COLUMNS.map(([key]) => el("td", { class: key === "answer" ? "reason" : "" }, cell(run[key])))))));
  const facts = [`question: ${result.question}`];
  const perms = Object.keys(variants).filter((k) => k.startsWith("perm")).length;
  if (perms > 1 && result.order_sensitive !== undefined) facts.push(result.order_sensitive ? "order-sensitive: the permutations disagree" : "the permutations agree");
  return el("div", {}, el("p", { class: "note" }, facts.join(" · ")), el("div", { class: "table-wrap" }, table));
}

function renderAny(value) {
  // the harness's result shape is its own: a table for a list of flat rows, else the JSON as text
  if (Array.isArray(value) && value.length && value.every((r) => r && typeof r === "object" && !Array.isArray(r))) {
    const keys = [...new Set(value.flatMap((r) => Object.keys(r)))];
    const flat = (v) => (v !== null && typeof v === "object" ? JSON.stringify(v) : String(v ?? "–"));
    return el("div", { class: "table-wrap" }, el("table", { class: "grid" },
      el("thead", {}, el("tr", {}, ...keys.map((k) => el("th", {}, k)))),
      el("tbody", {}, ...value.map((r) => el("tr", {}, ...keys.map((k) => el("td", {}, flat(r[k]))))))));
  }
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const rows = value.variants || value.rows;
    if (rows) {
      const list = Array.isArray(rows) ? rows : Object.entries(rows).map(([name, v]) => ({ variant: name, ...(typeof v === "object" ? v : { value: v }) }));
      return el("div", {}, renderAny(list), el("pre", { class: "prompt" }, JSON.stringify(value, null, 2)));
    }
  }
  return el("pre", { class: "prompt" }, JSON.stringify(value, null, 2));
}

async function ablate() {
  const out = clear($("#ablate-result"));
  $("#ablate-status").textContent = "running the variants…";
  $("#ablate-btn").disabled = true;
  try {
    const body = request();
    body.answers = lines("#ablate-answers");
    body.gold = lines("#ablate-gold");
    body.permutations = intOrNull($("#ablate-permutations")) ?? 0;
    const data = await api("/api/ablate", body);
    out.append(renderAblation(data.result));
    $("#ablate-status").textContent = "done";
  } catch (err) {
    $("#ablate-status").textContent = "";
    out.append(el("p", { class: "notice" }, err.message));
  } finally {
    $("#ablate-btn").disabled = !ablationReady();
  }
}

function ablationReady() {
  return Boolean(state.options && state.options.model && state.options.features.ablation);
}

// -- candidates ----------------------------------------------------------------------------------

/** A JSON request object, a JSON list of chunks, or JSONL (one chunk per line). */
function parseCandidates(raw) {
  let whole;
  try { whole = JSON.parse(raw); } catch (_) { whole = undefined; }
  if (whole && !Array.isArray(whole) && typeof whole === "object" && Array.isArray(whole.candidates)) {
    const { candidates, question, ...extra } = whole;
    return { candidates, question, extra };
  }
  if (Array.isArray(whole)) return { candidates: whole };
  const candidates = [];
  raw.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    try { candidates.push(JSON.parse(line)); } catch (e) {
      throw new Error(`line ${i + 1} is not valid JSON (${e.message}); give a JSON list, a request object, or one chunk per line`);
    }
  });
  if (!candidates.length) throw new Error("no candidates found; give a JSON list, a request object, or one chunk per line");
  return { candidates };
}

const CONTROLLED = new Set(["model", "source_budget", "reserve_answer", "order", "dedupe", "tokenizer", "compress", "role_caps"]);

async function loadCandidates(parsed, name) {
  state.candidates = parsed.candidates;
  state.sourceName = name;
  state.extra = {};
  for (const [k, v] of Object.entries(parsed.extra || {})) {
    if (!CONTROLLED.has(k)) state.extra[k] = v;
  }
  if (parsed.question) $("#question").value = parsed.question;
  $("#candidates-status").textContent = `${state.candidates.length} candidates from ${name}`;
  await fitSlider();
  await repack();
}

/** Size the budget slider to the candidates: its top is a little over what all of them cost. */
async function fitSlider() {
  const slider = $("#budget");
  try {
    const full = await api("/api/pack", request(packOptions({ source_budget: null, order: "relevance" })));
    const need = full.tokens.sources;
    const max = Math.max(100, Math.ceil((need * 1.2) / 100) * 100);
    slider.max = String(max);
    if (!slider.dataset.touched) slider.value = String(Math.round(need / 2 / 10) * 10);
  } catch (_) {
    // a bad input shows its error on the next pack
  }
  updateBudgetLabel();
}

function updateBudgetLabel() {
  $("#budget-value").textContent = `${$("#budget").value} tokens`;
}

async function useExample() {
  const example = await api("/api/example");
  await loadCandidates({ candidates: example.candidates, question: example.question,
    extra: Object.fromEntries(Object.entries(example).filter(([k]) => k !== "candidates" && k !== "question")) },
  "the built-in example");
  // the example's accepted answer and gold chunk, so the ablation can score it
  if (!$("#ablate-answers").value) $("#ablate-answers").value = "30 days";
  if (!$("#ablate-gold").value) $("#ablate-gold").value = "returns-policy#1";
}

// -- wiring --------------------------------------------------------------------------------------

function selectTab(name) {
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    const on = tab.id === `tab-${name}`;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    $(`#${tab.getAttribute("aria-controls")}`).hidden = !on;
  }
  if (name === "compare") {
    // a side the user has not edited follows the Ask tab's budget
    for (const side of ["#cmp-left", "#cmp-right"]) {
      if (!$(side).dataset.touched) $(".cmp-budget", $(side)).value = $("#budget").value;
    }
    compareSoon();
  }
}

function setOrder(name) {
  state.order = name;
  for (const b of document.querySelectorAll("#orders button")) {
    b.setAttribute("aria-pressed", b.dataset.order === name ? "true" : "false");
  }
}

async function copyPrompt() {
  const text = state.result ? state.result.text : "";
  try {
    await navigator.clipboard.writeText(text);
  } catch (_) {
    const sel = window.getSelection();
    sel.selectAllChildren($("#trace-prompt"));
    document.execCommand("copy");
    sel.removeAllRanges();
  }
  $("#copy-status").textContent = "copied";
  setTimeout(() => { $("#copy-status").textContent = ""; }, 1500);
}

function downloadManifest() {
  if (!state.result) return;
  const blob = new Blob([JSON.stringify(state.result, null, 2) + "\n"], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const a = el("a", { href: url, download: `satchel-manifest-${state.result.prompt_sha256.slice(7, 19)}.json` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

async function init() {
  const options = await api("/api/options");
  state.options = options;
  const d = options.defaults;

  const models = clear($("#model"));
  for (const m of options.models) models.append(el("option", { value: m }, m));
  models.value = options.models.includes(d.model) ? d.model : options.models[0];
  $("#reserve-answer").value = d.reserve_answer;
  $("#dedupe").checked = d.dedupe !== false;
  state.order = options.orders.includes(d.order) ? d.order : options.orders[0];

  const orders = clear($("#orders"));
  // seed 001's three first, in its words; any order added later follows by name
  const first = ["relevance", "edges", "chronological"].filter((n) => options.orders.includes(n));
  for (const name of first.concat(options.orders.filter((n) => !first.includes(n)))) {
    orders.append(el("button", {
      type: "button", class: "order-btn", "data-order": name, "aria-pressed": "false",
      onclick: () => { setOrder(name); repackSoon(0); },
    }, options.order_labels[name] || name));
  }
  setOrder(state.order);

  $("#compress-note").hidden = options.features.compress;
  const status = $("#model-status");
  status.textContent = options.model ? `model: ${options.model}` : "no model configured";
  status.classList.toggle("muted", !options.model);
  if (options.model_error) {
    status.dataset.state = "error";
    showError(`The model could not be loaded: ${options.model_error}`);
  }
  $("#ablate-btn").disabled = !ablationReady();
  if (!options.features.ablation) {
    $("#ablate-status").textContent = "This version of Satchel has no ablation harness (satchel.ablate) yet.";
  } else if (!options.model) {
    $("#ablate-status").textContent = "No model is configured: start the lab with --model to run the variants.";
  }

  for (const tab of document.querySelectorAll('[role="tab"]')) {
    tab.addEventListener("click", () => selectTab(tab.id.slice(4)));
  }
  $("#budget").addEventListener("input", () => { $("#budget").dataset.touched = "1"; updateBudgetLabel(); repackSoon(); });
  for (const id of ["#reserve-answer", "#cap-supporting", "#cap-background", "#question"]) {
    $(id).addEventListener("input", () => repackSoon(250));
  }
  for (const id of ["#dedupe", "#compress", "#model", "#tokenizer"]) {
    $(id).addEventListener("change", async () => { if (id === "#model" || id === "#tokenizer") await fitSlider(); repackSoon(0); });
  }
  $("#ask-btn").addEventListener("click", ask);
  $("#ablate-btn").addEventListener("click", ablate);
  $("#copy-prompt").addEventListener("click", copyPrompt);
  $("#download-manifest").addEventListener("click", downloadManifest);
  $("#use-example").addEventListener("click", () => useExample().catch((e) => showError(e.message)));
  $("#use-paste").addEventListener("click", () => {
    try { loadCandidates(parseCandidates($("#paste").value), "pasted text"); } catch (e) { showError(e.message); }
  });
  $("#upload").addEventListener("change", async () => {
    const file = $("#upload").files[0];
    if (!file) return;
    try { await loadCandidates(parseCandidates(await file.text()), file.name); } catch (e) { showError(e.message); }
    $("#upload").value = "";
  });

  await useExample();
  initCompare();
  document.body.dataset.ready = "1";
}

init().catch((err) => showError(`The lab could not start: ${err.message}`));
