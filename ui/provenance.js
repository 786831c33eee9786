// Provenance: an item, a graph node or a graph edge → the events behind
// it, in log order, each in a sentence and with its whole JSON as it is on
// the log (opened on demand). Asked of the agent's memory (`…/agents/{agent}/provenance/{id}`),
// which answers for all three and only with events that agent may see.
// Above the events, what became of an item (or of the item a graph node
// stands for): its state, and what superseded or retracted it.

import { agentPath, api, element, entryWithJson, failed, fill, finderOf } from "./api.js";
import { isItemId, itemStatus, lookupItem } from "./marks.js";

/** The item an id names, if any: an item id, or a graph node's
 *  (`item:…`, `decision:…`). */
function itemIdOf(id) {
  if (isItemId(id)) return id;
  const after = id.slice(id.indexOf(":") + 1);
  return /^(item|decision):/.test(id) && isItemId(after) ? after : null;
}

/**
 * Shows the provenance of `id` in `panel` (an empty <aside>): a heading
 * naming what it is for, what became of it, then the events.
 */
export async function showProvenance(panel, agent, id, label = id) {
  const list = element("ol", undefined, "provenance-events");
  const status = element("div");
  panel.replaceChildren(
    element("h3", `Provenance of ${label}`),
    status,
    element("p", "The events behind it, in log order, as they are on the log.", "meta"),
    list,
  );
  panel.dataset.id = id;
  panel.hidden = false;
  // Another click before this answers wins.
  const request = String(Number(panel.dataset.request || 0) + 1);
  panel.dataset.request = request;
  const itemId = itemIdOf(id);
  if (itemId) {
    lookupItem(agent, itemId).then((item) => {
      if (item && panel.dataset.request === request) status.replaceChildren(itemStatus(agent, item));
    });
  }
  try {
    const { events } = await api(agentPath(agent, `/provenance/${encodeURIComponent(id)}`));
    const find = finderOf(events);
    if (panel.dataset.request === request) fill(list, events.map((entry) => entryWithJson(entry, find)), "no events");
  } catch (error) {
    if (panel.dataset.request === request) failed(list, error);
  }
}
