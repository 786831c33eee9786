// Handoffs of an agent: those it received, pending first, and those it
// sent, each with its package (task, summary, artifacts, decisions,
// constraints, the context bundle). A swarm-wide token reads the sent ones
// from the receivers' lists, with their status; a token bound to the agent
// reads its own `handoff_sent` events.

import { $, agentPath, api, clip, currentAgent, element, failed, fill, latestOnly, mapLimited, session, when } from "./api.js";
import { readable } from "./marks.js";

/** An answer for an agent no longer shown is dropped. */
const loads = latestOnly();

export async function load() {
  const agent = currentAgent();
  if (!agent) return;
  const current = loads();
  const received = $("#handoffs-received");
  const sent = $("#handoffs-sent");
  received.replaceChildren();
  sent.replaceChildren();
  try {
    const { handoffs } = await api(agentPath(agent, "/handoffs"));
    if (current()) fill(received, pendingFirst(handoffs).map(handoffRow), "none received");
  } catch (error) {
    if (current()) failed(received, error);
  }
  try {
    const rows = await sentBy(agent);
    if (current()) fill(sent, rows, "none sent");
  } catch (error) {
    if (current()) failed(sent, error);
  }
}

const pendingFirst = (handoffs) =>
  [...handoffs].sort((a, b) => (a.status === "pending") === (b.status === "pending") ? 0 : a.status === "pending" ? -1 : 1);

async function sentBy(agent) {
  if (!session.boundTo) {
    const others = session.agents.filter((other) => other !== agent);
    const lists = await mapLimited(others, 2, (other) => api(agentPath(other, "/handoffs")));
    const sent = lists.flatMap((list) => list.handoffs).filter((handoff) => handoff.from === agent);
    return pendingFirst(sent).map(handoffRow);
  }
  const entries = [];
  let since = 0;
  for (;;) {
    const page = await api(agentPath(agent, `/timeline?since_seq=${since}&limit=500`));
    entries.push(...page.entries.filter((entry) => entry.kind === "handoff_sent" && entry.agent === agent));
    if (!page.more) break;
    since = page.next_seq;
  }
  return entries.map((entry) => {
    const row = element("li", undefined, "handoff sent");
    row.dataset.handoffId = entry.event_id;
    row.append(element("div", `#${entry.seq} · ${when(entry.ts)} · sent`, "meta"), element("div", clip(readable(entry.text), 400), "text"));
    return row;
  });
}

function handoffRow(handoff) {
  const row = element("li", undefined, `handoff status-${handoff.status}`);
  row.dataset.handoffId = handoff.handoff_id;
  row.dataset.status = handoff.status;
  row.append(
    element("div", `${handoff.from} → ${handoff.to} · ${handoff.status} · received #${handoff.received_seq}`, "meta"),
  );
  const pack = handoff.package;
  if (!pack) {
    row.append(element("div", "no package yet", "meta"));
    return row;
  }
  row.append(element("div", `${pack.task}: ${pack.summary}`, "text"));
  const details = element("details");
  details.append(element("summary", `package: ${pack.bundle.items.length} items, ${pack.bundle.used_tokens} of ${pack.bundle.budget_tokens} tokens`));
  const parts = [
    ["artifacts", pack.artifacts],
    ["decisions", pack.decisions],
    ["constraints", pack.constraints],
    ["files", pack.bundle.files],
  ];
  for (const [name, values] of parts) {
    if (!values.length) continue;
    const list = element("ul");
    list.append(...values.map((value) => element("li", value)));
    details.append(element("div", name, "meta"), list);
  }
  if (pack.bundle.items.length) {
    const items = element("ol");
    items.append(...pack.bundle.items.map((item) =>
      element("li", `${item.section} from ${item.agent}: ${clip(readable(item.text) || `${item.kind} ${item.item_id}`, 300)}`)));
    details.append(element("div", "context bundle", "meta"), items);
  }
  row.append(details);
  return row;
}
