// Drives Mneme's web view in headless Chromium (playwright-core from
// ui/node_modules, Chromium from Debian's package): signs in, opens every
// view and reads what it shows, and fails on any console error. Run by
// tests/ui.rs, which starts `mneme serve` and publishes the example
// trajectory first (after one record that is not an event). Prints one
// JSON line of what it saw, which the Rust test checks against the API;
// screenshots go to MNEME_UI_SHOTS.
import { join } from "node:path";

import { openPage } from "./browser.mjs";

const url = process.env.MNEME_UI_URL;
const token = process.env.MNEME_UI_TOKEN;
const shots = process.env.MNEME_UI_SHOTS;
const saw = {};
const consoleErrors = [];
/** The failing test's error, and the file whose change fixed it. */
const FAILING_TEST = "error:rust:assertion_failed:refresh_access_token_rotates_refresh_token";

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** Takes out of the console errors the refusals the test itself caused
 *  (Chromium logs a refused request as an error), and only those. */
function expectedRefusals(statuses) {
  const refused = new RegExp(`^Failed to load resource: the server responded with a status of (${statuses.join("|")}) `);
  const taken = consoleErrors.filter((text) => refused.test(text));
  consoleErrors.splice(0, consoleErrors.length, ...consoleErrors.filter((text) => !refused.test(text)));
  return taken;
}

/** The API as the test's own client (Node's fetch, the operator token). */
async function apiAsOperator(path, init = {}) {
  const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
  return fetch(`${url}${path}`, { ...init, headers, signal: AbortSignal.timeout(30_000) });
}

/** Publishes an event or an array as the operator; the API's answer. */
async function publish(what, events) {
  const response = await apiAsOperator("/v1/events", { method: "POST", body: JSON.stringify(events) });
  const body = await response.text();
  check(response.status === 202, `publishing ${what}: ${response.status} ${body}`);
  return JSON.parse(body);
}

/** GETs `path` from inside the page, with the token it signed in with:
 *  the status, and the JSON answer. */
function asThePage(page, path) {
  return page.evaluate(async (path) => {
    const headers = { Authorization: `Bearer ${sessionStorage.getItem("mneme-token")}` };
    const response = await fetch(path, { headers });
    return { status: response.status, body: await response.json() };
  }, path);
}

/** Polls `probe` until it is true, for at most 30 s. */
async function eventually(what, probe) {
  const deadline = Date.now() + 30_000;
  while (!(await probe())) {
    check(Date.now() < deadline, `${what}: not within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const shot = (page, name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: false });
const texts = (page, selector) => page.$$eval(selector, (nodes) => nodes.map((node) => node.textContent));

/** Every string inside a JSON value (an event's data). */
function stringsIn(value, found = []) {
  if (typeof value === "string") found.push(value);
  else if (value && typeof value === "object") for (const inner of Object.values(value)) stringsIn(inner, found);
  return found;
}

/** The timeline's rows, kind by kind (each kind's newest 500), whose
 *  sentence shows JSON or an unrendered value that the event's own text
 *  does not hold: every kind must read as a sentence. */
async function rowsNotSentences(page) {
  const events = new Map();
  for (let from = 1; ;) {
    const { body } = await asThePage(page, `/v1/swarms/demo/events?from_seq=${from}&limit=1000`);
    // A dead letter's row quotes the reason it was refused.
    for (const entry of body.events) events.set(entry.seq, stringsIn(entry.invalid ? entry : entry.data).join("\n"));
    if (!body.events.length || body.next_seq <= from) break;
    from = body.next_seq;
  }
  const kinds = await page.$$eval("#filter-kind option", (options) => options.map((option) => option.value));
  const bad = [];
  let checked = 0;
  for (const kind of kinds.filter(Boolean)) {
    await page.selectOption("#filter-kind", kind);
    const rows = await page.$$eval("#timeline-events tbody tr", (rows) =>
      rows.map((row) => ({ seq: Number(row.dataset.seq), what: row.querySelector("td.what").textContent })));
    for (const { seq, what } of rows) {
      checked += 1;
      const own = events.get(seq) || "";
      const shown = ['{"', "[object Object]", "undefined"].filter((token) => what.includes(token) && !own.includes(token));
      if (shown.length || !what.trim()) bad.push({ kind, seq, what });
    }
  }
  await page.selectOption("#filter-kind", "");
  return { bad, checked };
}

/** What the fact graph's drawing shows: nodes and edges drawn, how much
 *  of the canvas the nodes span, the smallest label on screen, the
 *  legend, the nodes listed as not drawn. */
const graphShown = (page) => page.$eval("#graph-canvas", (canvas) => {
  const cy = canvas.cytoscape;
  const box = cy.nodes().renderedBoundingBox({ includeLabels: false });
  const labelled = cy.nodes().filter((node) => node.style("label") !== "");
  const legend = (selector, key) =>
    [...document.querySelectorAll(`#graph-legend li[${selector}]`)].map((item) => item.dataset[key]);
  return {
    nodes: cy.nodes().map((node) => node.id()),
    edges: cy.edges().map((edge) => edge.id()),
    selfEdges: cy.edges().filter((edge) => edge.source().id() === edge.target().id()).length,
    kinds: [...new Set(cy.nodes().map((node) => node.data("kind")))].sort(),
    relations: [...new Set(cy.edges().map((edge) => edge.data("relation")))].sort(),
    legendKinds: legend("data-kind", "kind").sort(),
    legendRelations: legend("data-relation", "relation").sort(),
    spanWidth: box.w / canvas.clientWidth,
    spanHeight: box.h / canvas.clientHeight,
    labelled: labelled.length,
    smallestLabelPx: Math.min(...labelled.map((node) => parseFloat(node.style("font-size")) * cy.zoom())),
    notDrawn: document.querySelectorAll("#graph-rest li[data-node-id]").length,
    summary: document.querySelector("#graph-summary").textContent,
  };
});

/** Clicks the drawn node `id`; what the focus then shows. */
async function focusOn(page, id) {
  const position = await page.$eval("#graph-canvas", (canvas, id) => {
    const box = canvas.getBoundingClientRect();
    const at = canvas.cytoscape.getElementById(id).renderedPosition();
    return { x: box.left + at.x, y: box.top + at.y };
  }, id);
  await page.mouse.click(position.x, position.y);
  await page.waitForFunction((id) =>
    document.querySelector("#graph-canvas").cytoscape.getElementById(id).hasClass("focused"), id);
  await page.waitForSelector("#graph-focus:not([hidden]) h4");
  return page.$eval("#graph-canvas", (canvas, id) => {
    const cy = canvas.cytoscape;
    const node = cy.getElementById(id);
    const near = node.closedNeighborhood();
    return {
      focused: cy.nodes(".focused").map((other) => other.id()),
      nearShown: near.every((element) => !element.hasClass("faded")),
      othersFaded: cy.elements().difference(near).every((element) => element.hasClass("faded")),
      faded: cy.elements(".faded").length,
      heading: document.querySelector("#graph-focus h4").textContent,
    };
  }, id);
}

async function open(page, view) {
  await page.click(`nav a[data-view="${view}"]`);
  await page.waitForSelector(`#${view}:not([hidden])`);
}

const { context, page } = await openPage(consoleErrors);
try {
  // --- Signing in: a wrong token is refused with a message. -----------------
  await page.goto(`${url}/ui`);
  await page.waitForSelector("#login:not([hidden])");
  await page.fill("#token", "not-a-token");
  await page.click("#login-form button");
  await page.waitForFunction(() => document.querySelector("#login-error").textContent.length > 0);
  saw.wrongToken = await page.textContent("#login-error");
  // A token bound to one agent does not open the swarm-wide views.
  await page.fill("#token", process.env.MNEME_UI_AGENT_TOKEN);
  await page.click("#login-form button");
  // The form clears the message before it asks: wait for the new one.
  await page.waitForFunction((before) => {
    const text = document.querySelector("#login-error").textContent;
    return text.length > 0 && text !== before;
  }, saw.wrongToken);
  saw.agentToken = await page.textContent("#login-error");
  // Chromium logs refused requests as console errors: these are the test's
  // doing. From here on, any console error is the page's.
  saw.errorsWhileRefused = expectedRefusals([401, 403]);

  // --- A token bound to one agent: that agent's views only. ---------------
  await page.fill("#token-agent", "coder");
  await page.click("#login-form button");
  await page.waitForSelector("#memory:not([hidden])");
  saw.boundAgents = await page.$$eval("#agent option", (options) => options.map((option) => option.value));
  saw.boundAgentPickable = !(await page.isDisabled("#agent"));
  saw.boundSwarmLinks = await page.isVisible('nav a[data-view="timeline"]') ||
    await page.isVisible('nav a[data-view="contradictions"]');
  // Typing a swarm-wide view's address leads back to the agent's memory.
  await page.click('nav a[data-view="graph"]');
  await page.waitForSelector("#graph:not([hidden])");
  await page.evaluate(() => (location.hash = "#/timeline"));
  await page.waitForSelector("#memory:not([hidden])");
  saw.boundTimelineShown = await page.isVisible("#timeline");
  // And the API refuses the token another agent's memory, whatever the page.
  saw.boundOtherAgent = (await asThePage(page, "/v1/swarms/demo/agents/reviewer/items")).status;
  saw.errorsWhileRefusedOther = expectedRefusals([403]);
  await page.fill("#search-query", "refresh token rotation");
  await page.click("#search-form button");
  await page.waitForSelector("#search-hits li.item");
  saw.boundHits = await page.locator("#search-hits li.item .text").count();
  await shot(page, "agent-token");
  // Its handoffs: the sent ones from its own events (it may not read the
  // receivers' lists).
  await page.click('nav a[data-view="handoffs"]');
  await page.waitForSelector("#handoffs-sent li");
  await page.waitForSelector("#handoffs-received li");
  saw.boundSent = await page.$$eval("#handoffs-sent li.handoff", (items) => items.map((item) => item.dataset.handoffId));
  saw.boundReceived = await page.locator("#handoffs-received li.handoff").count();
  saw.errorsAsBoundAgent = [...consoleErrors];
  await page.click("#logout");
  await page.waitForSelector("#login:not([hidden])");
  await page.fill("#token-agent", "");
  await page.fill("#token", token);
  await page.click("#login-form button");

  // --- The timeline: every event newest first, dead letters marked, live. ---
  await page.waitForSelector("#timeline:not([hidden]) #timeline-events tbody tr");
  saw.timelineRows = await page.locator("#timeline-events tbody tr").count();
  saw.kinds = [...new Set(await texts(page, "#timeline-events tbody td:nth-child(4)"))];
  const seqs = await page.$$eval("#timeline-events tbody tr", (rows) => rows.map((row) => Number(row.dataset.seq)));
  check(seqs.every((seq, index) => index === 0 || seq < seqs[index - 1]), "the timeline is newest first");
  saw.summary = await page.textContent("#timeline-summary");
  saw.chartSeries = await texts(page, "#timeline-chart .u-legend .u-series .u-label");
  // The chart's times: those of the events, not of a stray clock.
  saw.chartRange = await page.$eval("#timeline-chart", (chart) =>
    [chart.uplot.scales.x.min, chart.uplot.scales.x.max].map((ts) => new Date(ts * 1000).toISOString()));
  saw.timesShown = await texts(page, "#timeline-events tbody td.time");
  await page.waitForFunction(() => document.querySelector("#timeline-live").textContent.startsWith("following"));
  await shot(page, "timeline");
  // Every kind in sentences.
  const sentences = await rowsNotSentences(page);
  saw.rowsNotSentences = sentences.bad;
  saw.rowsChecked = sentences.checked;
  // An event published now appears without reloading.
  const live = {
    id: "01KF0000000000000000000001", swarm: "demo", agent: "reviewer", ts: "2026-01-07T09:00:00Z",
    kind: "message_recorded", data: { role: "assistant", text: "published while the timeline is open" },
  };
  saw.liveSeq = (await publish("the live event", live)).accepted[0].seq;
  await page.waitForSelector(`#timeline-events tbody tr[data-seq="${saw.liveSeq}"]`);
  saw.liveText = await page.textContent(`#timeline-events tbody tr[data-seq="${saw.liveSeq}"] td.what`);
  saw.liveStatus = await page.textContent("#timeline-live");
  saw.liveRows = await page.locator(`#timeline-events tbody tr[data-seq="${saw.liveSeq}"]`).count();
  const shownSeqs = await page.$$eval("#timeline-events tbody tr", (rows) => rows.map((row) => row.dataset.seq));
  saw.duplicateRows = shownSeqs.length - new Set(shownSeqs).size;
  // Dead letters: among the oldest, found with the kind filter.
  await page.selectOption("#filter-kind", "!dead-letter");
  saw.deadLetterRows = await texts(page, "#timeline-events tbody tr.dead-letter td.what");
  saw.deadLetterSummary = await page.textContent("#timeline-summary");
  await shot(page, "timeline-dead-letters");
  await page.selectOption("#filter-agent", "coder");
  await page.selectOption("#filter-kind", "decision_made");
  saw.coderDecisions = await page.$$eval("#timeline-events tbody tr", (rows) =>
    rows.map((row) => [row.children[2].textContent, row.children[3].textContent, row.children[5].textContent]),
  );
  await shot(page, "timeline-filtered");

  // --- An agent's memory: states, items, core memory, search, provenance. --
  await open(page, "memory");
  await page.selectOption("#agent", "coder");
  await page.waitForFunction(() => document.querySelector("#item-states").textContent.startsWith("coder's items"));
  await page.waitForSelector("#items-list li.item");
  saw.itemStates = await texts(page, "#item-states button");
  // What the API holds at this moment (the log grows later in the script).
  saw.itemsApi = (await asThePage(page, "/v1/swarms/demo/agents/coder/items")).body;
  saw.firstItems = await page.$$eval("#items-list li.item", (items) =>
    items.map((item) => ({ id: item.dataset.itemId, state: item.dataset.state })),
  );
  await page.click("#items-more");
  await page.waitForFunction((count) => document.querySelectorAll("#items-list li.item").length > count,
    saw.firstItems.length);
  saw.itemsAfterMore = await page.locator("#items-list li.item").count();
  saw.coreTask = await page.textContent("#core-task");
  await page.fill("#search-query", "refresh token storage decision redis postgres");
  await page.click("#search-form button");
  await page.waitForSelector("#search-hits li.item");
  saw.hits = await page.$$eval("#search-hits li.item", (items) =>
    items.map((item) => ({
      id: item.dataset.itemId,
      text: item.querySelector(".text").textContent,
      explain: item.querySelector(".explain")?.textContent ?? "",
      superseded: item.querySelector(".superseded")?.textContent ?? "",
      supersedes: item.querySelector(".supersedes")?.textContent ?? "",
    })),
  );
  await shot(page, "memory-search");
  // Provenance: the first hit's events, in log order, each as its JSON.
  saw.firstHit = saw.hits[0].id;
  await page.click("#search-hits li.item:first-child button");
  await page.waitForSelector("#memory-provenance:not([hidden]) li .text");
  saw.provenance = await page.$$eval("#memory-provenance li", (items) =>
    items.map((item) => ({ seq: Number(item.dataset.seq), json: JSON.parse(item.querySelector("pre").textContent) })),
  );
  await shot(page, "provenance");
  // The replaced decision's provenance says what replaced it.
  const replaced = saw.hits.find((hit) => hit.superseded);
  check(replaced, `no superseded hit in ${JSON.stringify(saw.hits)}`);
  saw.replacedBy = replaced.superseded.replace("superseded by ", "");
  await page.click(`#search-hits li.item[data-item-id="${replaced.id}"] button`);
  await page.waitForFunction((id) => document.querySelector("#memory-provenance").dataset.id === id, replaced.id);
  await page.waitForSelector("#memory-provenance .status .superseded");
  saw.provenanceSuperseded = await page.textContent("#memory-provenance .status .superseded");

  // --- The fact graph around the failing test: its fix, as of a time. -------
  await open(page, "graph");
  await page.fill("#graph-entity", FAILING_TEST);
  await page.selectOption("#graph-hops", "1");
  await page.click("#graph-form button");
  await page.waitForSelector("#graph-edges li[data-edge-id]");
  const edges = () => page.$$eval("#graph-edges li[data-edge-id]", (items) =>
    items.map((item) => ({ id: item.dataset.edgeId, relation: item.dataset.relation, text: item.textContent })));
  saw.graphEdges = await edges();
  saw.graphDrawn = await graphShown(page);
  await shot(page, "graph");
  // A click on a drawn node puts it in focus and opens its provenance.
  const fixer = "file:src/auth/refresh.rs";
  saw.graphFocus = await focusOn(page, fixer);
  await page.waitForFunction((id) => document.querySelector("#graph-provenance").dataset.id === id, fixer);
  await page.waitForSelector("#graph-provenance li .text");
  saw.nodeProvenance = await page.$$eval("#graph-provenance li", (items) =>
    items.map((item) => JSON.parse(item.querySelector("pre").textContent)));
  // A listed edge opens its provenance too.
  const fixes = saw.graphEdges.find((edge) => edge.relation === "fixes");
  check(fixes, `no fixes edge in ${JSON.stringify(saw.graphEdges)}`);
  await page.click(`#graph-edges li[data-edge-id="${fixes.id}"] a`);
  await page.waitForFunction((id) => document.querySelector("#graph-provenance").dataset.id === id, fixes.id);
  await page.waitForSelector("#graph-provenance li .text");
  saw.edgeProvenance = await page.$$eval("#graph-provenance li", (items) =>
    items.map((item) => JSON.parse(item.querySelector("pre").textContent)));
  await shot(page, "graph-provenance");
  // As of the first time on the slider: the test failing, not yet fixed.
  await page.$eval("#graph-as-of", (slider) => {
    slider.value = "0";
    slider.dispatchEvent(new Event("input", { bubbles: true }));
  });
  saw.graphAsOf = await page.textContent("#graph-as-of-label");
  await page.waitForFunction(() =>
    [...document.querySelectorAll("#graph-edges li[data-edge-id]")].every((item) => item.dataset.relation !== "fixes"));
  saw.graphEdgesThen = await edges();
  await shot(page, "graph-as-of");
  // Two hops around a busy file: more nodes than are drawn; the drawing
  // fills the canvas, readable, with a legend; a click focuses.
  await page.fill("#graph-entity", "file:src/auth/token.rs");
  await page.selectOption("#graph-hops", "2");
  await page.click("#graph-form button");
  await page.waitForFunction(() => document.querySelector("#graph-summary").textContent.includes("src/auth/token.rs"));
  saw.graphLarge = await graphShown(page);
  await shot(page, "graph-large");
  const other = saw.graphLarge.nodes.find((id) => id.startsWith("file:") && id !== "file:src/auth/token.rs");
  saw.graphLargeFocus = await focusOn(page, other);
  saw.graphLargeFocused = other;
  await page.waitForTimeout(300);
  await shot(page, "graph-focus");
  // The decision that replaced another: the one it replaced is marked.
  await page.fill("#graph-entity", `decision:${saw.replacedBy}`);
  await page.selectOption("#graph-hops", "1");
  await page.click("#graph-form button");
  await page.waitForFunction((id) => document.querySelector("#graph-summary").textContent.includes("1 hop") &&
    document.querySelector("#graph-canvas").cytoscape?.getElementById(id).length, `decision:${replaced.id}`);
  saw.graphReplaced = await page.$eval("#graph-canvas", (canvas, id) => {
    const node = canvas.cytoscape.getElementById(id);
    return { superseded: node.hasClass("superseded"), label: node.data("label") };
  }, `decision:${replaced.id}`);
  await shot(page, "graph-superseded");

  // --- Context preview: under its budget, each item with tokens and reason. -
  await open(page, "context");
  await page.fill("#context-query", "refresh token rotation test failure");
  await page.fill("#context-budget", "400");
  await page.fill("#context-file", "src/auth/token.rs");
  await page.selectOption("#context-activity", "debugging");
  await page.fill("#context-errors", "assertion failed: refresh_access_token_rotates_refresh_token");
  await page.click("#context-form button");
  await page.waitForSelector("#context-result:not([hidden]) #context-items li.item");
  saw.context = {
    tokens: Number(await page.getAttribute("#context-total", "data-tokens")),
    budget: Number(await page.getAttribute("#context-total", "data-budget")),
    tiers: await page.$$eval("#context-bars .bar-row", (rows) => rows.map((row) => row.dataset.tier)),
    items: await page.$$eval("#context-items li.item", (items) =>
      items.map((item) => ({ tokens: Number(item.dataset.tokens), meta: item.querySelector(".meta").textContent }))),
  };
  await shot(page, "context");

  // --- Phases: a level beside the original events. -------------------------
  await open(page, "phases");
  await page.waitForSelector("#phases-list li.phase");
  saw.phases = await page.$$eval("#phases-list li.phase", (items) => items.map((item) => item.dataset.phaseId));
  saw.phasesApi = (await asThePage(page, "/v1/swarms/demo/agents/coder/phases")).body;
  await page.click('#phases-list li.phase:has-text("task-214-rust-refresh") button');
  await page.waitForSelector("#phase-events li .text");
  await page.waitForFunction(() => document.querySelector("#phase-text").textContent.length > 0);
  saw.phase = {
    heading: await page.textContent("#phase-heading"),
    level: await page.getAttribute("#phase-text", "data-level"),
    text: await page.textContent("#phase-text"),
    events: await page.locator("#phase-events li").count(),
  };
  await page.click('#phase-levels button[data-level="findings"]');
  await page.waitForFunction(() => document.querySelector("#phase-text").dataset.level === "findings" &&
    document.querySelector("#phase-level-meta").textContent.startsWith("findings"));
  saw.phase.findings = await page.textContent("#phase-text");
  await shot(page, "phases");

  // --- Contradictions: found by consolidation, resolved from the view. ------
  await open(page, "contradictions");
  await page.click("#consolidate");
  await page.waitForSelector("#contradictions-open li.contradiction");
  saw.openContradictions = await page.$$eval("#contradictions-open li.contradiction", (items) =>
    items.map((item) => item.dataset.contradictionId));
  await shot(page, "contradictions");
  saw.resolved = saw.openContradictions[0];
  await page.click(`#contradictions-open li[data-contradiction-id="${saw.resolved}"] button[data-resolution="b_wins"]`);
  await page.waitForSelector(`#contradictions-resolved li[data-contradiction-id="${saw.resolved}"]`);
  saw.resolvedShown = await page.textContent(`#contradictions-resolved li[data-contradiction-id="${saw.resolved}"] .resolution`);
  await shot(page, "contradictions-resolved");

  // --- Items by state: one forgotten, one pinned, by the coder's events. ----
  const [pinned, forgotten] = [saw.firstItems[1].id, saw.firstItems[2].id];
  const managing = [
    { id: "01KF0000000000000000000003", kind: "memory_pinned", data: { item_id: pinned, reason: "keep" } },
    { id: "01KF0000000000000000000004", kind: "memory_forgotten", data: { item_id: forgotten, reason: "noise" } },
  ].map((event) => ({ ...event, swarm: "demo", agent: "coder", ts: "2026-01-07T09:10:00Z" }));
  await publish("the pin and the forget", managing);
  saw.pinned = pinned;
  saw.forgotten = forgotten;
  const item = async (id) => (await apiAsOperator(`/v1/swarms/demo/agents/coder/items/${id}`)).json();
  await eventually("the forget and the pin applied", async () =>
    (await item(forgotten)).state === "forgotten" && (await item(pinned)).pinned);
  await open(page, "memory");
  await page.selectOption("#agent", "planner");
  await page.selectOption("#agent", "coder");
  await page.waitForSelector('#item-states button[data-state="forgotten"]');
  const listed = async (state) => {
    await page.click(`#item-states button[data-state="${state}"]`);
    await page.waitForFunction((wanted) => {
      const items = [...document.querySelectorAll("#items-list li.item")];
      return items.length > 0 && items.every((item) => item.dataset.state === wanted || wanted === "pinned");
    }, state);
    await page.waitForSelector(`#item-states button.current[data-state="${state}"]`);
    return page.$$eval("#items-list li.item", (items) => items.map((item) => ({
      id: item.dataset.itemId,
      state: item.dataset.state,
      badges: [...item.querySelectorAll(".badge")].map((badge) => badge.textContent),
      struck: getComputedStyle(item.querySelector(".text")).textDecorationLine,
    })));
  };
  saw.forgottenItems = await listed("forgotten");
  await shot(page, "memory-forgotten");
  saw.pinnedItems = await listed("pinned");
  saw.pinnedChip = await page.textContent('#item-states button[data-state="pinned"]');

  // --- Handoffs: received (pending first) and sent, with their packages. ----
  // A new handoff to the coder, which Mneme delivers and nobody acknowledges.
  const handoff = {
    id: "01KF0000000000000000000002", swarm: "demo", agent: "planner", ts: "2026-01-07T09:05:00Z",
    kind: "handoff_sent", correlation_id: "task-215-audit", scope: "shared",
    data: { to: "coder", task: "task-215-audit", summary: "Audit the refresh token table", artifacts: [],
      decisions: [], constraints: ["read-only"] },
  };
  await publish("the handoff", handoff);
  saw.pendingHandoff = handoff.id;
  await eventually("the handoff delivered", async () => {
    const { handoffs } = await (await apiAsOperator("/v1/swarms/demo/agents/coder/handoffs")).json();
    return handoffs.some((delivered) => delivered.handoff_id === handoff.id);
  });
  await open(page, "handoffs");
  await page.selectOption("#agent", "planner");
  await page.selectOption("#agent", "coder");
  await page.waitForSelector(`#handoffs-received li[data-handoff-id="${handoff.id}"]`);
  saw.handoffsReceived = await page.$$eval("#handoffs-received li.handoff", (items) =>
    items.map((item) => ({ id: item.dataset.handoffId, status: item.dataset.status })));
  await page.waitForSelector("#handoffs-sent li");
  saw.handoffsSent = await page.$$eval("#handoffs-sent li.handoff", (items) => items.map((item) => item.dataset.handoffId));
  await page.click("#handoffs-received li.handoff:first-child details summary");
  await shot(page, "handoffs");

  saw.consoleErrors = consoleErrors;
  console.log(JSON.stringify(saw));
} finally {
  await context.close();
}
