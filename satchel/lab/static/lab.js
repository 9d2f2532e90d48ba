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
  extra: {},            // options of a loaded file that no control shows (listed, see showFileOptions)
  extraCaps: {},        // its role caps for roles without a field
  fileBudget: undefined, // its source_budget (null: no cap), for fitSlider
  order: "relevance",
  result: null,         // the last PackResult.to_dict()
  reasons: {},          // each id's reason as the CLI trace words it (trace_reasons)
  countsNote: null,     // how exact the counts are when another model answers (counts_note)
  explainSeq: 0,        // the last row explained (an older answer is dropped)
  stale: false,         // the last pack was refused: what is shown is an older one
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
  ["beyond_input", "beyond the input limit"],  // (a model that takes less input than its window)
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

/** A role cap as typed, sent as its text for the server to read as `satchel pack --role-caps`
 * does: whole tokens (120), or a share of the source budget (0.25, 1.0). Read here as a
 * number, 1.0 became 1, which Python takes for a cap of 1 token, not the whole budget. */
function capText(input) {
  const text = input.value.trim();
  return text === "" ? null : text;
}

function packOptions(overrides = {}) {
  const o = {};
  o.model = $("#model").value;
  o.source_budget = Number($("#budget").value);
  const reserve = intOrNull($("#reserve-answer"));
  if (reserve !== null) o.reserve_answer = reserve;
  o.order = state.order;
  o.dedupe = $("#dedupe").checked;
  if ($("#tokenizer").value) o.tokenizer = $("#tokenizer").value;
  // compress and role_caps are only sent when asked for: older versions do not know them
  if ($("#compress").checked) o.compress = true;
  const caps = { ...state.extraCaps };
  for (const role of ["supporting", "background"]) {
    const v = capText($(`#cap-${role}`));
    if (v !== null) caps[role] = v;
  }
  if (Object.keys(caps).length) o.role_caps = caps;
  // what a loaded file set that no control can show: listed on the page, never applied unseen
  Object.assign(o, state.extra);
  return Object.assign(o, overrides);
}

function request(options = packOptions()) {
  return { candidates: state.candidates, question: $("#question").value, options };
}

/** A request for a pack the page shows: with each reason worded as the CLI trace does. */
function shownRequest() {
  return { ...request(), trace: true };
}

/** Split a response's trace_reasons and counts_note off the pack, which stays exactly the
 * library's. */
function takeReasons(data) {
  const { trace_reasons: reasons, counts_note: note, ...rest } = data;
  state.reasons = reasons || {};
  state.countsNote = note || null;
  return rest;
}

// -- packing (debounced) ------------------------------------------------------------------

let timer = null;
function repackSoon(delay = 120) {
  clearTimeout(timer);
  timer = setTimeout(repack, delay);
}

/** Why a number field cannot be read, or "": a number field holding what is no number reads
 * as empty (value ""), and a cap typed "1e" was dropped without a word. */
function fieldProblem() {
  for (const [id, name, fix] of [
    ["#cap-supporting", "the supporting cap", "whole tokens (120), a share of the source budget (0.25), or nothing"],
    ["#cap-background", "the background cap", "whole tokens (120), a share of the source budget (0.25), or nothing"],
    ["#reserve-answer", "the answer reserve", "whole tokens, e.g. 512, or nothing for the default"],
  ]) {
    if ($(id).validity.badInput) return `${name} is not a number; give ${fix}`;
  }
  return "";
}

async function repack() {
  const seq = ++state.seq;
  const problem = fieldProblem();
  if (problem) {  // (the last pack stays, marked out of date, as for input the server refuses)
    packRefused(problem);
    return;
  }
  $("#pack-status").textContent = "packing…";
  try {
    const data = await api("/api/pack", shownRequest());
    if (seq !== state.seq) return;          // a newer pack is on its way
    state.result = takeReasons(data);
    showError("");
    render(state.result);
    if (!$("#panel-compare").hidden) compareSoon();
  } catch (err) {
    if (seq !== state.seq) return;
    packRefused(err.message);
  }
}

/** Say why the input could not be packed; the last pack stays on the page, marked out of date. */
function packRefused(message) {
  const status = $("#pack-status");
  status.textContent = "error";
  status.dataset.state = "error";
  delete status.dataset.sha;
  showError(message);
  setStale(true);
}

/** Mark what is shown as an older pack's (the input was refused) or as current. The input
 * stays as typed; Copy and Download serve only a current pack. */
function setStale(stale) {
  state.stale = stale;
  for (const id of ["#panel-ask", "#panel-trace"]) $(id).classList.toggle("stale", stale);
  for (const note of document.querySelectorAll(".stale-note")) note.hidden = !stale;
  const none = stale || !state.result;
  $("#copy-prompt").disabled = none;
  $("#download-manifest").disabled = none;
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
  fitToRoom(result);
  setStale(false);
}

/** What the window leaves for sources in this pack (its source budget, had it no cap). */
function roomOf(result) {
  const b = result.budget;
  // (the prompt's limit: the window less the answer, and no more than the model takes as
  // input where its API takes less: gpt-5's 272,000 of 400,000)
  let limit = b.context_window - (b.answer || 0);
  if (b.input_limit !== undefined && b.input_limit !== null) limit = Math.min(limit, b.input_limit);
  return limit - ["system", "question", "history", "contract", "other"].reduce((n, k) => n + (b[k] || 0), 0);
}

/** The slider never offers more than the window leaves for sources (a longer question or a
 * larger answer reserve leaves less). */
function fitToRoom(result) {
  const slider = $("#budget");
  const room = roomOf(result);
  if (room >= 0 && Number(slider.max) > room) {
    slider.max = String(room);
    updateBudgetLabel();
  }
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

/** Find each source's span in the prompt. The sources open the last message, whose content
 * ends the text (so no marker is searched for: a chunk or the question may hold any), and in
 * it chunk text and the question are escaped, so only real tags match. */
function sourceSpans(result) {
  const text = result.text;
  const spans = [];
  const last = result.messages[result.messages.length - 1];
  if (!last || !text.endsWith(last.content)) return spans;
  let from = text.length - last.content.length;
  if (!text.startsWith("<sources>", from)) return spans;
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

// Where a candidate came from (the manifest's provenance), as one line: the ID cell's tooltip.
function provenanceText(p) {
  if (!p || typeof p !== "object") return null;
  const parts = [];
  if (p.doc_id != null) parts.push(p.start != null && p.end != null ? `${p.doc_id}, characters ${p.start}–${p.end}` : `${p.doc_id}`);
  for (const key of ["title", "section"]) if (p[key] != null) parts.push(`${p[key]}`);
  if (p.updated != null) parts.push(`updated ${p.updated}`);
  for (const key of ["source", "url", "uri", "path", "file", "page"]) if (p[key] != null) parts.push(`${key} ${p[key]}`);
  return parts.length ? parts.join(" · ") : null;
}

/** Under the table, what happened to candidate ``id`` and where the prompt holds each of its
 * sentences (its own source's label, another's with *, or - where it does not): the trace
 * counts what a stage took out of a chunk; this shows which text. */
async function explainRow(id) {
  const box = $("#trace-explain");
  const seq = ++state.explainSeq;
  box.hidden = false;
  clear(box).append(el("p", { class: "note" }, `explaining ${id}…`));
  let data;
  try {
    data = await api("/api/explain", { ...request(), id });
  } catch (err) {
    if (seq === state.explainSeq) clear(box).append(el("p", { class: "error" }, err.message));
    return;
  }
  if (seq !== state.explainSeq) return;  // (another row was picked meanwhile)
  clear(box).append(
    el("p", { class: "explain-head" }, el("b", {}, data.id), `: ${data.status} at ${data.stage} (${data.label || "not sent"}): ${data.reason}`),
    el("ol", { class: "explain-sentences" }, ...data.sentences.map((s) =>
      el("li", { "data-where": s.where },
        el("span", { class: `where ${s.where === "-" ? "none" : s.where.endsWith("*") ? "other" : "own"}` }, s.where),
        el("div", { class: "said" },
          el("span", { class: "text" }, s.text),
          // (a candidate this one conflicts with, in the sentence that tells the two apart)
          ...s.otherwise.map((o) => el("div", { class: "otherwise", "data-id": o.id },
            "≠ ", el("b", {}, o.id), ` (${o.label || "not sent"}) says: ${o.text}`)))))),
    el("p", { class: "note" }, "Each sentence: the label of its own source, another source's with *, or – where the prompt does not hold it; ≠: a candidate it conflicts with states it otherwise."),
  );
}

function renderTrace(result) {
  renderBudget(result);
  state.explainSeq++;  // (a row's explanation belongs to the pack it was asked of)
  const explained = $("#trace-explain");
  clear(explained).hidden = true;
  const tbody = clear($("#trace-table tbody"));
  for (const e of tableOrder(result)) {
    const comp = e.compression;
    let ratio = "";
    if (comp && typeof comp === "object") {
      const r = comp.ratio ?? (comp.tokens_before ? (comp.tokens_after ?? e.sent_tokens) / comp.tokens_before : null);
      if (typeof r === "number" && Number.isFinite(r)) ratio = r.toFixed(2);
    }
    const reason = state.reasons[e.id] ?? e.reason;
    // a row shows where each sentence of its candidate went, and a kept row its source in the
    // prompt: by click, or by Enter or Space when focused
    const row = el("tr", { class: e.status, "data-id": e.id, "data-label": e.label || "", tabindex: "0",
      title: (e.label ? `show ${e.label} in the prompt, and ` : "show ") + "where each of its sentences went" },
      el("td", { class: "n" }, e.position ?? "–"),
      el("td", {}, e.label ? el("span", { class: `tag src-${(e.position - 1) % 6}` }, e.label) : "–"),
      el("td", { class: "id", title: provenanceText(e.provenance) }, e.id),
      el("td", {}, el("span", { class: `status ${e.status}` }, e.status)),
      el("td", { class: "reason" }, reason),
      el("td", {}, e.role ?? "–"),
      el("td", { class: "n" }, e.tokens),
      el("td", { class: "n" }, e.status === "kept" ? e.sent_tokens : "–"),
      el("td", { class: "n" }, e.status === "kept" ? e.cost : "–"),
      el("td", { class: "n" }, ratio || "–"),
      el("td", { class: "n" }, e.rank),
    );
    const pick = () => {
      if (e.label) focusSource(e.label);
      explainRow(e.id);
    };
    row.addEventListener("click", pick);
    row.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter" && ev.key !== " ") return;
      ev.preventDefault();
      pick();
    });
    tbody.append(row);
  }
  const k = kept(result).length;
  $("#trace-summary").textContent =
    `${k} kept, ${result.manifest.length - k} dropped · order ${result.config.order} · tokenizer ${result.tokenizer.name}` +
    (!result.tokenizer.exact ? " (estimated)" : state.countsNote ? ` (${state.countsNote})` : " (exact)");
  renderPrompt($("#trace-prompt"), result);
}

function renderBudget(result) {
  const t = result.tokens;
  const window = t.context_window;
  const bar = clear($("#budget-bar"));
  const zoom = clear($("#budget-bar-zoom"));
  const legend = clear($("#budget-legend"));
  const zoomTotal = window - t.free;
  const b = result.budget;
  // Free is what the prompt could still take: past a model's input limit (gpt-5 takes 272,000
  // of its 400,000), the window is no room for more sources, and is drawn apart.
  const beyond = b.input_limit ? Math.max(0, window - b.answer - b.input_limit) : 0;
  for (const [key, name] of PARTS) {
    if (key === "beyond_input" && !beyond) continue;
    const value = key === "free" ? t.free - beyond : key === "beyond_input" ? beyond : t[key];
    const seg = (total) => el("div", {
      class: `seg part-${key}`, "data-part": key, "data-tokens": value,
      title: `${name}: ${value} tokens (${(100 * value / total).toFixed(1)}%)`,
    });
    const a = seg(window);
    a.style.width = `${(100 * value) / window}%`;
    bar.append(a);
    if (key !== "free" && key !== "beyond_input") {
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
    const data = takeReasons(await api("/api/ask", shownRequest()));
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

/** Why a side's budget field cannot be packed, or "" (empty is no budget 0, Number("") is). */
function budgetProblem(side) {
  const input = $(".cmp-budget", $(side));
  const name = side === "#cmp-left" ? "A" : "B";
  if (input.value.trim() === "") {
    return input.validity.badInput ? `${name}: the budget is not a number; give whole tokens, e.g. 400`
      : `${name}: the budget is empty; give the tokens the sources may use, e.g. 400`;
  }
  return "";
}

function showCompareError(message) {
  const box = $("#cmp-error");
  box.textContent = message || "";
  box.hidden = !message;
  $("#panel-compare").classList.toggle("stale", Boolean(message));
}

let compareTimer = null;
function compareSoon() {
  clearTimeout(compareTimer);
  compareTimer = setTimeout(compare, 120);
}

async function compare() {
  const problems = ["#cmp-left", "#cmp-right"].map(budgetProblem).filter(Boolean);
  if (problems.length) {
    showCompareError(problems.join("\n"));
    return;
  }
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
    showCompareError("");
  } catch (err) {
    showCompareError(err.message);
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

/** Pasted or uploaded text read by the server as `satchel pack FILE` reads it (and the lab's
 * own request body, and an ablation query): its candidates, question and pack options. */
async function readText(text, name) {
  return api("/api/load", { text, name });
}

/** Put the controls as the page starts (the server's pack defaults); the slider is left be. */
function resetControls() {
  const d = state.options.defaults;
  const models = state.options.models;
  $("#model").value = models.includes(d.model) ? d.model : models[0];
  $("#tokenizer").value = "";
  $("#reserve-answer").value = d.reserve_answer;
  $("#dedupe").checked = d.dedupe !== false;
  $("#compress").checked = d.compress === true;
  for (const role of ["supporting", "background"]) $(`#cap-${role}`).value = "";
  setOrder(state.options.orders.includes(d.order) ? d.order : state.options.orders[0]);
}

const isCount = (v) => Number.isInteger(v) && v >= 0;

/** Show one option of a loaded file on its control; false when no control can show it. */
function setControl(key, value) {
  switch (key) {
    case "model":
      if (!state.options.models.includes(value)) return false;
      $("#model").value = value;
      return true;
    case "tokenizer":
      if (value !== null && ![...$("#tokenizer").options].some((o) => o.value && o.value === value)) return false;
      $("#tokenizer").value = value ?? "";
      return true;
    case "order":
      if (!state.options.orders.includes(value)) return false;
      setOrder(value);
      return true;
    case "dedupe":
    case "compress":
      if (typeof value !== "boolean") return false;
      $(`#${key}`).checked = value;
      return true;
    case "reserve_answer":
      if (!Number.isInteger(value)) return false;   // (a negative one shows, and pack() says why)
      $("#reserve-answer").value = value;
      return true;
    case "source_budget":
      if (value !== null && !isCount(value)) return false;
      state.fileBudget = value;                      // set on the slider by fitSlider
      return true;
    case "role_caps": {
      // (each cap comes as the text the server wrote for it, "1.0" for a share of the whole
      // budget: a number would reach here as 1, one token)
      if (!value || typeof value !== "object" || Array.isArray(value)
        || !Object.values(value).every((cap) => typeof cap === "string")) return false;
      for (const [role, cap] of Object.entries(value)) {
        if (role === "supporting" || role === "background") $(`#cap-${role}`).value = cap === "none" ? "" : cap;
        else state.extraCaps[role] = cap;
      }
      return true;
    }
    default:
      return false;
  }
}

/** The file's options: each on its control when one can show it, the rest kept and listed.
 * A file that carries options is a whole setting, as for `satchel pack FILE`: what it leaves
 * out is pack()'s default, not what the controls were left at. */
function applyFileOptions(options, name) {
  state.extra = {};
  state.extraCaps = {};
  state.fileBudget = undefined;
  const keys = Object.keys(options);
  if (keys.length) resetControls();
  const shown = [];
  for (const key of keys) {
    if (setControl(key, options[key])) shown.push(key);
    else state.extra[key] = options[key];
  }
  const budget = shown.includes("source_budget") ? "" : " (the budget is the slider's)";
  $("#file-options-set").textContent = shown.length
    ? `${name} set ${shown.join(", ")}; the other settings are back at their defaults${budget}.` : "";
  showFileOptions(name);
}

function short(text) {
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

function shortJSON(value) {
  return short(JSON.stringify(value) ?? String(value));
}

/** List what the file set that no control shows, with a way to clear it. */
function showFileOptions(name = state.sourceName) {
  const items = Object.entries(state.extra).map(([k, v]) => `${k}=${shortJSON(v)}`);
  for (const [role, cap] of Object.entries(state.extraCaps)) items.push(`role_caps.${role}=${short(cap)}`);
  const list = $("#file-extra");
  list.textContent = items.length ? `From ${name}: ${items.join(" · ")}` : "";
  $("#clear-file-options").hidden = !items.length;
  $("#file-options").hidden = !items.length && !$("#file-options-set").textContent;
}

function clearFileOptions() {
  state.extra = {};
  state.extraCaps = {};
  showFileOptions();
  repackSoon(0);
}

/** A control changed by hand: the file's value for that option no longer applies. */
function controlChanged(key) {
  if (key && key in state.extra) {
    delete state.extra[key];
    showFileOptions();
  }
}

async function loadCandidates(parsed, name) {
  state.candidates = parsed.candidates;
  state.sourceName = name;
  applyFileOptions(parsed.options || {}, name);
  if (parsed.question) $("#question").value = parsed.question;
  // an ablation query's accepted answers and gold chunks, for the Ablation tab
  if (parsed.answers) $("#ablate-answers").value = parsed.answers.join("\n");
  if (parsed.gold) $("#ablate-gold").value = parsed.gold.join("\n");
  if (Number.isInteger(parsed.permutations)) $("#ablate-permutations").value = parsed.permutations;
  $("#candidates-status").textContent =
    `${state.candidates.length} candidates from ${name}` + (parsed.note ? ` (${parsed.note})` : "");
  await fitSlider();
  await repack();
}

async function loadText(text, name) {
  try {
    await loadCandidates(await readText(text, name), name);
  } catch (e) {
    showError(e.message);
  }
}

/** Size the budget slider to the candidates: its top is a little over what all of them cost,
 * and never more than the window leaves for sources. */
async function fitSlider() {
  const slider = $("#budget");
  let room = null;
  try {
    const all = packOptions({ source_budget: null, order: "relevance" });
    const [full, best] = await Promise.all([
      api("/api/pack", request(all)),
      api("/api/pack", request({ ...all, max_sources: 1 })),
    ]);
    room = full.tokens.source_budget;      // with no cap, the source budget is all the window leaves
    const need = full.tokens.sources;
    slider.max = String(Math.min(room, Math.max(100, Math.ceil((need * 1.2) / 100) * 100)));
    if (state.fileBudget === undefined && !slider.dataset.touched) {
      // Half of what all candidates cost, to show what packing drops; but never less than
      // what the best-ranked candidate costs alone, so it is not dropped for want of room.
      const start = Math.max(Math.round(need / 2 / 10) * 10, best.tokens.sources);
      slider.value = String(Math.min(start, Number(slider.max)));
    }
  } catch (_) {
    // a bad input shows its error on the next pack
  }
  if (state.fileBudget !== undefined) {
    // the file's budget (null: no cap); past the window's room it packs as the room does
    const want = state.fileBudget === null
      ? room ?? Number(slider.max) : Math.min(state.fileBudget, room ?? Infinity);
    if (want > Number(slider.max)) slider.max = String(want);
    slider.value = String(want);
  }
  updateBudgetLabel();
}

function updateBudgetLabel() {
  $("#budget-value").textContent = `${$("#budget").value} tokens`;
}

async function useExample() {
  const example = await api("/api/example");
  const { candidates, question, ...options } = example;
  await loadCandidates({ candidates, question, options }, "the built-in example");
  // the example's accepted answer and gold chunk, so the ablation can score it
  if (!$("#ablate-answers").value) $("#ablate-answers").value = "30 days";
  if (!$("#ablate-gold").value) $("#ablate-gold").value = "returns-policy#1";
}

// -- wiring --------------------------------------------------------------------------------------

function selectTab(name) {
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    const on = tab.id === `tab-${name}`;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    tab.tabIndex = on ? 0 : -1;  // (one stop in the Tab order; the arrows move between tabs)
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
  if (!state.result || state.stale) return;
  const text = state.result.text;
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
  if (!state.result || state.stale) return;
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
  setStale(false);

  const orders = clear($("#orders"));
  // seed 001's three first, in its words; any order added later follows by name
  const first = ["relevance", "edges", "chronological"].filter((n) => options.orders.includes(n));
  for (const name of first.concat(options.orders.filter((n) => !first.includes(n)))) {
    orders.append(el("button", {
      type: "button", class: "order-btn", "data-order": name, "aria-pressed": "false",
      onclick: () => { setOrder(name); controlChanged("order"); repackSoon(0); },
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

  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener("click", () => selectTab(tab.id.slice(4)));
    tab.tabIndex = tab.getAttribute("aria-selected") === "true" ? 0 : -1;
  }
  // The tab bar as a tab list is used from the keyboard: left and right arrows (wrapping),
  // Home and End move to a tab and show it.
  $('[role="tablist"]').addEventListener("keydown", (event) => {
    const at = tabs.indexOf(document.activeElement);
    const moves = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 };
    if (at < 0 || !(event.key in moves)) return;
    event.preventDefault();
    const next = tabs[(moves[event.key] + tabs.length) % tabs.length];
    next.focus();
    selectTab(next.id.slice(4));
  });
  $("#budget").addEventListener("input", () => {
    $("#budget").dataset.touched = "1";
    state.fileBudget = undefined;
    controlChanged("source_budget");  // (a file's budget the slider could not show was kept over it)
    updateBudgetLabel();
    repackSoon();
  });
  for (const [id, key] of [["#reserve-answer", "reserve_answer"], ["#cap-supporting", "role_caps"],
    ["#cap-background", "role_caps"], ["#question", null]]) {
    $(id).addEventListener("input", () => { controlChanged(key); repackSoon(250); });
  }
  for (const id of ["#dedupe", "#compress", "#model", "#tokenizer"]) {
    $(id).addEventListener("change", async () => {
      controlChanged(id.slice(1));
      if (id === "#model" || id === "#tokenizer") await fitSlider();
      repackSoon(0);
    });
  }
  $("#clear-file-options").addEventListener("click", clearFileOptions);
  $("#ask-btn").addEventListener("click", ask);
  $("#ablate-btn").addEventListener("click", ablate);
  $("#copy-prompt").addEventListener("click", copyPrompt);
  $("#download-manifest").addEventListener("click", downloadManifest);
  $("#use-example").addEventListener("click", () => useExample().catch((e) => showError(e.message)));
  $("#use-paste").addEventListener("click", () => loadText($("#paste").value, "pasted text"));
  $("#upload").addEventListener("change", async () => {
    const file = $("#upload").files[0];
    if (!file) return;
    await loadText(await file.text(), file.name);
    $("#upload").value = "";
  });

  await useExample();
  initCompare();
  document.body.dataset.ready = "1";
}

init().catch((err) => showError(`The lab could not start: ${err.message}`));
