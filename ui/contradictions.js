// Contradictions: the open ones first, each with both sides' text and
// buttons that resolve it (`a_wins`, `b_wins`, `both_valid`, `merged`,
// which write `contradiction_resolved` to the log), then the resolved ones.
// Consolidation finds them; an operator may run it from here.

import { $, agentPath, api, button, clip, element, failed, fill, latestOnly, mapLimited, swarmPath, when } from "./api.js";
import { readable, stateBadge, supersededMark } from "./marks.js";

const RESOLUTIONS = [
  ["a_wins", "A holds"],
  ["b_wins", "B holds"],
  ["both_valid", "both hold"],
  ["merged", "merged"],
];

const loads = latestOnly();

export async function load() {
  const current = loads();
  const list = $("#contradictions-open");
  try {
    const { open, resolved } = await api(swarmPath("/contradictions"));
    const sides = await sideTexts([...open, ...resolved]);
    if (!current()) return;
    fill(list, grouped(open).map((group) => row(group, sides, true)), "no open contradictions");
    fill($("#contradictions-resolved"), grouped(resolved).map((group) => row(group, sides, false)), "none resolved yet");
    $("#contradictions-summary").textContent = `${grouped(open).length} open, ${grouped(resolved).length} resolved`;
  } catch (error) {
    if (current()) failed(list, error);
  }
}

/** One entry per contradiction id, with every memory that holds it. */
function grouped(contradictions) {
  const byId = new Map();
  for (const contradiction of contradictions) {
    const group = byId.get(contradiction.contradiction_id);
    if (group) group.agents.push(contradiction.agent);
    else byId.set(contradiction.contradiction_id, { ...contradiction, agents: [contradiction.agent] });
  }
  return [...byId.values()];
}

/** The text of each side, read from a memory that holds it. */
async function sideTexts(contradictions) {
  const texts = new Map();
  const wanted = new Map();
  for (const contradiction of contradictions) {
    for (const side of [contradiction.a, contradiction.b]) {
      if (!wanted.has(side)) wanted.set(side, contradiction.agent);
    }
  }
  await mapLimited([...wanted], 3, async ([itemId, agent]) => {
    try {
      const item = await api(agentPath(agent, `/items/${encodeURIComponent(itemId)}`));
      texts.set(itemId, { text: `${item.kind} · ${when(item.ts)}: ${clip(readable(item.text), 300)}`, item, agent });
    } catch (error) {
      texts.set(itemId, { text: error.message });
    }
  });
  return texts;
}

function row(contradiction, sides, open) {
  const item = element("li", undefined, `contradiction ${open ? "open" : "resolved"}`);
  item.dataset.contradictionId = contradiction.contradiction_id;
  const held = `held by ${contradiction.agents.join(", ")}`;
  item.append(
    element("div", `${contradiction.contradiction_id} · ${held}`, "meta"),
    element("div", contradiction.reason || "", "text"),
    side("A", contradiction.a, sides),
    side("B", contradiction.b, sides),
  );
  if (open) {
    const buttons = element("div", undefined, "actions");
    for (const [resolution, label] of RESOLUTIONS) {
      const choice = button(label, () => resolve(contradiction.contradiction_id, resolution, item), "small");
      choice.dataset.resolution = resolution;
      buttons.append(choice);
    }
    item.append(buttons);
  } else {
    item.append(element("div", `resolved: ${contradiction.resolution}`, "resolution"));
  }
  return item;
}

/** One side: its text, and what became of it (the side that lost is
 *  superseded by the one that won). */
function side(label, itemId, sides) {
  const line = element("div", undefined, "side");
  const held = sides.get(itemId) || { text: itemId };
  line.append(element("strong", `${label} `), ...stateBadge(held.item && held.item.state), element("span", held.text));
  if (held.item && held.item.superseded_by) line.append(supersededMark(held.agent, held.item.superseded_by));
  return line;
}

async function resolve(contradictionId, resolution, item) {
  for (const choice of item.querySelectorAll("button")) choice.disabled = true;
  try {
    const body = { resolution, note: "resolved in the web view" };
    await api(swarmPath(`/contradictions/${encodeURIComponent(contradictionId)}/resolve`), { method: "POST", body });
    await load();
  } catch (error) {
    item.append(element("div", error.message, "error"));
    for (const choice of item.querySelectorAll("button")) choice.disabled = false;
  }
}

async function consolidate() {
  const status = $("#consolidate-status");
  status.textContent = "consolidating…";
  try {
    const answer = await api(swarmPath("/consolidate"), { method: "POST" });
    status.textContent = `consolidated in ${answer.elapsed_ms} ms: ${answer.events_written} verdicts written`;
    await load();
  } catch (error) {
    status.textContent = error.message;
  }
}

$("#consolidate").addEventListener("click", consolidate);
