// Mneme's web view: plain ES modules, no framework, no build step; the
// libraries (cytoscape, uPlot) come from the npm registry and are compiled
// into the binary. Every call goes to the typed HTTP API (/v1/…) with the
// token the person signed in with; nothing is fetched from anywhere else.
// This module signs in and routes `#/<view>` to the view's module.

import { $, AGENT_KEY, TOKEN_KEY, agentPath, api, auth, session, swarm, swarmPath } from "./api.js";
// The context preview has nothing to load: it answers its form.
import "./context.js";
import * as contradictions from "./contradictions.js";
import * as graph from "./graph.js";
import * as handoffs from "./handoffs.js";
import * as memory from "./memory.js";
import * as phases from "./phases.js";
import * as timeline from "./timeline.js";

/** Each view's loader, called when it opens or the agent changes. */
const VIEWS = {
  timeline: timeline.load,
  memory: memory.load,
  graph: graph.load,
  context: () => {},
  phases: phases.load,
  contradictions: contradictions.load,
  handoffs: handoffs.load,
};
/** Views of the whole swarm: not for a token bound to one agent. */
const SWARM_WIDE = new Set(["timeline", "contradictions"]);

// --- Sign in -------------------------------------------------------------

/**
 * Opens the views the token opens. A token bound to one agent opens only
 * that agent's routes (the API enforces it; the page only follows): with
 * its agent named, the page shows that agent's views and no swarm-wide one.
 */
async function signIn(token, boundAgent) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  let agents;
  if (boundAgent) {
    await api(agentPath(boundAgent, "/digest"));
    agents = [boundAgent];
    sessionStorage.setItem(AGENT_KEY, boundAgent);
  } else {
    agents = (await api(swarmPath("/agents"))).agents;
    sessionStorage.removeItem(AGENT_KEY);
  }
  session.agents = agents;
  session.boundTo = boundAgent || null;
  for (const link of document.querySelectorAll("nav a")) {
    link.hidden = Boolean(boundAgent) && SWARM_WIDE.has(link.dataset.view);
  }
  for (const select of [$("#filter-agent"), $("#agent")]) {
    const keep = select.id === "filter-agent" ? 1 : 0;
    while (select.options.length > keep) select.remove(keep);
    for (const agent of agents) select.add(new Option(agent, agent));
  }
  $("#agent").disabled = Boolean(boundAgent);
  $("#nav").hidden = false;
  const home = boundAgent ? "#/memory" : "#/timeline";
  if (!location.hash || location.hash === "#/login") location.hash = home;
  await route();
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("#login-error").textContent = "";
  const agent = $("#token-agent").value.trim();
  try {
    await signIn($("#token").value.trim(), agent);
  } catch (error) {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(AGENT_KEY);
    const refused = {
      401: `This token does not open swarm ${swarm} (${error.message})`,
      403: agent
        ? `This token does not open agent ${agent}'s memory (${error.message})`
        : `This token does not open swarm ${swarm}'s swarm-wide views: it may be bound to one agent; name it (${error.message})`,
    };
    $("#login-error").textContent = refused[error.status] || error.message;
  }
});

$("#logout").addEventListener("click", () => {
  timeline.stop();
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(AGENT_KEY);
  $("#nav").hidden = true;
  location.hash = "#/login";
});

// --- Routing -------------------------------------------------------------

function show(view) {
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== view;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("current", link.dataset.view === view);
  $("#agent-picker").hidden = view === "login" || SWARM_WIDE.has(view);
}

async function route() {
  let view = location.hash.replace(/^#\//, "") || "login";
  if ($("#nav").hidden && view !== "login") {
    show("login");
    return;
  }
  if (!(view in VIEWS) && view !== "login") view = session.boundTo ? "memory" : "timeline";
  // A token bound to one agent has no swarm-wide view to show.
  if (session.boundTo && SWARM_WIDE.has(view)) view = "memory";
  if (view !== "timeline") timeline.stop();
  show(view);
  if (view in VIEWS) await VIEWS[view]();
}

window.addEventListener("hashchange", route);
$("#agent").addEventListener("change", route);

// --- Start -----------------------------------------------------------------

$("#swarm-name").textContent = swarm;
const stored = sessionStorage.getItem(TOKEN_KEY);
if (auth === "open" || stored) signIn(stored || "", sessionStorage.getItem(AGENT_KEY) || "").catch(() => show("login"));
else show("login");
