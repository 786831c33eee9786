// Mneme's web view: plain ES module, no framework. Every call goes to the
// typed HTTP API (/v1/…) with the token the person signed in with; nothing
// is fetched from anywhere else. Text from memory is only ever set as text,
// never parsed as HTML.

const swarm = document.querySelector('meta[name="mneme-swarm"]').content;
/** "token" when the API asks for a bearer token, "open" when it does not. */
const auth = document.querySelector('meta[name="mneme-auth"]').content;
const TOKEN_KEY = "mneme-token";
const AGENT_KEY = "mneme-token-agent";
/** Pages of the log read for the timeline, 1,000 events each. */
const TIMELINE_PAGES = 20;
/** Rows the timeline shows, newest first. */
const TIMELINE_ROWS = 500;

const $ = (selector) => document.querySelector(selector);

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

/** GET a path of the API as JSON; throws an Error with the API's message. */
async function api(path) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const response = await fetch(path, { headers });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = body && body.error ? body.error.message : response.statusText;
    const error = new Error(`${response.status}: ${message}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

const swarmPath = (rest) => `/v1/swarms/${encodeURIComponent(swarm)}${rest}`;

// --- Sign in -------------------------------------------------------------

/**
 * Opens the views the token opens. A token bound to one agent opens only
 * that agent's routes (the API enforces it; the page only follows): with
 * its agent named, the page shows that agent's memory and no swarm-wide
 * view.
 */
async function signIn(token, boundAgent) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  let agents;
  if (boundAgent) {
    await api(swarmPath(`/agents/${encodeURIComponent(boundAgent)}/digest`));
    agents = [boundAgent];
    sessionStorage.setItem(AGENT_KEY, boundAgent);
  } else {
    agents = (await api(swarmPath("/agents"))).agents;
    sessionStorage.removeItem(AGENT_KEY);
  }
  state.agents = agents;
  state.boundTo = boundAgent || null;
  for (const link of document.querySelectorAll("nav a[data-swarm-wide]")) link.hidden = Boolean(boundAgent);
  for (const select of [$("#filter-agent"), $("#memory-agent")]) {
    const keep = select.id === "filter-agent" ? 1 : 0;
    while (select.options.length > keep) select.remove(keep);
    for (const agent of agents) select.add(new Option(agent, agent));
  }
  $("#nav").hidden = false;
  const home = boundAgent ? "#/memory" : "#/timeline";
  if (!location.hash || location.hash === "#/login" || location.hash === home) {
    location.hash = home;
    route();
  } else route();
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("#login-error").textContent = "";
  try {
    await signIn($("#token").value.trim(), $("#token-agent").value.trim());
  } catch (error) {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(AGENT_KEY);
    const refused = {
      401: `This token does not open swarm ${swarm} (${error.message})`,
      403: $("#token-agent").value.trim()
        ? `This token does not open agent ${$("#token-agent").value.trim()}'s memory (${error.message})`
        : `This token does not open swarm ${swarm}'s swarm-wide views: it may be bound to one agent; name it (${error.message})`,
    };
    $("#login-error").textContent = refused[error.status] || error.message;
  }
});

$("#logout").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(AGENT_KEY);
  $("#nav").hidden = true;
  location.hash = "#/login";
});

// --- Views ---------------------------------------------------------------

const state = { agents: [], events: null, boundTo: null };

function show(view) {
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== view;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("current", link.dataset.view === view);
}

async function route() {
  let view = location.hash.replace(/^#\//, "") || "login";
  if ($("#nav").hidden && view !== "login") {
    show("login");
    return;
  }
  // A token bound to one agent has no swarm-wide view to show.
  if (state.boundTo && view === "timeline") view = "memory";
  show(view);
  if (view === "timeline") await loadTimeline();
  if (view === "memory") await loadAgentSummary();
}

window.addEventListener("hashchange", route);

// --- Timeline ------------------------------------------------------------

async function loadTimeline() {
  const events = [];
  let from = 1;
  for (let page = 0; page < TIMELINE_PAGES; page++) {
    const answer = await api(swarmPath(`/events?from_seq=${from}&limit=1000`));
    events.push(...answer.events);
    if (answer.events.length < 1000 || answer.next_seq <= from) break;
    from = answer.next_seq;
  }
  state.events = events;
  const kinds = [...new Set(events.filter((entry) => entry.kind).map((entry) => entry.kind))].sort();
  const select = $("#filter-kind");
  const chosen = select.value;
  while (select.options.length > 1) select.remove(1);
  for (const kind of kinds) select.add(new Option(kind, kind));
  select.value = chosen;
  renderTimeline();
}

/** Characters of an event's gist the timeline shows. */
const GIST_CHARS = 280;

/** What an event says, in a line. */
function gist(entry) {
  if (entry.invalid) return `dead letter: ${entry.invalid}`;
  const data = entry.data || {};
  const text =
    data.text || data.title || data.summary || (data.package && data.package.summary) ||
    data.outcome || data.goal || data.reason;
  let line;
  if (text) line = data.choice ? `${text} — ${data.choice}` : text;
  else if (data.tool) line = `$ ${data.tool} ${data.args ? JSON.stringify(data.args) : ""} → exit ${data.exit_code ?? "?"}`;
  else if (data.subject) line = `${data.subject} ${data.predicate} ${data.object}`;
  else if (data.phase) line = data.phase;
  else line = JSON.stringify(data);
  return line.length > GIST_CHARS ? `${line.slice(0, GIST_CHARS)}…` : line;
}

function renderTimeline() {
  const agent = $("#filter-agent").value;
  const kind = $("#filter-kind").value;
  const task = $("#filter-task").value.trim();
  const since = $("#filter-since").value ? new Date($("#filter-since").value) : null;
  const until = $("#filter-until").value ? new Date($("#filter-until").value) : null;
  const kept = (state.events || []).filter((entry) => {
    if (agent && entry.agent !== agent) return false;
    if (kind && entry.kind !== kind) return false;
    if (task && entry.correlation_id !== task) return false;
    const ts = entry.ts ? new Date(entry.ts) : null;
    if (since && (!ts || ts < since)) return false;
    if (until && (!ts || ts >= until)) return false;
    return true;
  });
  const rows = kept.slice(-TIMELINE_ROWS).reverse();
  const body = $("#timeline-events tbody");
  body.replaceChildren(
    ...rows.map((entry) => {
      const row = element("tr", undefined, entry.invalid ? "dead-letter" : `kind-${entry.kind}`);
      row.dataset.seq = entry.seq;
      row.append(
        element("td", String(entry.seq)),
        element("td", entry.ts || ""),
        element("td", entry.agent || ""),
        element("td", entry.invalid ? "dead letter" : entry.kind),
        element("td", entry.correlation_id || ""),
        element("td", gist(entry), "what"),
      );
      return row;
    }),
  );
  const dead = kept.filter((entry) => entry.invalid).length;
  $("#timeline-summary").textContent =
    `${kept.length} of ${state.events.length} events` + (dead ? `, ${dead} dead letters` : "") +
    (kept.length > rows.length ? `; the newest ${rows.length} shown` : "");
}

$("#timeline-filters").addEventListener("input", renderTimeline);

// --- Memory --------------------------------------------------------------

/** How many items are in each state, and the agent's core memory. */
async function loadAgentSummary() {
  const agent = $("#memory-agent").value;
  if (!agent) return;
  const base = `/agents/${encodeURIComponent(agent)}`;
  try {
    const [{ states }, core] = await Promise.all([api(swarmPath(`${base}/items`)), api(swarmPath(`${base}/core`))]);
    const counts = Object.entries(states).map(([name, count]) => `${count} ${name}`);
    $("#item-states").textContent = `${agent}'s items: ${counts.join(", ") || "none"}`;
    $("#core-task").textContent = core.task
      ? `Working on: ${core.task.title} (${core.task.status}${core.task.from ? `, from ${core.task.from}` : ""})`
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
    $("#item-states").textContent = error.message;
  }
}

$("#memory-agent").addEventListener("change", loadAgentSummary);

$("#search-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const agent = $("#memory-agent").value;
  const query = $("#search-query").value.trim();
  const mode = $("#search-mode").value;
  const list = $("#search-hits");
  if (!agent || !query) return;
  const path = swarmPath(
    `/agents/${encodeURIComponent(agent)}/search?q=${encodeURIComponent(query)}&mode=${mode}&k=10&explain=true`,
  );
  try {
    const { hits } = await api(path);
    list.replaceChildren(
      ...hits.map((hit) => {
        const item = element("li");
        item.dataset.itemId = hit.item_id;
        item.append(
          element("div", `${hit.kind} · ${hit.agent} · ${hit.ts} · score ${hit.score.toFixed(3)}`, "hit-meta"),
          element("div", hit.text, "hit-text"),
        );
        if (hit.superseded_by) item.append(element("div", `superseded by ${hit.superseded_by}`, "superseded"));
        if (hit.kind !== "phase") {
          const button = element("button", "provenance", "provenance");
          button.type = "button";
          button.addEventListener("click", () => showProvenance(agent, hit.item_id));
          item.append(button);
        }
        if (hit.explain) {
          const parts = Object.entries(hit.explain).map(([retriever, rank]) =>
            rank.rank ? `${retriever} #${rank.rank}` : `${retriever} +${rank.score.toFixed(2)}`,
          );
          item.append(element("div", `found by ${parts.join(", ")}`, "explain"));
        }
        return item;
      }),
    );
    if (!hits.length) list.replaceChildren(element("li", "nothing found"));
  } catch (error) {
    list.replaceChildren(element("li", error.message, "error"));
  }
});

/** An item's events, in log order, each with its whole JSON. */
async function showProvenance(agent, itemId) {
  const panel = $("#provenance");
  const list = $("#provenance-events");
  $("#provenance-item").textContent = itemId;
  panel.hidden = false;
  try {
    const { events } = await api(swarmPath(`/agents/${encodeURIComponent(agent)}/provenance/${encodeURIComponent(itemId)}`));
    list.replaceChildren(
      ...events.map((entry) => {
        const item = element("li");
        item.dataset.seq = entry.seq;
        item.append(
          element("div", `seq ${entry.seq} · ${entry.invalid ? "dead letter" : entry.kind} · ${entry.agent} · ${entry.ts || ""}`, "hit-meta"),
          element("pre", JSON.stringify(entry, null, 2)),
        );
        return item;
      }),
    );
  } catch (error) {
    list.replaceChildren(element("li", error.message, "error"));
  }
}

// --- Start -----------------------------------------------------------------

$("#swarm-name").textContent = swarm;
const stored = sessionStorage.getItem(TOKEN_KEY);
if (auth === "open" || stored) signIn(stored || "", sessionStorage.getItem(AGENT_KEY) || "").catch(() => show("login"));
else show("login");
