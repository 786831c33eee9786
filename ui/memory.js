// An agent's memory: how many items are in each state, the items
// themselves page by page (filtered by state or pinned), its core memory,
// and search with `explain` (which retriever found what); any item opens
// its provenance.

import { $, agentPath, api, button, clip, currentAgent, element, failed, fill, latestOnly, when } from "./api.js";
import { readable, supersededMark } from "./marks.js";
import { showProvenance } from "./provenance.js";

/** Items per page of the list. */
const PAGE = 50;

const view = { agent: null, state: "", nextBeforeSeq: null };
/** The list's requests and the searches: an answer to an older one
 *  (another agent, another filter, a page asked for twice) is dropped. */
const pages = latestOnly();
const searches = latestOnly();

export async function load() {
  const agent = currentAgent();
  if (!agent) return;
  if (agent !== view.agent) {
    view.state = "";
    searches();
    $("#search-hits").replaceChildren();
  }
  view.agent = agent;
  $("#memory-provenance").hidden = true;
  await Promise.all([loadItems(true), loadCore(agent)]);
}

/** The counts, as filter buttons, and the first (or next) page of items. */
async function loadItems(first) {
  const { agent, state } = view;
  const current = pages();
  const list = $("#items-list");
  const more = $("#items-more");
  more.disabled = true;
  const before = first ? "" : `&before_seq=${view.nextBeforeSeq}`;
  const filter = state ? `&state=${state}` : "";
  try {
    const answer = await api(agentPath(agent, `/items?limit=${PAGE}${filter}${before}`));
    if (!current()) return;
    renderStates(answer);
    const superseded = supersededBy(answer.items);
    const rows = answer.items.map((item) => itemRow(agent, item, superseded));
    if (first) fill(list, rows, "no items");
    else list.append(...rows);
    view.nextBeforeSeq = answer.next_before_seq;
    more.hidden = answer.next_before_seq === null;
  } catch (error) {
    if (current()) failed(list, error);
  } finally {
    if (current()) more.disabled = false;
  }
}

function renderStates({ states, pinned }) {
  const total = Object.values(states).reduce((sum, count) => sum + count, 0);
  const choices = [["", `all ${total}`], ...Object.entries(states).map(([name, count]) => [name, `${count} ${name}`])];
  choices.push(["pinned", `${pinned} pinned`]);
  $("#item-states").replaceChildren(
    element("span", `${view.agent}'s items:`, "meta"),
    ...choices.map(([state, label]) => {
      const chip = button(label, () => {
        view.state = state;
        loadItems(true);
      }, "chip");
      chip.dataset.state = state;
      chip.classList.toggle("current", state === view.state);
      return chip;
    }),
  );
}

function itemRow(agent, item, superseded) {
  const row = element("li", undefined, `item state-${item.state}${item.superseded_by ? " is-superseded" : ""}`);
  row.dataset.itemId = item.item_id;
  row.dataset.state = item.state;
  const badges = [element("span", item.state, `badge state-${item.state}`)];
  if (item.pinned) badges.push(element("span", "pinned", "badge pinned"));
  row.append(
    element("div", `#${item.seq} · ${item.kind} · ${item.agent} · ${when(item.ts)}`, "meta"),
    ...badges,
    element("div", clip(item.text ? readable(item.text) : "(purged: its text is erased)", 400), "text"),
  );
  row.append(...supersession(agent, item, superseded));
  row.append(button("provenance", () => showProvenance($("#memory-provenance"), agent, item.item_id), "small"));
  return row;
}

async function loadCore(agent) {
  try {
    const core = await api(agentPath(agent, "/core"));
    if (agent !== view.agent) return;
    $("#core-task").textContent = core.task
      ? `Working on: ${core.task.title} (${core.task.status.replaceAll("_", " ")}${core.task.from ? `, from ${core.task.from}` : ""})`
      : "No open task.";
    $("#core-constraints").replaceChildren(
      ...core.constraints.map((constraint) => element("li", `${constraint.text} (${constraint.source})`)),
    );
    $("#core-blocks").replaceChildren(
      ...core.blocks.flatMap((block) => [
        element("dt", `${block.name} (${block.tokens} tokens${block.truncated ? ", cut" : ""})`),
        element("dd", block.content),
      ]),
    );
  } catch (error) {
    failed($("#core-task"), error);
  }
}

async function search(event) {
  event.preventDefault();
  const agent = currentAgent();
  const query = $("#search-query").value.trim();
  const mode = $("#search-mode").value;
  const list = $("#search-hits");
  if (!agent || !query) return;
  const path = agentPath(agent, `/search?q=${encodeURIComponent(query)}&mode=${mode}&k=10&explain=true`);
  const current = searches();
  try {
    const { hits } = await api(path);
    if (!current()) return;
    const superseded = supersededBy(hits);
    fill(list, hits.map((hit) => hitRow(agent, hit, superseded)), "nothing found");
  } catch (error) {
    if (current()) failed(list, error);
  }
}

/** What each item shown superseded, among those shown: the other side of
 *  `superseded_by`, so that the decision that replaced another is marked
 *  as well as the one it replaced. */
function supersededBy(items) {
  const replaced = new Map();
  for (const item of items) {
    if (!item.superseded_by) continue;
    replaced.set(item.superseded_by, [...(replaced.get(item.superseded_by) || []), item.item_id]);
  }
  return replaced;
}

/** The marks of an item: what superseded it (and why), and what it
 *  superseded. */
function supersession(agent, item, superseded) {
  const marks = [];
  if (item.superseded_by) marks.push(supersededMark(agent, item.superseded_by));
  for (const older of superseded.get(item.item_id) || []) marks.push(element("div", `supersedes ${older}`, "supersedes"));
  return marks;
}

function hitRow(agent, hit, superseded) {
  const item = element("li", undefined, `item${hit.superseded_by ? " is-superseded" : ""}`);
  item.dataset.itemId = hit.item_id;
  item.append(
    element("div", `${hit.kind} · ${hit.agent} · ${when(hit.ts)} · score ${hit.score.toFixed(3)}`, "meta"),
    element("div", readable(hit.text), "text"),
  );
  item.append(...supersession(agent, hit, superseded));
  if (hit.explain) {
    const parts = Object.entries(hit.explain).map(([retriever, rank]) =>
      rank.rank ? `${retriever} #${rank.rank}` : `${retriever} +${rank.score.toFixed(2)}`,
    );
    item.append(element("div", `found by ${parts.join(", ")}`, "explain"));
  }
  if (hit.kind !== "phase") {
    item.append(button("provenance", () => showProvenance($("#memory-provenance"), agent, hit.item_id), "small"));
  }
  return item;
}

$("#search-form").addEventListener("submit", search);
$("#items-more").addEventListener("click", () => loadItems(false));
