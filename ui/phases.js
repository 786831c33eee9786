// Phases: an agent's phases and the other agents' shared ones; a phase at
// each level of compression (index, compressed, summary, findings, full),
// side by side with the original events it was made from.

import { $, agentPath, api, button, currentAgent, element, entryWithJson, failed, fill, latestOnly } from "./api.js";

/** The levels, shortest first; `original` is the right-hand column. */
const LEVELS = ["index", "compressed", "summary", "findings", "full"];

const view = { agent: null, phase: null, level: "summary" };
/** The listing's, the level's and the events' requests, apart: an answer
 *  to an older one is dropped. */
const requests = { list: latestOnly(), level: latestOnly(), events: latestOnly() };
const latest = (kind) => requests[kind]();

export async function load() {
  const agent = currentAgent();
  if (!agent) return;
  view.agent = agent;
  view.phase = null;
  latest("level");
  latest("events");
  $("#phase-detail").hidden = true;
  const list = $("#phases-list");
  const current = latest("list");
  try {
    const answer = await api(agentPath(agent, "/phases"));
    if (!current()) return;
    const own = answer.phases.map((phase) => phaseRow(phase, false));
    const shared = answer.shared_phases.map((phase) => phaseRow(phase, true));
    fill(list, [...own, ...shared], "no phases yet");
    $("#phases-summary").textContent =
      `${answer.phases.length} phases of ${agent}, ${answer.shared_phases.length} shared by other agents` +
      (answer.session_summary ? ` — ${answer.session_summary}` : "");
  } catch (error) {
    if (current()) failed(list, error);
  }
}

function phaseRow(phase, shared) {
  const row = element("li", undefined, `phase status-${phase.status}`);
  row.dataset.phaseId = phase.phase_id;
  const events = typeof phase.events === "number" ? phase.events : phase.events.length;
  const when = `${phase.started_at}${phase.completed_at ? ` → ${phase.completed_at}` : " → open"}`;
  const open = button(phase.name, () => showPhase(phase), "link");
  row.append(
    open,
    element("span", ` ${phase.status}${shared ? `, shared by ${phase.agent}` : ""} · ${events} events · ${when}`, "meta"),
  );
  if (phase.outcome) row.append(element("div", `outcome: ${phase.outcome}`, "meta"));
  return row;
}

/** Until a phase completes only its record (`full`) and its events exist. */
async function showPhase(phase) {
  view.phase = phase.phase_id;
  const levels = phase.status === "open" ? ["full"] : LEVELS;
  $("#phase-detail").hidden = false;
  $("#phase-levels").replaceChildren(
    ...levels.map((level) => {
      const tab = button(level, () => showLevel(level), "chip");
      tab.dataset.level = level;
      return tab;
    }),
  );
  await Promise.all([showLevel(levels.includes(view.level) ? view.level : "full"), showOriginal(phase.phase_id)]);
}

const phasePath = (phaseId, level) =>
  agentPath(view.agent, `/phases/${encodeURIComponent(phaseId)}?level=${level}`);

async function showLevel(level) {
  view.level = level;
  for (const tab of document.querySelectorAll("#phase-levels button")) {
    tab.classList.toggle("current", tab.dataset.level === level);
  }
  const text = $("#phase-text");
  const current = latest("level");
  try {
    // The heading and the level's text or record come flattened in one object.
    const answer = await api(phasePath(view.phase, level));
    if (!current()) return;
    text.dataset.level = level;
    $("#phase-heading").textContent = `${answer.name} (${answer.status})`;
    if (typeof answer.text === "string") {
      const bound = answer.bound ? ` of at most ${answer.bound}` : "";
      $("#phase-level-meta").textContent = `${level}: ${answer.tokens} tokens${bound}`;
      text.textContent = answer.text || "(empty)";
    } else if (answer.full) {
      $("#phase-level-meta").textContent = "full: the phase as a record";
      text.textContent = JSON.stringify(answer.full, null, 2);
    }
  } catch (error) {
    if (!current()) return;
    $("#phase-level-meta").textContent = "";
    failed(text, error);
  }
}

async function showOriginal(phaseId) {
  const list = $("#phase-events");
  const current = latest("events");
  try {
    const answer = await api(phasePath(phaseId, "original"));
    if (!current()) return;
    const events = Array.isArray(answer.events) ? answer.events : [];
    fill(list, events.map(entryWithJson), "no events");
    $("#phase-events-meta").textContent = `${events.length} original events, in log order`;
  } catch (error) {
    if (current()) failed(list, error);
  }
}
