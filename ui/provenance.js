// Provenance: an item, a graph node or a graph edge → the events behind
// it, in log order, each with its whole JSON as it is on the log. Asked of
// the agent's memory (`…/agents/{agent}/provenance/{id}`), which answers
// for all three and only with events that agent may see.

import { agentPath, api, element, entryWithJson, failed, fill } from "./api.js";

/**
 * Shows the provenance of `id` in `panel` (an empty <aside>): a heading
 * naming what it is for, then the events.
 */
export async function showProvenance(panel, agent, id, label = id) {
  const list = element("ol", undefined, "provenance-events");
  panel.replaceChildren(
    element("h3", `Provenance of ${label}`),
    element("p", "The events behind it, in log order, as they are on the log.", "meta"),
    list,
  );
  panel.dataset.id = id;
  panel.hidden = false;
  // Another click before this answers wins.
  const request = String(Number(panel.dataset.request || 0) + 1);
  panel.dataset.request = request;
  try {
    const { events } = await api(agentPath(agent, `/provenance/${encodeURIComponent(id)}`));
    if (panel.dataset.request === request) fill(list, events.map(entryWithJson), "no events");
  } catch (error) {
    if (panel.dataset.request === request) failed(list, error);
  }
}
