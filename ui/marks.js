// What became of an item, wherever one is shown (search hits, the item
// list, context, provenance, contradictions, the graph): superseded (by a
// later decision, a retraction, the side that won a contradiction), or
// no longer active (forgotten, merged, archived, decayed, purged). And an
// item's text as a person reads it.

import { agentPath, api, clip, element } from "./api.js";
import { commandLine } from "./sentence.js";

/** How long an item read stays good: states change (a pin, a forget). */
const FRESH_MS = 5000;
const items = new Map();

/** The item `id` of `agent`'s memory (`GET …/items/{id}`), or `null` when
 *  it is not one (a phase, a contradiction, an id the agent cannot see).
 *  Reads within FRESH_MS of each other are one request. */
export function lookupItem(agent, id) {
  const key = `${agent}\n${id}`;
  const held = items.get(key);
  if (held && Date.now() - held.at < FRESH_MS) return held.answer;
  const answer = api(agentPath(agent, `/items/${encodeURIComponent(id)}`)).catch(() => null);
  items.set(key, { at: Date.now(), answer });
  if (items.size > 2000) items.delete(items.keys().next().value);
  return answer;
}

/** An item id as the API names items: a ULID (graph nodes `item:…` and
 *  `decision:…` carry one after the colon). */
export const isItemId = (id) => /^[0-9A-HJKMNP-TV-Z]{26}$/.test(id);

/** States in which an item no longer reaches an agent's context. */
export const GONE = new Set(["forgotten", "merged", "archived", "decayed", "purged"]);

/**
 * An item's text as the lists show it: without the "(from agent)" prefix
 * of items from another agent's events, and a tool call's arguments, which
 * the item holds as JSON, written out.
 */
export function readable(text) {
  const line = String(text || "").replace(/^\(from [^)]+\) /, "");
  const call = /^\$ (\S+) \{/.exec(line);
  if (!call) return line;
  // The arguments end at one of the first line's closing braces: the
  // longest that is JSON.
  const start = call[0].length - 1;
  const end = line.indexOf("\n") < 0 ? line.length : line.indexOf("\n");
  for (let close = line.lastIndexOf("}", end); close > start; close = line.lastIndexOf("}", close - 1)) {
    let args;
    try {
      args = JSON.parse(line.slice(start, close + 1));
    } catch {
      continue;
    }
    const shown = commandLine(call[1], args);
    return `${shown.startsWith("$ ") ? "" : "$ "}${shown}${line.slice(close + 1)}`;
  }
  return line;
}

/** An item's text in a few words, for a graph node's label. */
export function shortText(text, chars) {
  const first = readable(text).split("\n")[0].replace(/^(Decision|Fact|Retracted): /, "").replace(/^\[[^\]]+\] /, "");
  return clip(first, chars);
}

/** A badge of the item's state when it is not active. */
export function stateBadge(state) {
  return state && state !== "active" ? [element("span", state, `badge state-${state}`)] : [];
}

/**
 * The mark of an item superseded by event `by`: "superseded by <id>", then,
 * once read, what superseded it (a retraction, a later decision, the side
 * that won a contradiction).
 */
export function supersededMark(agent, by) {
  const mark = element("div", undefined, "mark");
  const why = element("span", "", "why meta");
  mark.append(element("span", `superseded by ${by}`, "superseded"), why);
  lookupItem(agent, by).then((item) => {
    if (!item) return;
    const text = clip(shortText(item.text, 200), 120);
    why.textContent =
      item.kind === "fact_retracted" ? ` — retracted: ${text}` :
      item.kind === "decision_made" ? ` — by the later decision ${text}` :
      item.kind === "fact_asserted" ? ` — by the later fact ${text}` :
      ` — by ${item.agent}'s ${item.kind.replaceAll("_", " ")}: ${text}`;
  });
  return mark;
}

/** The state line of an item, as provenance shows it above the events. */
export function itemStatus(agent, item) {
  const line = element("div", undefined, "status");
  line.append(
    element("span", `${item.kind.replaceAll("_", " ")} of ${item.agent}, `, "meta"),
    element("span", item.state, `badge state-${item.state}`),
  );
  if (item.pinned) line.append(element("span", "pinned", "badge pinned"));
  if (item.superseded_by) line.append(supersededMark(agent, item.superseded_by));
  return line;
}
