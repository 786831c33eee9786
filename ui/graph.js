// The fact graph around an entity, drawn by cytoscape: nodes by kind,
// edges by relation (dashed once closed), an `as_of` slider over the times
// the facts held, and the edges as a list beside the drawing. A click on a
// node or an edge, drawn or listed, opens its provenance.

import cytoscape from "./vendor/cytoscape.mjs";
import { $, agentPath, api, currentAgent, element, failed, fill, latestOnly } from "./api.js";
import { showProvenance } from "./provenance.js";

/** Wait after the slider stops before asking for the graph at its time. */
const SLIDE_MS = 150;
const KIND_COLOURS = {
  file: "#2f5fd0",
  error: "#b42318",
  command: "#8f7a1d",
  symbol: "#1d8f8a",
  agent: "#9d2f8f",
  item: "#98a2b3",
  decision: "#d0692f",
  task: "#2f9d5f",
};

const view = { agent: null, entity: null, hops: 2, times: [], cy: null, slideTimer: null, resized: null };
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

/** The graph at `asOf` (milliseconds; `null` for now), or `null` on error
 *  or when another request was made since. */
async function fetchGraph(asOf) {
  const current = requests();
  const query = new URLSearchParams({ entity: view.entity, hops: String(view.hops) });
  if (asOf !== null) query.set("as_of", new Date(asOf).toISOString());
  try {
    const answer = await api(agentPath(view.agent, `/graph?${query}`));
    return current() ? answer : null;
  } catch (error) {
    if (!current()) return null;
    failed($("#graph-edges"), error);
    $("#graph-summary").textContent = "";
    destroy();
    return null;
  }
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

function draw(answer, asOf) {
  const agent = view.agent;
  const open = (id, label) => showProvenance($("#graph-provenance"), agent, id, label);
  const elements = [
    ...answer.nodes.map((node) => ({
      data: { id: node.id, label: node.name, kind: node.kind, centre: node.id === answer.center ? 1 : 0 },
    })),
    ...answer.edges.map((edge) => ({
      data: { id: edge.id, source: edge.from, target: edge.to, label: edge.relation, closed: closedAt(edge, asOf) ? 1 : 0 },
    })),
  ];
  destroy();
  const container = $("#graph-canvas");
  view.cy = cytoscape({
    container,
    elements,
    layout: { name: "cose", animate: false, randomize: false, nodeDimensionsIncludeLabels: true },
    // A graph of two nodes is not drawn at ten times the size.
    maxZoom: 1.6,
    minZoom: 0.1,
    style: [
      {
        selector: "node",
        style: {
          label: "data(label)",
          "font-size": 10,
          "text-wrap": "ellipsis",
          "text-max-width": 160,
          "background-color": (node) => KIND_COLOURS[node.data("kind")] || "#667085",
          width: 14,
          height: 14,
        },
      },
      { selector: "node[centre = 1]", style: { width: 26, height: 26, "border-width": 3, "border-color": "#1d2330" } },
      {
        selector: "edge",
        style: {
          label: "data(label)",
          "font-size": 9,
          color: "#475467",
          "curve-style": "bezier",
          "target-arrow-shape": "triangle",
          width: 1.5,
          "line-color": "#98a2b3",
          "target-arrow-color": "#98a2b3",
        },
      },
      { selector: "edge[closed = 1]", style: { "line-style": "dashed" } },
      { selector: ":selected", style: { "line-color": "#2f5fd0", "target-arrow-color": "#2f5fd0", "border-width": 3 } },
    ],
  });
  // For the browser test and for anyone poking at the page: the drawing.
  container.cytoscape = view.cy;
  // The column narrows when a provenance panel opens: redraw to fit it.
  view.resized ??= new ResizeObserver(() => {
    if (!view.cy) return;
    view.cy.resize();
    view.cy.fit(undefined, 30);
  });
  view.resized.disconnect();
  view.resized.observe(container);
  view.cy.on("tap", "node", (tapped) => open(tapped.target.id(), tapped.target.data("label")));
  view.cy.on("tap", "edge", (tapped) => open(tapped.target.id(), tapped.target.id()));
  const names = new Map(answer.nodes.map((node) => [node.id, node.name]));
  fill(
    $("#graph-edges"),
    answer.edges.map((edge) => {
      const item = element("li", undefined, closedAt(edge, asOf) ? "closed" : "");
      item.dataset.edgeId = edge.id;
      item.dataset.relation = edge.relation;
      const held = `${edge.valid_from || "?"} → ${edge.valid_to || "now"}`;
      const link = element("a", `${names.get(edge.from) || edge.from} —${edge.relation}→ ${names.get(edge.to) || edge.to}`);
      link.href = "#/graph";
      link.addEventListener("click", (clicked) => {
        clicked.preventDefault();
        open(edge.id, edge.id);
      });
      item.append(link, element("span", ` held ${held}`, "meta"));
      return item;
    }),
    "no edges at this time",
  );
  $("#graph-summary").textContent =
    `${answer.nodes.length} nodes, ${answer.edges.length} edges around ${names.get(answer.center) || answer.center}`;
}

$("#graph-form").addEventListener("submit", show);
$("#graph-as-of").addEventListener("input", slid);
