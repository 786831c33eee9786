// Drawing the fact graph with cytoscape: which nodes are drawn (at most
// MAX_DRAWN, nearest the entity first), the look of each node kind and
// relation (the legend says the same), the fcose layout stretched to the
// canvas, labels kept readable at any zoom, and focus on a node.

import cytoscape from "./vendor/cytoscape.mjs";
import { element } from "./api.js";

// fcose comes as classic scripts (UMD builds, see index.html), which set
// this global before any module runs.
cytoscape.use(window.cytoscapeFcose);

/** Nodes drawn at most; the others are listed beside the drawing. */
export const MAX_DRAWN = 60;
/** Label size on screen, in pixels, whatever the zoom (zoomed in, more). */
const LABEL_PX = 12;
/** Characters of a node's label (the whole name is in the lists). */
const LABEL_CHARS = 34;
/** Up to this many drawn edges, every edge is labelled; past it only
 *  those of the node in focus. */
const LABELLED_EDGES = 24;
/** Past this many nodes drawn, items are labelled on focus or hover. */
const QUIET_PAST = 30;
/** Space kept free around the drawing, in pixels. */
const PADDING = 40;

/** Each node kind's colour and shape; other kinds are grey circles. */
const KINDS = {
  file: { colour: "#2f5fd0", shape: "ellipse" },
  symbol: { colour: "#1d8f8a", shape: "ellipse" },
  error: { colour: "#b42318", shape: "triangle" },
  command: { colour: "#8f7a1d", shape: "round-rectangle" },
  tool: { colour: "#8f7a1d", shape: "hexagon" },
  agent: { colour: "#9d2f8f", shape: "star" },
  decision: { colour: "#d0692f", shape: "diamond" },
  task: { colour: "#2f9d5f", shape: "round-rectangle" },
  concept: { colour: "#6941c6", shape: "ellipse" },
  item: { colour: "#98a2b3", shape: "ellipse" },
};
const OTHER_KIND = { colour: "#667085", shape: "ellipse" };
export const kindStyle = (kind) => KINDS[kind] || OTHER_KIND;

/** Each relation's colour; a fact's own predicates are dark grey. */
const RELATIONS = {
  references: "#b0b8c4",
  related_to: "#c9b8f5",
  modifies: "#2f5fd0",
  defines: "#1d8f8a",
  reads: "#7a8ee0",
  fixes: "#2f9d5f",
  fails_with: "#b42318",
  raised_by: "#b54708",
  runs: "#8f7a1d",
  decided: "#d0692f",
  supersedes: "#d92d20",
  asserted: "#9d2f8f",
  handed_off_to: "#9d2f8f",
};
const OTHER_RELATION = "#475467";
export const relationColour = (relation) => RELATIONS[relation] || OTHER_RELATION;

/** Kinds drawn before others at the same distance: items last (there are
 *  many, and each is one memory of the things around it). */
const kindRank = (kind) => (kind === "item" ? 1 : 0);

/**
 * The nodes to draw: the entity, then, growing out from what is drawn,
 * the nearest node (fewest hops), of a kind other than item first, most
 * connected first, until MAX_DRAWN. What is drawn stays connected.
 * Answers `{ drawn: Set of ids, hops: Map id → hops }`.
 */
export function chooseDrawn(answer) {
  const neighbours = new Map(answer.nodes.map((node) => [node.id, new Set()]));
  for (const edge of answer.edges) {
    if (edge.from === edge.to || !neighbours.has(edge.from) || !neighbours.has(edge.to)) continue;
    neighbours.get(edge.from).add(edge.to);
    neighbours.get(edge.to).add(edge.from);
  }
  const hops = new Map([[answer.center, 0]]);
  for (let frontier = [answer.center]; frontier.length; ) {
    const next = [];
    for (const id of frontier) {
      for (const other of neighbours.get(id) || []) {
        if (hops.has(other)) continue;
        hops.set(other, hops.get(id) + 1);
        next.push(other);
      }
    }
    frontier = next;
  }
  const kinds = new Map(answer.nodes.map((node) => [node.id, node.kind]));
  const names = new Map(answer.nodes.map((node) => [node.id, node.name]));
  const rank = (id) => [hops.get(id) ?? Infinity, kindRank(kinds.get(id)), -neighbours.get(id).size, names.get(id)];
  const before = (a, b) => {
    const [x, y] = [rank(a), rank(b)];
    for (let index = 0; index < x.length; index += 1) {
      if (x[index] !== y[index]) return x[index] < y[index] ? -1 : 1;
    }
    return 0;
  };
  const drawn = new Set();
  const candidates = new Set(neighbours.has(answer.center) ? [answer.center] : []);
  while (drawn.size < MAX_DRAWN && candidates.size) {
    const best = [...candidates].sort(before)[0];
    candidates.delete(best);
    drawn.add(best);
    for (const other of neighbours.get(best)) if (!drawn.has(other)) candidates.add(other);
  }
  // Nodes the entity does not reach (none, from the API): drawn while room.
  for (const node of answer.nodes) if (drawn.size < MAX_DRAWN && !hops.has(node.id)) drawn.add(node.id);
  return { drawn, hops };
}

const clipLabel = (text) => (text.length > LABEL_CHARS ? `${text.slice(0, LABEL_CHARS - 1)}…` : text);

/** A path's end ("…/auth/token.rs"), which tells files apart. */
function shortName(name) {
  if (name.length <= LABEL_CHARS || !name.includes("/")) return clipLabel(name);
  const parts = name.split("/");
  let end = parts.pop();
  while (parts.length && end.length + parts[parts.length - 1].length + 2 <= LABEL_CHARS) end = `${parts.pop()}/${end}`;
  return clipLabel(`…/${end}`);
}

/** A node's label: its short name, and what became of it. */
export function nodeLabel(node) {
  const mark = node.mark ? ` (${node.mark})` : "";
  return `${shortName(node.label)}${mark}`;
}

function styles(fontScale, labelEveryEdge) {
  const font = () => LABEL_PX * fontScale.value;
  return [
    {
      selector: "node",
      style: {
        label: "data(label)",
        "font-size": font,
        color: "#1d2330",
        "text-valign": "bottom",
        "text-margin-y": 3,
        "text-wrap": "wrap",
        "text-max-width": 150,
        "text-background-color": "#ffffff",
        "text-background-opacity": 0.8,
        "text-background-padding": 1,
        "background-color": (node) => kindStyle(node.data("kind")).colour,
        shape: (node) => kindStyle(node.data("kind")).shape,
        width: 18,
        height: 18,
      },
    },
    { selector: "node[kind = 'item']", style: { width: 12, height: 12 } },
    { selector: "node[quiet = 1]", style: { label: "" } },
    { selector: "node[quiet = 1].near, node[quiet = 1].focused, node[quiet = 1].hover", style: { label: "data(label)" } },
    {
      selector: "node[centre = 1]",
      style: { width: 32, height: 32, "border-width": 4, "border-color": "#1d2330", "font-weight": "bold" },
    },
    { selector: "node.superseded", style: { "border-width": 3, "border-style": "dashed", "border-color": "#d92d20" } },
    { selector: "node.gone", style: { opacity: 0.55, "border-width": 2, "border-style": "dotted", "border-color": "#667085" } },
    {
      selector: "edge",
      style: {
        "curve-style": "bezier",
        "target-arrow-shape": "triangle",
        "arrow-scale": 0.9,
        width: 1.6,
        "line-color": (edge) => relationColour(edge.data("relation")),
        "target-arrow-color": (edge) => relationColour(edge.data("relation")),
        opacity: 0.85,
        label: labelEveryEdge ? "data(relation)" : "",
        "font-size": () => (LABEL_PX - 1) * fontScale.value,
        color: "#475467",
        "text-rotation": "autorotate",
        "text-background-color": "#ffffff",
        "text-background-opacity": 0.8,
      },
    },
    { selector: "edge[closed = 1]", style: { "line-style": "dashed" } },
    { selector: "edge.near", style: { label: "data(relation)", width: 2.6, opacity: 1, "z-index": 10 } },
    { selector: ".faded", style: { opacity: 0.2, "text-opacity": 0.35 } },
    { selector: "node.focused", style: { "border-width": 4, "border-color": "#2f5fd0", "border-style": "solid", "z-index": 20 } },
    { selector: "node.near", style: { "z-index": 15 } },
  ];
}

/**
 * Positions past the layout's: stretched, each axis on its own, so that
 * the drawing fills the canvas's shape instead of a square in its middle
 * (never more than STRETCH times).
 */
const STRETCH = 6;
function fillCanvas(cy, container) {
  const box = cy.nodes().boundingBox({ includeLabels: false });
  const [width, height] = [container.clientWidth - 2 * PADDING - 120, container.clientHeight - 2 * PADDING - 30];
  if (box.w <= 0 && box.h <= 0) return;
  const [relW, relH] = [box.w / Math.max(width, 1), box.h / Math.max(height, 1)];
  const scale = Math.max(relW, relH, 1);
  const stretchX = relW > 0 ? Math.min(scale / relW, STRETCH) : 1;
  const stretchY = relH > 0 ? Math.min(scale / relH, STRETCH) : 1;
  const [cx, cy0] = [box.x1 + box.w / 2, box.y1 + box.h / 2];
  cy.nodes().positions((node) => {
    const at = node.position();
    return { x: cx + (at.x - cx) * stretchX, y: cy0 + (at.y - cy0) * stretchY };
  });
}

/** fcose, edges of busy nodes longer (their neighbours need room). */
function layout(cy, randomize) {
  const busy = (edge) => Math.min(edge.source().degree(), edge.target().degree());
  cy.layout({
    name: "fcose",
    quality: "proof",
    randomize,
    animate: false,
    fit: false,
    nodeDimensionsIncludeLabels: true,
    packComponents: true,
    nodeRepulsion: () => 12000,
    idealEdgeLength: (edge) => 70 + 6 * Math.min(busy(edge), 10),
    edgeElasticity: () => 0.35,
    numIter: 2500,
  }).run();
}

/**
 * Draws `model` (nodes and edges to draw, each with its data) in
 * `container`: laid out by fcose, or where `positions` (id → {x, y}, from
 * the last drawing) had the nodes when it holds them all. Answers the
 * cytoscape instance.
 */
export function draw(container, model, positions) {
  // Many nodes: the memories' labels (long, many) wait for focus or hover.
  const quiet = model.nodes.length > QUIET_PAST;
  const elements = [
    ...model.nodes.map((node) => ({
      data: {
        id: node.id,
        label: nodeLabel(node),
        kind: node.kind,
        centre: node.id === model.center ? 1 : 0,
        quiet: quiet && node.kind === "item" && node.id !== model.center ? 1 : 0,
      },
      classes: node.state || "",
    })),
    ...model.edges.map((edge) => ({
      data: { id: edge.id, source: edge.from, target: edge.to, relation: edge.relation, closed: edge.closed ? 1 : 0 },
    })),
  ];
  const known = model.nodes.every((node) => positions.has(node.id));
  // Labels keep LABEL_PX on screen when the drawing is zoomed out to fit.
  const fontScale = { value: 1 };
  const cy = cytoscape({
    container,
    elements,
    style: styles(fontScale, model.edges.length <= LABELLED_EDGES),
    layout: { name: "preset", positions: (node) => positions.get(node.id()) || { x: 0, y: 0 }, fit: false },
    maxZoom: 3,
    minZoom: 0.05,
    wheelSensitivity: 0.3,
  });
  const rescale = () => {
    const scale = 1 / Math.min(1, cy.zoom());
    if (Math.abs(scale - fontScale.value) < 0.001) return;
    fontScale.value = scale;
    cy.style().update();
  };
  if (!known) {
    // Laid out twice: the second time with the labels at the size they
    // will have once the drawing is fitted, so that they keep apart.
    for (const randomize of [true, false]) {
      layout(cy, randomize);
      fillCanvas(cy, container);
      cy.fit(undefined, PADDING);
      if (cy.zoom() > 0.9) break;
      rescale();
    }
  }
  cy.fit(undefined, PADDING);
  rescale();
  cy.on("zoom", rescale);
  cy.on("mouseover", "node", (over) => over.target.addClass("hover"));
  cy.on("mouseout", "node", (out) => out.target.removeClass("hover"));
  cy.refit = () => {
    cy.resize();
    cy.fit(undefined, PADDING);
    rescale();
  };
  return cy;
}

/** Puts a node or an edge in focus: it and what it touches stand out,
 *  their edges labelled, the rest fades. When they are not all in view,
 *  the view moves (zooming out if it must, never in) to centre them. */
export function focus(cy, target) {
  const near = target.isNode() ? target.closedNeighborhood() : target.union(target.connectedNodes());
  cy.batch(() => {
    cy.elements().removeClass("focused near").addClass("faded");
    near.removeClass("faded").addClass("near");
    if (target.isNode()) target.removeClass("near").addClass("focused");
  });
  const [width, height] = [cy.width(), cy.height()];
  const shown = near.renderedBoundingBox();
  if (shown.x1 >= 0 && shown.y1 >= 0 && shown.x2 <= width && shown.y2 <= height) return;
  const box = near.boundingBox();
  const fits = Math.min((width - 2 * PADDING) / Math.max(box.w, 1), (height - 2 * PADDING) / Math.max(box.h, 1));
  cy.stop();
  cy.animate({ zoom: Math.min(cy.zoom(), fits), center: { eles: near }, duration: 250 });
}

export function unfocus(cy) {
  cy.elements().removeClass("focused near faded");
}

/** A legend entry: a swatch and its words. */
function entry(swatchClass, colour, text, shape) {
  const item = element("li");
  const swatch = element("span", undefined, `swatch ${swatchClass}`);
  if (colour) swatch.style.setProperty("--swatch", colour);
  if (shape) swatch.dataset.shape = shape;
  item.append(swatch, element("span", text));
  return item;
}

/** The legend of what `model` draws: node kinds, relations, marks. */
export function legend(model, total) {
  const count = (list, key) => {
    const counts = new Map();
    for (const thing of list) counts.set(thing[key], (counts.get(thing[key]) || 0) + 1);
    return [...counts].sort((a, b) => b[1] - a[1]);
  };
  const allKinds = new Map(count(total.nodes, "kind"));
  const kinds = element("ul", undefined, "legend-list");
  for (const [kind, drawn] of count(model.nodes, "kind")) {
    const style = kindStyle(kind);
    const of = allKinds.get(kind) > drawn ? ` (${drawn} of ${allKinds.get(kind)})` : ` (${drawn})`;
    const item = entry("node", style.colour, `${kind}${of}`, style.shape);
    item.dataset.kind = kind;
    kinds.append(item);
  }
  const relations = element("ul", undefined, "legend-list");
  for (const [relation, drawn] of count(model.edges, "relation")) {
    const item = entry("edge", relationColour(relation), `${relation.replaceAll("_", " ")} (${drawn})`);
    item.dataset.relation = relation;
    relations.append(item);
  }
  const marks = element("ul", undefined, "legend-list marks");
  marks.append(
    entry("node mark-centre", "#ffffff", "the entity asked about"),
    entry("edge mark-closed", OTHER_RELATION, "no longer holds (retracted, replaced, ended)"),
    entry("node mark-superseded", "#ffffff", "superseded or retracted"),
    entry("node mark-gone", "#ffffff", "forgotten, merged or archived"),
  );
  const box = element("div", undefined, "legend");
  box.append(
    element("h4", "Nodes"), kinds,
    element("h4", model.edges.length ? "Edges (arrow: from → to)" : "Edges: none drawn"), relations,
    element("h4", "Marks"), marks,
  );
  return box;
}
