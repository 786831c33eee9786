// The swarm timeline: the log's events by agent over time (a uPlot chart of
// events per agent, and the events newest first, each as a sentence),
// filtered by agent, kind, task and time; dead letters as marked rows.
// Live: after the pages of the log it follows `GET …/events?follow=true`
// and adds each new entry. Times are UTC throughout.

import uPlot from "./vendor/uplot.mjs";
import { $, api, element, follow, gist, swarm, swarmPath, when } from "./api.js";

/** Events the view holds: the newest this many of the log, then what the
 *  stream adds (the oldest dropped past it). */
const HELD = 5000;
/** Entries per page read. */
const PAGE = 1000;
/** Rows shown, newest first. */
const ROWS = 500;
/** Time buckets of the chart, about: the bucket is the next round width. */
const BUCKETS = 48;
/** Round bucket widths, in seconds. */
const WIDTHS = [1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800];
/** The share of the events the chart may leave out as outliers, and how
 *  much wider than the others' span their gap must be (see chartRange). */
const OUTLIERS = 0.1;
const GAP = 3;
/** Wait before following again after the stream ended. */
const RETRY_MS = 5000;
/** The kind filter's value for records that are not events. */
const DEAD_LETTERS = "!dead-letter";
const COLOURS = ["#2f5fd0", "#d0692f", "#2f9d5f", "#9d2f8f", "#8f7a1d", "#1d8f8a", "#b42318", "#555"];

/** `generation` counts loads and stops: a load or a stream callback of an
 *  older one finds it changed and does nothing more. */
const view = {
  events: [],
  byId: new Map(),
  live: null,
  added: 0,
  chart: null,
  renderQueued: false,
  generation: 0,
  firstSeq: 1,
};

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
    view.byId = new Map();
    for (const entry of events) remember(entry);
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
    remember(entry);
    if (view.events.length > HELD + PAGE) {
      for (const dropped of view.events.splice(0, view.events.length - HELD)) forget(dropped);
    }
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
  // The fields are read as UTC, as every time on the page is.
  const since = $("#filter-since").value ? new Date(`${$("#filter-since").value}Z`) : null;
  const until = $("#filter-until").value ? new Date(`${$("#filter-until").value}Z`) : null;
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

/** An event the view holds, by its id (and a contradiction's detection by
 *  the contradiction's id): sentences quote what they refer to. */
const find = (id) => view.byId.get(id) || null;

function remember(entry) {
  if (entry.id) view.byId.set(entry.id, entry);
  if (entry.kind === "contradiction_detected" && entry.data) view.byId.set(entry.data.contradiction_id, entry);
}

function forget(entry) {
  for (const key of [entry.id, entry.data && entry.data.contradiction_id]) {
    if (key && view.byId.get(key) === entry) view.byId.delete(key);
  }
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
      const time = element("td", when(entry.ts), "time");
      if (entry.ts) time.title = entry.appended_at ? `${entry.ts}\nwritten ${entry.appended_at}` : entry.ts;
      row.append(
        element("td", String(entry.seq)),
        time,
        element("td", entry.agent || ""),
        element("td", entry.invalid ? "dead letter" : entry.kind, "kind"),
        element("td", entry.correlation_id || ""),
        element("td", gist(entry, find), "what"),
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

/**
 * The times the chart spans: those of the events shown, but for outliers,
 * unless every time is asked for (or the since/until fields bound the
 * times already). Outliers are a few events (at most OUTLIERS of them) on
 * the far side of a gap wider than GAP times the time the others span: a
 * clock far off, a stray event of another day.
 */
export function chartRange(times, every) {
  let sorted = [...times].sort((a, b) => a - b);
  const few = Math.max(1, Math.floor(OUTLIERS * sorted.length));
  for (let dropped = 0; !every && sorted.length > 2; ) {
    let widest = 1;
    for (let index = 2; index < sorted.length; index += 1) {
      if (sorted[index] - sorted[index - 1] > sorted[widest] - sorted[widest - 1]) widest = index;
    }
    const [before, after] = [sorted.slice(0, widest), sorted.slice(widest)];
    const span = (side) => side[side.length - 1] - side[0];
    const gap = sorted[widest] - sorted[widest - 1];
    const smaller = before.length < after.length ? before : after;
    if (gap <= GAP * Math.max(span(before), span(after), 60) || dropped + smaller.length > few) break;
    dropped += smaller.length;
    sorted = smaller === before ? after : before;
  }
  return [sorted[0], sorted[sorted.length - 1]];
}

const bucketName = (width) =>
  width < 60 ? `${width} s` : width < 3600 ? `${width / 60} min` : width < 86400 ? `${width / 3600} h` : `${width / 86400} d`;

/** Events per agent per time bucket, one line per agent, over the events'
 *  own times (UTC). */
function chart(events) {
  const timed = events.filter((entry) => entry.ts).map((entry) => [Date.parse(entry.ts) / 1000, entry.agent]);
  const container = $("#timeline-chart");
  if (view.chart) view.chart.destroy();
  view.chart = null;
  container.uplot = null;
  const outside = $("#timeline-outside");
  outside.replaceChildren();
  if (!timed.length) {
    container.replaceChildren();
    return;
  }
  const bounded = Boolean($("#filter-since").value || $("#filter-until").value);
  const [from, to] = chartRange(timed.map(([ts]) => ts), bounded || $("#timeline-every").checked);
  const left = timed.filter(([ts]) => ts < from || ts > to);
  if (left.length) {
    const times = left.map(([ts]) => ts).sort((a, b) => a - b);
    const [early, late] = [when(times[0] * 1000), when(times[times.length - 1] * 1000)];
    const span = early === late ? early : `${early} to ${late}`;
    outside.textContent =
      `${left.length} event${left.length === 1 ? "" : "s"} far from the others (${span}) not on the chart; ` +
      "tick “every time” to include them.";
  }
  const width = WIDTHS.find((candidate) => candidate >= (to - from) / BUCKETS) || WIDTHS[WIDTHS.length - 1];
  const start = Math.floor(from / width) * width;
  const count = Math.max(1, Math.floor((to - start) / width) + 1);
  const agents = [...new Set(timed.map(([, agent]) => agent))].sort();
  // Ticks in 24-hour UTC time, with the day when the chart spans several.
  const sameDay = when(from * 1000).slice(0, 10) === when(to * 1000).slice(0, 10);
  const tick = (ts) => (sameDay ? when(ts * 1000).slice(11, 16) : when(ts * 1000).slice(5, 16));
  // Each bucket is drawn at its middle.
  const xs = Array.from({ length: count }, (_, bucket) => start + (bucket + 0.5) * width);
  const counts = agents.map(() => new Array(count).fill(0));
  for (const [ts, agent] of timed) {
    if (ts < from || ts > to) continue;
    counts[agents.indexOf(agent)][Math.min(Math.floor((ts - start) / width), count - 1)] += 1;
  }
  const options = {
    width: Math.max(container.clientWidth, 320),
    height: 200,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    scales: { x: { time: true, range: () => [start, start + count * width] } },
    series: [
      { label: "time (UTC)" },
      ...agents.map((agent, index) => ({
        label: agent,
        stroke: COLOURS[index % COLOURS.length],
        width: 2,
        points: { size: 5 },
      })),
    ],
    axes: [
      { label: sameDay ? `time (UTC), ${when(from * 1000).slice(0, 10)}` : "time (UTC)", values: (_, ticks) => ticks.map(tick) },
      { label: `events per ${bucketName(width)}` },
    ],
  };
  container.replaceChildren();
  view.chart = new uPlot(options, [xs, ...counts], container);
  // For the browser test and for anyone poking at the page: the chart.
  container.uplot = view.chart;
}

$("#timeline-filters").addEventListener("input", render);
