// Phases: an agent's phases and the other agents' shared ones; a phase at
// each level of compression (index, compressed, summary, findings, full),
// side by side with the original events it was made from.

import { $, agentPath, api, button, currentAgent, element, entryWithJson, failed, fill, finderOf, latestOnly, when } from "./api.js";

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
  const span = `${when(phase.started_at)}${phase.completed_at ? ` → ${when(phase.completed_at)}` : " → open"}`;
  const open = button(phase.name, () => showPhase(phase), "link");
  row.append(
    open,
    element("span", ` ${phase.status}${shared ? `, shared by ${phase.agent}` : ""} · ${events} events · ${span}`, "meta"),
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
      text.textContent = fullText(answer.full);
    }
  } catch (error) {
    if (!current()) return;
    $("#phase-level-meta").textContent = "";
    failed(text, error);
  }
}

/** The `full` level (a record of what the phase did) written out. */
function fullText(full) {
  const lines = [];
  const list = (name, values) => {
    if (values && values.length) lines.push(`${name}: ${values.join(", ")}`);
  };
  const seqs = full.event_seqs || [];
  const kinds = Object.entries(full.kinds || {}).sort((a, b) => b[1] - a[1]).map(([kind, count]) => `${count} ${kind}`);
  lines.push(`${seqs.length} events` + (seqs.length ? ` (seq ${seqs[0]} to ${seqs[seqs.length - 1]})` : "") +
    (kinds.length ? `: ${kinds.join(", ")}` : ""));
  for (const decision of full.decisions || []) {
    lines.push(`Decided (#${decision.seq}) ${decision.title}: ${decision.choice}` +
      (decision.supersedes ? `, replacing ${decision.supersedes}` : "") + (decision.rationale ? `. Why: ${decision.rationale}` : ""));
  }
  list("Files read", [...(full.files_read || [])]);
  list("Files modified", [...(full.files_modified || [])]);
  list("Symbols", [...(full.symbols || [])]);
  list("Commands", (full.commands || []).map((command) =>
    `${command.command} ×${command.runs}` + (command.failures ? ` (${command.failures} failed)` : "")));
  for (const error of full.errors || []) {
    lines.push(`Error ${error.error} from ${error.command} (first at #${error.first_seq})` +
      (error.fixed_by.length ? `, fixed by ${error.fixed_by.join(", ")}` : ", not fixed") +
      (error.fixed_seq ? ` at #${error.fixed_seq}` : ""));
  }
  list("Facts", full.facts);
  list("Handoffs", full.handoffs);
  if (full.message_count) lines.push(`${full.message_count} messages`);
  for (const message of (full.messages || []).slice(0, 10)) lines.push(`  #${message.seq} (${message.role}) ${message.text}`);
  lines.push(`${full.item_tokens} tokens of items`);
  return lines.join("\n");
}

async function showOriginal(phaseId) {
  const list = $("#phase-events");
  const current = latest("events");
  try {
    const answer = await api(phasePath(phaseId, "original"));
    if (!current()) return;
    const events = Array.isArray(answer.events) ? answer.events : [];
    const find = finderOf(events);
    fill(list, events.map((entry) => entryWithJson(entry, find)), "no events");
    $("#phase-events-meta").textContent = `${events.length} original events, in log order`;
  } catch (error) {
    if (current()) failed(list, error);
  }
}
