// The fact graph around an entity: at most MAX_DRAWN nodes drawn (the
// nearest), the others listed beside the drawing; a legend of the node
// kinds and relations; items and decisions named by their text and marked
// when superseded, retracted or forgotten; an `as_of` slider over the
// times the facts held; the edges as a list under the drawing. A click on
// a node puts it in focus and opens its provenance, as does a click on an
// edge, drawn or listed; a listed node not drawn becomes the centre.

import { $, agentPath, api, button, currentAgent, element, failed, fill, latestOnly, mapLimited, when } from "./api.js";
import { MAX_DRAWN, chooseDrawn, draw as drawGraph, focus, kindStyle, legend, unfocus } from "./graph-draw.js";
import { GONE, isItemId, lookupItem, shortText } from "./marks.js";
import { showProvenance } from "./provenance.js";

/** Wait after the slider stops before asking for the graph at its time. */
const SLIDE_MS = 150;
/** Characters of an item's text that name its node in the lists. */
const NAME_CHARS = 90;

const view = {
  agent: null,
  entity: null,
  hops: 2,
  times: [],
  cy: null,
  slideTimer: null,
  resized: null,
  /** Where the last drawing had each node: the slider moves nothing. */
  positions: new Map(),
};
/** The graph's requests: an answer to an older one (an entity or a time
 *  since changed) is dropped. */
const requests = latestOnly();

export function load() {
  const agent = currentAgent();
  if (agent !== view.agent) {
    view.agent = agent;
    view.entity = null;
    requests();
    clearTimeout(view.slideTimer);
    $("#graph-provenance").hidden = true;
    $("#graph-as-of").disabled = true;
    $("#graph-edges").replaceChildren();
    $("#graph-legend").replaceChildren();
    $("#graph-rest").replaceChildren();
    $("#graph-focus").hidden = true;
    $("#graph-summary").textContent = "Name an entity: a file, an error, a symbol, a command, an agent.";
    destroy();
  }
}

async function show(event) {
  event.preventDefault();
  view.entity = $("#graph-entity").value.trim();
  view.hops = Number($("#graph-hops").value);
  if (!view.entity) return;
  clearTimeout(view.slideTimer);
  $("#graph-provenance").hidden = true;
  view.positions = new Map();
  // Without as_of first: the slider spans the times of every fact shown.
  const answer = await fetchGraph(null);
  if (!answer) return;
  view.times = [...new Set(answer.edges.flatMap((edge) => [edge.valid_from, edge.valid_to]).filter(Boolean))]
    .map((ts) => Date.parse(ts))
    .sort((a, b) => a - b);
  const slider = $("#graph-as-of");
  slider.min = 0;
  slider.max = view.times.length;
  slider.value = view.times.length;
  slider.disabled = view.times.length === 0;
  $("#graph-as-of-label").textContent = "now";
  draw(answer, null);
}

/** The graph at `asOf` (milliseconds; `null` for now) with what its
 *  items are, or `null` on error or when another request was made since. */
async function fetchGraph(asOf) {
  const current = requests();
  const query = new URLSearchParams({ entity: view.entity, hops: String(view.hops) });
  if (asOf !== null) query.set("as_of", new Date(asOf).toISOString());
  try {
    const answer = await api(agentPath(view.agent, `/graph?${query}`));
    if (!current()) return null;
    answer.items = await itemsOf(answer);
    return current() ? answer : null;
  } catch (error) {
    if (!current()) return null;
    failed($("#graph-edges"), error);
    $("#graph-summary").textContent = "";
    destroy();
    return null;
  }
}

/** The item behind each node drawn that is one (`item:…`, `decision:…`):
 *  its text names the node, its state marks it. */
async function itemsOf(answer) {
  const { drawn } = chooseDrawn(answer);
  const ids = answer.nodes
    .filter((node) => drawn.has(node.id))
    .map((node) => node.id.slice(node.id.indexOf(":") + 1))
    .filter(isItemId);
  const found = await mapLimited(ids, 3, (id) => lookupItem(view.agent, id));
  return new Map(ids.map((id, index) => [id, found[index]]).filter(([, item]) => item));
}

function destroy() {
  if (view.cy) view.cy.destroy();
  view.cy = null;
  $("#graph-canvas").cytoscape = null;
}

/** The slider's position as a time: each step is a time a fact began or
 *  ended (the moment itself, so that what began then shows), the last is
 *  now. */
function sliderTime() {
  const position = Number($("#graph-as-of").value);
  return position >= view.times.length ? null : view.times[position];
}

function slid() {
  const asOf = sliderTime();
  $("#graph-as-of-label").textContent = asOf === null ? "now" : new Date(asOf).toISOString();
  clearTimeout(view.slideTimer);
  view.slideTimer = setTimeout(async () => {
    const answer = await fetchGraph(asOf);
    if (answer) draw(answer, asOf);
  }, SLIDE_MS);
}

/** An edge no longer holding at `asOf` (now, when `null`). */
const closedAt = (edge, asOf) => Boolean(edge.valid_to) && (asOf === null || Date.parse(edge.valid_to) <= asOf);

/**
 * Every node as the view shows it: its name in the lists (an item's text),
 * its label, and what became of it (`state`: a class of the drawing,
 * `mark`: words after its label). Names two nodes share get the seq that
 * recorded each, so that "X supersedes X" reads as the two it is.
 */
function describeNodes(answer) {
  const superseded = new Set(
    answer.edges.filter((edge) => edge.relation === "supersedes" && edge.from !== edge.to).map((edge) => edge.to),
  );
  const nodes = answer.nodes.map((node) => {
    const item = answer.items.get(node.id.slice(node.id.indexOf(":") + 1));
    const text = item && item.text ? shortText(item.text, NAME_CHARS) : null;
    const described = { ...node, label: text || node.name, fullName: text || node.name, state: null, mark: null };
    if (item && GONE.has(item.state)) Object.assign(described, { state: "gone", mark: item.state });
    else if ((item && item.superseded_by) || superseded.has(node.id)) {
      Object.assign(described, { state: "superseded", mark: "superseded" });
    }
    return described;
  });
  const named = new Map();
  for (const node of nodes) named.set(node.label, (named.get(node.label) || 0) + 1);
  for (const node of nodes) {
    const seq = node.provenance && node.provenance.length ? node.provenance[0].seq : null;
    if (named.get(node.label) > 1 && seq !== null) {
      node.label = `${node.label} #${seq}`;
      node.fullName = `${node.fullName} (#${seq})`;
    }
  }
  return nodes;
}

function draw(answer, asOf) {
  const agent = view.agent;
  const open = (id, label) => showProvenance($("#graph-provenance"), agent, id, label);
  const { drawn, hops } = chooseDrawn(answer);
  const nodes = describeNodes(answer).map((node) => ({ ...node, hops: hops.get(node.id) }));
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const edges = answer.edges.map((edge) => ({
    ...edge,
    closed: closedAt(edge, asOf),
    self: edge.from === edge.to,
    drawn: edge.from !== edge.to && drawn.has(edge.from) && drawn.has(edge.to),
  }));
  const model = {
    center: answer.center,
    nodes: nodes.filter((node) => drawn.has(node.id)),
    edges: edges.filter((edge) => edge.drawn),
  };
  if (view.cy) view.positions = new Map(view.cy.nodes().map((node) => [node.id(), { ...node.position() }]));
  destroy();
  const container = $("#graph-canvas");
  view.cy = drawGraph(container, model, view.positions);
  // For the browser test and for anyone poking at the page: the drawing.
  container.cytoscape = view.cy;
  // The canvas changes size with the window: fit the drawing again.
  view.resized ??= new ResizeObserver(() => view.cy && view.cy.refit());
  view.resized.disconnect();
  view.resized.observe(container);
  const cy = view.cy;
  cy.on("tap", "node", (tapped) => {
    const node = byId.get(tapped.target.id());
    focus(cy, tapped.target);
    showFocus(node, answer, edges, byId);
    open(node.id, node.fullName);
  });
  cy.on("tap", "edge", (tapped) => {
    focus(cy, tapped.target);
    $("#graph-focus").hidden = true;
    open(tapped.target.id(), tapped.target.id());
  });
  cy.on("tap", (tapped) => {
    if (tapped.target !== cy) return;
    unfocus(cy);
    $("#graph-focus").hidden = true;
  });
  const name = (id) => (byId.get(id) ? byId.get(id).fullName : id);
  // A listed edge, drawn, is put in focus as when clicked in the drawing.
  const openEdge = (id) => {
    const drawnEdge = cy.getElementById(id);
    if (drawnEdge.length) focus(cy, drawnEdge);
    $("#graph-focus").hidden = true;
    open(id, id);
  };
  fill($("#graph-edges"), edges.map((edge) => edgeRow(edge, name, openEdge)), "no edges at this time");
  $("#graph-edges-heading").textContent = `Edges (${edges.length})`;
  $("#graph-legend").replaceChildren(legend(model, { nodes, edges }));
  $("#graph-focus").hidden = true;
  listRest(nodes.filter((node) => !drawn.has(node.id)));
  const rest = nodes.length - model.nodes.length;
  $("#graph-summary").textContent =
    `${answer.nodes.length} nodes, ${answer.edges.length} edges within ${view.hops} hop${view.hops === 1 ? "" : "s"} of ` +
    `${name(answer.center)}` +
    (rest ? `; the ${model.nodes.length} nearest drawn, ${rest} more listed beside the drawing (at most ${MAX_DRAWN} drawn)` : "") +
    ". Click a node to focus on it.";
}

/** A listed edge: from —relation→ to, when it held, and why it is not
 *  drawn when it is not. */
function edgeRow(edge, name, open) {
  const item = element("li", undefined, edge.closed ? "closed" : "");
  item.dataset.edgeId = edge.id;
  item.dataset.relation = edge.relation;
  const link = element("a", `${name(edge.from)} —${edge.relation}→ ${name(edge.to)}`);
  link.href = "#/graph";
  link.addEventListener("click", (clicked) => {
    clicked.preventDefault();
    open(edge.id);
  });
  const held = ` held ${when(edge.valid_from) || "?"} → ${edge.valid_to ? when(edge.valid_to) : "now"}`;
  item.append(link, element("span", held, "meta"));
  if (edge.self) item.append(element("span", " · a node related to itself, not drawn", "meta"));
  else if (!edge.drawn) item.append(element("span", " · not drawn: one end is listed beside the drawing", "meta"));
  return item;
}

/** The node in focus, beside the drawing: its whole name, kind, state and
 *  its edges. */
function showFocus(node, answer, edges, byId) {
  const box = $("#graph-focus");
  const own = edges.filter((edge) => edge.from === node.id || edge.to === node.id);
  const list = element("ul", undefined, "focus-edges");
  for (const edge of own.slice(0, 30)) {
    const other = byId.get(edge.from === node.id ? edge.to : edge.from);
    const arrow = edge.from === node.id ? `—${edge.relation}→` : `←${edge.relation}—`;
    list.append(element("li", `${arrow} ${other ? other.fullName : "?"}`, edge.closed ? "closed" : ""));
  }
  if (own.length > 30) list.append(element("li", `and ${own.length - 30} more (in the list of edges)`, "meta"));
  const heading = element("h4", node.fullName);
  const kind = element("div", `${node.kind}${node.hops ? ` · ${node.hops} hop${node.hops === 1 ? "" : "s"} away` : " · the entity"}`, "meta");
  box.replaceChildren(heading, kind);
  if (node.mark) box.append(element("div", node.mark, node.state === "superseded" ? "superseded" : "meta"));
  box.append(list);
  if (node.id !== answer.center) box.append(button("Show the graph around it", () => recenter(node.id), "small"));
  box.hidden = false;
  box.scrollIntoView({ block: "nearest" });
}

/** The nodes not drawn, by kind: each makes the graph around it. */
function listRest(rest) {
  const box = $("#graph-rest");
  box.replaceChildren();
  if (!rest.length) return;
  box.append(element("h4", `Not drawn (${rest.length})`), element("p", "Click one to draw the graph around it.", "meta"));
  const kinds = [...new Set(rest.map((node) => node.kind))].sort();
  for (const kind of kinds) {
    const ofKind = rest.filter((node) => node.kind === kind).sort((a, b) => (a.hops ?? 0) - (b.hops ?? 0));
    const group = element("details");
    group.open = ofKind.length <= 12;
    const summary = element("summary", `${kind} (${ofKind.length})`);
    const swatch = element("span", undefined, "swatch node");
    swatch.style.setProperty("--swatch", kindStyle(kind).colour);
    summary.prepend(swatch);
    const list = element("ul");
    const unnamed = [];
    for (const node of ofKind) {
      const item = element("li");
      item.dataset.nodeId = node.id;
      const name = button(node.fullName, () => recenter(node.id), "link");
      item.append(name);
      if (node.hops) item.append(element("span", ` ${node.hops} hops`, "meta"));
      if (node.mark) item.append(element("span", ` (${node.mark})`, "meta"));
      list.append(item);
      const itemId = node.id.slice(node.id.indexOf(":") + 1);
      if (node.fullName === node.name && isItemId(itemId)) unnamed.push([itemId, name]);
    }
    // Items not drawn are named by their text once their group is open.
    const name = () => mapLimited(unnamed.splice(0), 3, async ([itemId, shown]) => {
      const item = await lookupItem(view.agent, itemId);
      if (item && item.text) shown.textContent = shortText(item.text, NAME_CHARS);
    });
    if (group.open) name();
    else group.addEventListener("toggle", () => group.open && name());
    group.append(summary, list);
    box.append(group);
  }
}

function recenter(id) {
  $("#graph-entity").value = id;
  $("#graph-form").requestSubmit();
}

$("#graph-form").addEventListener("submit", show);
$("#graph-as-of").addEventListener("input", slid);
