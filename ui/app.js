// Mneme's web view: plain ES modules, no framework, no build step; the
// libraries (cytoscape, uPlot) come from the npm registry and are compiled
// into the binary. Every call goes to the typed HTTP API (/v1/…) with the
// token the person signed in with; nothing is fetched from anywhere else.
// This module signs in and routes `#/<view>` to the view's module.

import { $, AGENT_KEY, SWARM_KEY, TOKEN_KEY, agentPath, api, auth, session, setSwarm, swarm, swarmPath } from "./api.js";
import * as contextPreview from "./context.js";
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
  context: contextPreview.load,
  phases: phases.load,
  contradictions: contradictions.load,
  handoffs: handoffs.load,
};
/** Views of the whole swarm: not for a token bound to one agent. */
const SWARM_WIDE = new Set(["timeline", "contradictions"]);

// --- Sign in -------------------------------------------------------------

/**
 * Asks the API whether the token opens the swarm (or, for a token bound to
 * one agent, that agent's routes: the API enforces it; the page only
 * follows), and remembers it. Throws the API's refusal.
 */
async function authorize(token, boundAgent) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  await pickSwarms();
  if (boundAgent) {
    await api(agentPath(boundAgent, "/digest"));
    sessionStorage.setItem(AGENT_KEY, boundAgent);
    return [boundAgent];
  }
  sessionStorage.removeItem(AGENT_KEY);
  return (await api(swarmPath("/agents"))).agents;
}

/** The swarms the token opens (every one the server holds without
 *  tokens): the picker offers them, and the view moves to one of them if
 *  the swarm it showed is not. */
async function pickSwarms() {
  const swarms = (await api("/v1/swarms")).swarms.map((held) => held.swarm);
  if (!swarms.length) {
    const error = new Error(`403: this token opens no swarm of this server`);
    error.status = 403;
    throw error;
  }
  if (!swarms.includes(swarm)) setSwarm(swarms[0]);
  const picker = $("#swarm");
  picker.replaceChildren(...swarms.map((name) => new Option(name, name, false, name === swarm)));
  $("#swarm-picker").hidden = swarms.length < 2;
  $("#swarm-name").textContent = swarm;
}

/** Opens the views the token opens: with its agent named, a bound token
 *  sees that agent's views and no swarm-wide one. */
function openViews(agents, boundAgent) {
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
  // Changing the address routes (hashchange); otherwise route here.
  if (!location.hash || location.hash === "#/login") location.hash = home;
  else route();
}

function forget() {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(AGENT_KEY);
  sessionStorage.removeItem(SWARM_KEY);
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("#login-error").textContent = "";
  const agent = $("#token-agent").value.trim();
  let agents;
  try {
    agents = await authorize($("#token").value.trim(), agent);
  } catch (error) {
    forget();
    const refused = {
      401: `This token does not open swarm ${swarm} (${error.message})`,
      403: agent
        ? `This token does not open agent ${agent}'s memory (${error.message})`
        : `This token does not open swarm ${swarm}'s swarm-wide views: it may be bound to one agent; name it (${error.message})`,
    };
    $("#login-error").textContent = refused[error.status] || error.message;
    return;
  }
  openViews(agents, agent);
});

// Signing out starts the page afresh: nothing the last token read stays on
// screen, and no request or stream of it lives on.
$("#logout").addEventListener("click", () => {
  forget();
  location.hash = "#/login";
  location.reload();
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
  $("#route-error").textContent = "";
  // Each view shows its own errors where its content would be; this is
  // the net under them, so that none becomes an unhandled rejection.
  if (!(view in VIEWS)) return;
  try {
    await VIEWS[view]();
  } catch (error) {
    $("#route-error").textContent = error.message;
  }
}

window.addEventListener("hashchange", route);
$("#agent").addEventListener("change", route);
// Another swarm: its agents, then the view again, of that swarm.
$("#swarm").addEventListener("change", async () => {
  setSwarm($("#swarm").value);
  timeline.stop();
  const boundAgent = sessionStorage.getItem(AGENT_KEY) || "";
  try {
    openViews(await authorize(sessionStorage.getItem(TOKEN_KEY) || "", boundAgent), boundAgent);
  } catch (error) {
    $("#route-error").textContent = error.message;
  }
});

// --- Start -----------------------------------------------------------------

$("#swarm-name").textContent = swarm;
const stored = sessionStorage.getItem(TOKEN_KEY);
if (auth === "open" || stored) {
  const boundAgent = sessionStorage.getItem(AGENT_KEY) || "";
  authorize(stored || "", boundAgent).then(
    (agents) => openViews(agents, boundAgent),
    () => {
      forget();
      show("login");
    },
  );
} else show("login");
