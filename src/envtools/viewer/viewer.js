// The rollout viewer. Every text of a rollout is the model's or the environment's and may be
// hostile: it only ever reaches the page as a text node (textContent), never as markup.
"use strict";
const DATA = JSON.parse(document.getElementById("rollouts").textContent);
const ROLLOUTS = DATA.rollouts;
const FOLD_CHARS = 700;
const VETO_TEXT = {
  no_answer: "no answer was given",
  untouched_document: "no tool ever touched the document",
  no_evidence_seen: "no supporting evidence entered a model's context",
  over_length: "the answer is longer than the cap",
  copies_question: "the answer copies the question",
};
const FILTERS = ["env", "policy", "family", "outcome", "ending", "mistake"];
const state = { sort: "id", desc: false, filters: {}, search: "" };

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}
const fmt = (v, digits = 3) =>
  v == null ? "–" : typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en") : v.toFixed(digits)) : String(v);

// A folded text (its kept characters, the evidence marks inside them, its full length).
function textBlock(folded, cls) {
  const pre = el("pre", { class: cls || "" });
  let at = 0;
  for (const [start, end] of folded.marks || []) {
    pre.append(folded.text.slice(at, start));
    pre.append(el("mark", { class: "evidence", title: "supporting evidence", text: folded.text.slice(start, end) }));
    at = end;
  }
  pre.append(folded.text.slice(at));
  if (folded.text.length <= FOLD_CHARS) return pre;
  pre.classList.add("folded");
  const marks = (folded.marks || []).length;
  const more = (folded.chars > folded.text.length ? ` (${fmt(folded.chars)} in the run; the rest not kept)` : "") +
    (marks ? ` · ${marks} evidence mark${marks > 1 ? "s" : ""}` : "");
  const button = el("button", { class: "unfold", type: "button", text: `show all ${fmt(folded.text.length)} characters${more}` });
  button.addEventListener("click", () => {
    const open = pre.classList.toggle("folded");
    button.textContent = open ? `show all ${fmt(folded.text.length)} characters${more}` : "fold";
  });
  return el("div", {}, pre, button);
}

function plainDetails(label, body) {
  const details = el("details", { class: "plain" }, el("summary", { text: label }));
  details.append(body);
  return details;
}

// ------------------------------------------------------------------------------ one rollout

function systemPrompt(index) {
  const text = DATA.systems[index];
  return plainDetails("system prompt", textBlock({ text, marks: [], chars: text.length }));
}

function subCallBlock(rollout, sub) {
  // Only what the saved form records (a v1 trace holds neither depth nor slice).
  const parts = [`sub-call ${sub.index}`];
  if (sub.depth != null) parts.push(`depth ${sub.depth}`);
  if (sub.kind) parts.push(sub.kind);
  if (sub.origin) parts.push(`from ${sub.origin}`);
  if (sub.slice) parts.push(`slice ${fmt(sub.slice[0])}–${fmt(sub.slice[1])}`);
  else if (sub.slice_source) parts.push(`${sub.slice_source} text`);
  const label = parts.join(" · ") + (sub.slice_chars != null ? ` (${fmt(sub.slice_chars)} characters)` : "");
  const details = el("details", { class: "sub", "data-sub": String(sub.index) }, el("summary", { text: label }));
  details.append(el("div", { class: "who", text: "prompt" }), textBlock(sub.prompt));
  if (sub.system != null) details.append(systemPrompt(sub.system));
  details.append(turnsBlock(rollout, sub.turns, sub.index));
  return details;
}

function turnsBlock(rollout, turns, parent) {
  const box = el("div", { class: "turns" });
  const children = rollout.sub_calls.filter((s) => s.parent === parent);
  const replies = new Set();
  for (const turn of turns) {
    if (turn.role === "assistant") {
      const node = el("div", { class: "turn assistant" }, el("div", { class: "who", text: `reply ${turn.reply}` }));
      if (turn.text.text) node.append(textBlock(turn.text));
      else if (!turn.calls.length) node.append(el("div", { class: "empty", text: "(empty reply)" }));
      for (const call of turn.calls) {
        node.append(el("div", { class: "who", text: `call ${call.name || "(no name)"}` }), textBlock(call.arguments));
      }
      box.append(node);
      // The sub-calls this reply's calls made, before the results they fed.
      replies.add(turn.reply);
      for (const sub of children.filter((s) => s.turn === turn.reply)) box.append(subCallBlock(rollout, sub));
    } else if (turn.role === "tool") {
      const node = el("div", { class: "turn tool" + (turn.error_kind ? " error" : "") });
      const who = el("div", { class: "who", text: `result${turn.name ? " of " + turn.name : ""} ` });
      if (turn.error_kind) who.append(el("span", { class: "badge error", text: turn.error_kind }));
      node.append(who, textBlock(turn.text));
      box.append(node);
    } else {
      box.append(el("div", { class: "turn" }, el("div", { class: "who", text: turn.role }), textBlock(turn.text)));
    }
  }
  // Sub-calls whose reply is not among the saved turns (none when the transcript is whole).
  for (const sub of children.filter((s) => !replies.has(s.turn))) box.append(subCallBlock(rollout, sub));
  return box;
}

function scoresTable(rollout) {
  const main = DATA.main_scores[rollout.env] || [];
  const table = el("table", { class: "scores" });
  const other = el("table", { class: "scores" });
  for (const [name, value] of Object.entries(rollout.scores)) {
    (main.includes(name) ? table : other).append(el("tr", {}, el("th", { text: name }), el("td", { class: "num", text: fmt(value) })));
  }
  const box = el("div", {}, table);
  if (other.rows.length) box.append(plainDetails("every metric", other));
  return box;
}

function showRollout(id) {
  const r = ROLLOUTS[id];
  const view = document.getElementById("rollout");
  view.replaceChildren();
  if (!r) {
    view.append(el("p", { text: `no rollout ${id}` }));
    return;
  }
  view.append(el("a", { class: "back", href: "#", text: "← all rollouts" }));
  view.append(el("h2", { text: `Rollout ${id}: ${r.policy}${r.family ? " · " + r.family : ""}${r.task != null ? " · task " + r.task : ""}` }));
  const facts = el("dl", { class: "facts" });
  const fact = (name, value, cls) => facts.append(el("dt", { text: name }), el("dd", { class: cls || "", text: value }));
  fact("question", r.question ?? "(not in this file)");
  fact("gold", r.gold == null ? "(not in this file)" : r.gold + (r.aliases.length ? `  (also: ${r.aliases.join(", ")})` : ""));
  fact("answer", r.answer ?? "(none)");
  fact("outcome", r.outcome, "outcome-" + r.outcome);
  fact("ending", r.ending);
  if (r.error) fact("error", r.error);
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  if (r.evidence) {
    const shown = r.evidence_marks ? `${plural(r.evidence_marks, "mark")} below, where a tool output or a slice shows them` : "none in the saved turns";
    fact("evidence", `${plural(r.evidence, "supporting sentence")}; ${shown}`);
  }
  view.append(facts);
  view.append(el("h3", { text: "Rewards" }), scoresTable(r));
  const why = el("div", { class: "vetoes" });
  for (const veto of r.vetoes) why.append(el("span", { class: "badge veto", title: VETO_TEXT[veto] || "", text: veto }), VETO_TEXT[veto] || "", el("br"));
  if (r.vetoes.length) view.append(el("h3", { text: "Correctness vetoes that fired" }), why);
  const kinds = Object.entries(r.mistakes);
  if (kinds.length) {
    const box = el("div", {});
    for (const [kind, n] of kinds) box.append(el("span", { class: "badge error", text: `${kind} × ${n}` }));
    view.append(el("h3", { text: "Mistakes" }), box);
  }
  view.append(el("h3", { text: "Turns" }));
  if (r.system != null) view.append(systemPrompt(r.system));
  view.append(turnsBlock(r, r.turns, null));
}

// ---------------------------------------------------------------------------- every rollout

const COLUMNS = [
  ["id", "#", true], ["policy", "policy"], ["family", "family"], ["outcome", "outcome"],
  ["ending", "ending"], ["reward", "reward", true], ["tokens", "tokens", true],
  ["tool_errors", "tool errors", true], ["mistakes", "mistakes"],
];

function matches(r) {
  for (const key of FILTERS) {
    const want = state.filters[key];
    if (!want) continue;
    if (key === "mistake" ? !(want in r.mistakes) : String(r[key] ?? "") !== want) return false;
  }
  const needle = state.search.toLowerCase();
  return !needle || [r.question, r.answer, r.gold].some((t) => t != null && String(t).toLowerCase().includes(needle));
}

function renderTable() {
  const rows = ROLLOUTS.filter(matches);
  const key = state.sort;
  rows.sort((a, b) => {
    const x = a[key] ?? -Infinity, y = b[key] ?? -Infinity;
    const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return (state.desc ? -c : c) || a.id - b.id;
  });
  const body = document.querySelector("#table tbody");
  body.replaceChildren();
  for (const r of rows) {
    const tr = el("tr", { "data-id": String(r.id) });
    tr.append(el("td", { class: "num" }, el("a", { href: `#r${r.id}`, text: String(r.id) })));
    tr.append(el("td", { text: r.policy }), el("td", { text: r.family ?? "" }));
    tr.append(el("td", { class: "outcome-" + r.outcome, text: r.outcome }), el("td", { text: r.ending }));
    tr.append(el("td", { class: "num", text: fmt(r.reward) }), el("td", { class: "num", text: fmt(r.tokens) }));
    tr.append(el("td", { class: "num", text: String(r.tool_errors) }));
    tr.append(el("td", { text: Object.entries(r.mistakes).map(([k, n]) => `${k} ${n}`).join(", ") }));
    body.append(tr);
  }
  document.getElementById("shown").textContent = `${rows.length} of ${ROLLOUTS.length} shown`;
  for (const th of document.querySelectorAll("#table th")) {
    th.classList.remove("sorted-asc", "sorted-desc");
    if (th.dataset.key === key) th.classList.add(state.desc ? "sorted-desc" : "sorted-asc");
  }
}

function buildList() {
  const filters = document.getElementById("filters");
  for (const key of FILTERS) {
    const values = new Set();
    for (const r of ROLLOUTS) {
      if (key === "mistake") Object.keys(r.mistakes).forEach((k) => values.add(k));
      else if (r[key] != null) values.add(String(r[key]));
    }
    if (values.size === 0 || (key === "env" && values.size === 1)) continue;
    const select = el("select", { id: "filter-" + key }, el("option", { value: "", text: "any" }));
    for (const value of [...values].sort()) select.append(el("option", { value, text: value }));
    select.addEventListener("change", () => { state.filters[key] = select.value; renderTable(); });
    filters.append(el("label", {}, key, select));
  }
  const search = el("input", { id: "search", type: "search", placeholder: "question, answer or gold" });
  search.addEventListener("input", () => { state.search = search.value; renderTable(); });
  filters.append(el("label", {}, "search", search), el("span", { id: "shown", class: "count" }));
  const head = el("tr");
  for (const [key, label, numeric] of COLUMNS) {
    const th = el("th", { class: (numeric ? "num " : "") + (key === "mistakes" ? "" : "sortable"), text: label });
    th.dataset.key = key;
    if (key !== "mistakes") th.addEventListener("click", () => {
      state.desc = state.sort === key ? !state.desc : numeric && key !== "id";
      state.sort = key;
      renderTable();
    });
    head.append(th);
  }
  document.querySelector("#table thead").append(head);
  renderTable();
}

function buildGlance() {
  const s = DATA.summary;
  const glance = document.getElementById("glance");
  // A policy a row, a family a column: a ladder of many policies stays readable.
  const familyNames = Object.keys(s.correct_by_family);
  const families = el("table", { id: "by-family" });
  const head = el("tr", {}, el("th", { text: "policy" }));
  for (const f of familyNames) head.append(el("th", { class: "num", text: f }));
  head.append(el("th", { class: "num", text: "all" }));
  families.append(head);
  for (const p of s.policies) {
    const tr = el("tr", {}, el("td", { text: p }));
    let right = 0, total = 0;
    for (const f of familyNames) {
      const cells = s.correct_by_family[f];
      const c = Object.hasOwn(cells, p) ? cells[p] : null;  // "constructor" is a policy too
      if (c) { right += c[0]; total += c[1]; }
      tr.append(el("td", { class: "num", text: c ? `${c[0]}/${c[1]}` : "" }));
    }
    tr.append(el("td", { class: "num", text: `${right}/${total}` }));
    families.append(tr);
  }
  const counts = (title, entries) => {
    const table = el("table", {}, el("tr", {}, el("th", { text: title }), el("th", { class: "num", text: title === "kind" ? "count" : "rollouts" })));
    for (const [k, n] of entries) table.append(el("tr", {}, el("td", { text: k }), el("td", { class: "num", text: String(n) })));
    return table;
  };
  glance.append(
    el("div", {}, el("h3", { text: "Right answers by family" }), families),
    el("div", {}, el("h3", { text: "Outcomes" }), counts("outcome", Object.entries(s.outcomes))),
    el("div", {}, el("h3", { text: "Endings" }), counts("ending", Object.entries(s.endings))),
  );
  const kinds = Object.entries(s.mistakes);
  if (kinds.length) glance.append(el("div", {}, el("h3", { text: "Mistakes by kind" }), counts("kind", kinds)));
}

function route() {
  const match = /^#r(\d+)$/.exec(location.hash);
  document.getElementById("list").hidden = !!match;
  document.getElementById("rollout").hidden = !match;
  if (match) {
    showRollout(Number(match[1]));
    window.scrollTo(0, 0);
  }
}

document.getElementById("title").textContent = DATA.title;
document.getElementById("about").textContent = DATA.about;
buildGlance();
buildList();
window.addEventListener("hashchange", route);
route();
document.body.dataset.drawnMs = performance.now().toFixed(1);  // from navigation start
document.body.dataset.ready = "1";
