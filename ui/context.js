// Context preview: a query, a budget and the signals an agent would send
// (its current file, recent errors, activity) → the context Mneme would
// give it: the budget bars per tier (allocated, used, wanted), each item
// with its tier, tokens and reason, and the text itself.

import { $, agentPath, api, button, clip, currentAgent, element, failed, fill, latestOnly } from "./api.js";
import { readable, supersededMark } from "./marks.js";
import { showProvenance } from "./provenance.js";

const previews = latestOnly();
let shownFor = null;

/** Nothing to load: the view answers its form. A preview of another agent
 *  is cleared. */
export function load() {
  if (currentAgent() === shownFor) return;
  previews();
  shownFor = currentAgent();
  $("#context-result").hidden = true;
}

async function preview(event) {
  event.preventDefault();
  const agent = currentAgent();
  if (!agent) return;
  const signals = {};
  const file = $("#context-file").value.trim();
  const errors = $("#context-errors").value.split("\n").map((line) => line.trim()).filter(Boolean);
  const activity = $("#context-activity").value;
  if (file) signals.current_file = file;
  if (errors.length) signals.recent_errors = errors;
  if (activity) signals.activity = activity;
  const body = { query: $("#context-query").value.trim(), budget: Number($("#context-budget").value), signals };
  const result = $("#context-result");
  const current = previews();
  try {
    const answer = await api(agentPath(agent, "/context"), { method: "POST", body });
    if (!current()) return;
    render(agent, answer);
    result.hidden = false;
  } catch (error) {
    if (!current()) return;
    result.hidden = false;
    failed($("#context-items"), error);
    $("#context-bars").replaceChildren();
    $("#context-total").textContent = "";
  }
}

/** A bar `used` of `whole` long, with `wanted` marked past it when more was
 *  wanted than given. */
function bar(label, used, whole, wanted) {
  const row = element("div", undefined, "bar-row");
  const track = element("div", undefined, "bar");
  const fillBar = element("div", undefined, "bar-used");
  fillBar.style.width = `${whole ? Math.min(100, (100 * used) / whole) : 0}%`;
  track.append(fillBar);
  if (wanted > whole && whole > 0) track.classList.add("short");
  row.append(element("span", label, "bar-label"), track, element("span", describe(used, whole, wanted), "meta"));
  return row;
}

const describe = (used, whole, wanted) =>
  `${used} of ${whole} tokens` + (wanted > used ? `, ${wanted} wanted` : "");

/** The tiers in the order the context fills them. */
const TIERS = ["core", "critical", "relevant", "background", "index"];
const tierOrder = (tier) => (TIERS.includes(tier) ? TIERS.indexOf(tier) : TIERS.length);

/** Kinds of context lines that are not items of the memory (the task,
 *  constraints, session summary, phase pointers): they show the events
 *  they come from as references instead of opening an item's provenance. */
const NOT_ITEMS = new Set(["core", "session", "phase"]);

function render(agent, answer) {
  $("#context-total").replaceChildren(
    bar(`budget (${answer.policy} policy)`, answer.tokens, answer.budget, answer.tokens),
  );
  $("#context-total").dataset.tokens = answer.tokens;
  $("#context-total").dataset.budget = answer.budget;
  $("#context-bars").replaceChildren(
    ...Object.entries(answer.tiers).sort(([a], [b]) => tierOrder(a) - tierOrder(b)).map(([tier, usage]) => {
      const row = bar(tier, usage.used, usage.allocated, usage.wanted);
      row.title = `${tier}: a share of ${usage.share} tokens before rebalancing, ${usage.allocated} after`;
      row.dataset.tier = tier;
      return row;
    }),
  );
  fill(
    $("#context-items"),
    answer.items.map((item) => {
      const row = element("li", undefined, `item${item.superseded_by ? " is-superseded" : ""}`);
      row.dataset.itemId = item.item_id;
      row.dataset.tokens = item.tokens;
      row.append(
        element("div", `${item.tier} · ${item.tokens} tokens · ${item.kind} · #${item.seq} · ${item.reason}`, "meta"),
        element("div", clip(readable(item.text), 400), "text"),
      );
      if (item.superseded_by) row.append(supersededMark(agent, item.superseded_by));
      if (NOT_ITEMS.has(item.kind)) {
        const from = item.provenance.map((reference) => `#${reference.seq} (${reference.event_id})`).join(", ");
        row.append(element("div", `from ${from || "the memory's state"}`, "meta"));
      } else {
        row.append(button("provenance", () => showProvenance($("#context-provenance"), agent, item.item_id), "small"));
      }
      return row;
    }),
    "nothing fits",
  );
  $("#context-text").textContent = answer.text;
}

$("#context-form").addEventListener("submit", preview);
