// The swarm timeline: the log's events by agent over time (a uPlot chart of
// events per agent, and the events newest first), filtered by agent, kind,
// task and time; dead letters as marked rows. Live: after the pages of the
// log it follows `GET …/events?follow=true` and adds each new entry.

import uPlot from "./vendor/uplot.mjs";
import { $, api, element, follow, gist, swarm, swarmPath } from "./api.js";

/** Events the view holds: the newest this many of the log, then what the
 *  stream adds (the oldest dropped past it). */
const HELD = 5000;
/** Entries per page read. */
const PAGE = 1000;
/** Rows shown, newest first. */
const ROWS = 500;
/** Time buckets of the chart. */
const BUCKETS = 48;
/** Wait before following again after the stream ended. */
const RETRY_MS = 5000;
/** The kind filter's value for records that are not events. */
const DEAD_LETTERS = "!dead-letter";
const COLOURS = ["#2f5fd0", "#d0692f", "#2f9d5f", "#9d2f8f", "#8f7a1d", "#1d8f8a", "#b42318", "#555"];

/** `generation` counts loads and stops: a load or a stream callback of an
 *  older one finds it changed and does nothing more. */
const view = { events: [], live: null, added: 0, chart: null, renderQueued: false, generation: 0, firstSeq: 1 };

export async function load() {
  stop();
  const generation = view.generation;
  const stale = () => generation !== view.generation;
  try {
    const held = (await api("/healthz")).swarms.find((entry) => entry.swarm === swarm);
    const last = held ? held.last_seq : 0;
    const first = Math.max(1, last - HELD + 1);
    const events = [];
    for (let from = first; from <= last; ) {
      const answer = await api(swarmPath(`/events?from_seq=${from}&limit=${PAGE}`));
      if (stale()) return;
      events.push(...answer.events.filter((entry) => entry.seq <= last));
      if (!answer.events.length || answer.next_seq <= from) break;
      from = answer.next_seq;
    }
    view.events = events;
    view.firstSeq = first;
    view.added = 0;
    refreshKinds();
    render();
    startFollowing(last + 1, generation);
  } catch (error) {
    if (stale()) return;
    $("#timeline-events tbody").replaceChildren();
    $("#timeline-summary").textContent = error.message;
    setLive("not live");
  }
}

/** Stops following the log (leaving the view) and any load under way. */
export function stop() {
  view.generation += 1;
  if (view.live) view.live.abort();
  view.live = null;
  setLive("not live");
}

function startFollowing(fromSeq, generation) {
  const controller = new AbortController();
  view.live = controller;
  setLive("following the log");
  let next = fromSeq;
  const mine = () => view.live === controller && view.generation === generation;
  follow(swarmPath(`/events?follow=true&from_seq=${fromSeq}`), controller.signal, (name, entry) => {
    if (!mine() || name !== "entry" || entry.seq < next) return;
    next = entry.seq + 1;
    view.events.push(entry);
    if (view.events.length > HELD + PAGE) view.events.splice(0, view.events.length - HELD);
    view.added += 1;
    setLive(`following the log: ${view.added} new since opened`);
    const known = [...$("#filter-kind").options].map((option) => option.value);
    if (!known.includes(entry.kind || DEAD_LETTERS)) refreshKinds();
    queueRender();
  })
    .then(() => ended(mine, generation, () => next, "the server ended the stream"))
    .catch((error) => {
      if (error.name !== "AbortError") ended(mine, generation, () => next, error.message);
    });
}

/** The stream ended while the view is open: says so, and follows again. */
function ended(mine, generation, next, why) {
  if (!mine()) return;
  setLive(`not live (${why}); trying again`);
  setTimeout(() => {
    if (mine()) startFollowing(next(), generation);
  }, RETRY_MS);
}

function setLive(text) {
  $("#timeline-live").textContent = text;
}

function refreshKinds() {
  const kinds = [...new Set(view.events.filter((entry) => entry.kind).map((entry) => entry.kind))].sort();
  const select = $("#filter-kind");
  const chosen = select.value;
  while (select.options.length > 1) select.remove(1);
  if (view.events.some((entry) => entry.invalid)) select.add(new Option("dead letters", DEAD_LETTERS));
  for (const kind of kinds) select.add(new Option(kind, kind));
  select.value = chosen;
}

function queueRender() {
  if (view.renderQueued) return;
  view.renderQueued = true;
  setTimeout(() => {
    view.renderQueued = false;
    render();
  }, 200);
}

/** The events the filters keep, in log order. */
function kept() {
  const agent = $("#filter-agent").value;
  const kind = $("#filter-kind").value;
  const task = $("#filter-task").value.trim();
  const since = $("#filter-since").value ? new Date($("#filter-since").value) : null;
  const until = $("#filter-until").value ? new Date($("#filter-until").value) : null;
  return view.events.filter((entry) => {
    if (agent && entry.agent !== agent) return false;
    if (kind === DEAD_LETTERS ? !entry.invalid : kind && entry.kind !== kind) return false;
    if (task && entry.correlation_id !== task) return false;
    const ts = entry.ts ? new Date(entry.ts) : null;
    if (since && (!ts || ts < since)) return false;
    if (until && (!ts || ts >= until)) return false;
    return true;
  });
}

function render() {
  const events = kept();
  const rows = events.slice(-ROWS).reverse();
  $("#timeline-events tbody").replaceChildren(
    ...rows.map((entry) => {
      const row = element(
        "tr",
        undefined,
        entry.invalid ? "dead-letter" : entry.erased_by ? `erased kind-${entry.kind}` : `kind-${entry.kind}`,
      );
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
  const dead = events.filter((entry) => entry.invalid).length;
  const held = view.events.length ? view.events[0].seq : view.firstSeq;
  $("#timeline-summary").textContent =
    `${events.length} of ${view.events.length} events` + (dead ? `, ${dead} dead letters` : "") +
    (events.length > rows.length ? `; the newest ${rows.length} shown` : "") +
    (held > 1 ? `; the log from seq ${held} on` : "");
  chart(events);
}

/** Events per agent per time bucket, one line per agent. */
function chart(events) {
  const timed = events.filter((entry) => entry.ts).map((entry) => [Date.parse(entry.ts) / 1000, entry.agent]);
  const container = $("#timeline-chart");
  if (view.chart) view.chart.destroy();
  view.chart = null;
  if (!timed.length) {
    container.replaceChildren();
    return;
  }
  let [first, last] = [Infinity, -Infinity];
  for (const [ts] of timed) {
    first = Math.min(first, ts);
    last = Math.max(last, ts);
  }
  const width = Math.max((last - first) / BUCKETS, 1);
  const agents = [...new Set(timed.map(([, agent]) => agent))].sort();
  const xs = Array.from({ length: BUCKETS + 1 }, (_, bucket) => first + bucket * width);
  const counts = agents.map(() => new Array(xs.length).fill(0));
  for (const [ts, agent] of timed) {
    counts[agents.indexOf(agent)][Math.min(Math.floor((ts - first) / width), BUCKETS)] += 1;
  }
  const options = {
    width: Math.max(container.clientWidth, 320),
    height: 180,
    series: [
      {},
      ...agents.map((agent, index) => ({
        label: agent,
        stroke: COLOURS[index % COLOURS.length],
        width: 2,
        points: { size: 4 },
      })),
    ],
    axes: [{}, { label: "events" }],
  };
  container.replaceChildren();
  view.chart = new uPlot(options, [xs, ...counts], container);
}

$("#timeline-filters").addEventListener("input", render);
