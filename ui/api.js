// What every view shares: the typed API over fetch (with the token the
// person signed in with), the session (agents, a token's agent), and small
// DOM helpers. Text from memory is only ever set as text, never as HTML.

import { clip, sentence, when } from "./sentence.js";

export { clip, when };

export const SWARM_KEY = "mneme-swarm";
/** The swarm the views show: the one chosen in this tab, else the first
 *  the server holds. A token opens one swarm; without tokens the header's
 *  picker offers every swarm the server holds. */
export let swarm = sessionStorage.getItem(SWARM_KEY) || document.querySelector('meta[name="mneme-swarm"]').content;

/** Shows swarm `name` from now on (the views load again). */
export function setSwarm(name) {
  swarm = name;
  sessionStorage.setItem(SWARM_KEY, name);
}
/** "token" when the API asks for a bearer token, "open" when it does not. */
export const auth = document.querySelector('meta[name="mneme-auth"]').content;
export const TOKEN_KEY = "mneme-token";
export const AGENT_KEY = "mneme-token-agent";

/** The signed-in session: the agents the token may read, and the one agent
 *  a bound token is for (`null` for a swarm-wide token). */
export const session = { agents: [], boundTo: null };

export const $ = (selector) => document.querySelector(selector);

export function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (className) node.className = className;
  return node;
}

export function button(text, onClick, className) {
  const node = element("button", text, className);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

function headers(extra) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { ...extra, Authorization: `Bearer ${token}` } : { ...extra };
}

/** A request to the API, answered as JSON; throws an Error carrying the
 *  API's own message and the status. */
export async function api(path, { method = "GET", body } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  const answer = await response.json().catch(() => null);
  if (!response.ok) {
    const message = answer && answer.error ? answer.error.message : response.statusText;
    const error = new Error(`${response.status}: ${message}`);
    error.status = response.status;
    throw error;
  }
  return answer;
}

/**
 * Follows a server-sent-event stream of the API (`EventSource` cannot send
 * the bearer token, so this reads the body of a fetch). Calls `onEvent`
 * with each event's name and parsed data; resolves when the stream ends,
 * rejects on an error other than the abort of `signal`.
 */
export async function follow(path, signal, onEvent) {
  const response = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!response.ok) throw new Error(`${response.status}: ${response.statusText}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += value;
    let end;
    while ((end = buffered.indexOf("\n\n")) >= 0) {
      const frame = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

/**
 * A run of requests of which only the latest one's answer counts (another
 * agent or filter chosen since, a button pressed twice): each call starts
 * one and gives back whether it is still the latest. A call alone drops
 * the one in flight.
 */
export function latestOnly() {
  let latest = 0;
  return () => {
    const mine = ++latest;
    return () => mine === latest;
  };
}

/**
 * `fn` of each of `items`, at most `limit` at a time (the API lets one token
 * have `http.max_queries_in_flight`, 4 by default, queries in flight), in
 * the items' order.
 */
export async function mapLimited(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export const swarmPath = (rest) => `/v1/swarms/${encodeURIComponent(swarm)}${rest}`;
export const agentPath = (agent, rest) => swarmPath(`/agents/${encodeURIComponent(agent)}${rest}`);

/** The agent the header's picker names: the one whose memory the agent
 *  views show. */
export const currentAgent = () => $("#agent").value;

/** What a log entry says, in a sentence (see sentence.js). */
export const gist = (entry, find) => sentence(entry, find);

/** The entries of `entries` by id (and a contradiction's detection by the
 *  contradiction's id): what their sentences may quote of each other. */
export function finderOf(entries) {
  const byId = new Map();
  for (const entry of entries) {
    if (entry.id) byId.set(entry.id, entry);
    if (entry.kind === "contradiction_detected" && entry.data) byId.set(entry.data.contradiction_id, entry);
  }
  return (id) => byId.get(id) || null;
}

/** A log entry as provenance and phases show it: who did what when, in a
 *  sentence, then (opened on demand) its whole JSON as it is on the log. */
export function entryWithJson(entry, find) {
  const item = element("li");
  item.dataset.seq = entry.seq;
  const kind = entry.invalid ? "dead letter" : entry.erased_by ? `${entry.kind} (erased)` : entry.kind;
  const json = element("details", undefined, "json");
  json.append(element("summary", "as on the log (JSON)"), element("pre", JSON.stringify(entry, null, 2)));
  item.append(
    element("div", `seq ${entry.seq} · ${kind} · ${entry.agent || ""} · ${when(entry.ts)}${written(entry)}`, "meta"),
    element("div", sentence(entry, find), "text"),
    json,
  );
  return item;
}

/** When the log stored an entry, if it says and that is not its `ts`:
 *  a handoff's delivery or a verdict speaks of an earlier time. */
export function written(entry) {
  if (!entry.appended_at || entry.appended_at === entry.ts) return "";
  return ` · written ${when(entry.appended_at)}`;
}

/** Fills a list, or says it is empty. */
export function fill(list, nodes, empty) {
  list.replaceChildren(...(nodes.length ? nodes : [element("li", empty, "meta")]));
}

/** Shows an error where the view's content would be. */
export function failed(container, error) {
  const tag = container.tagName === "OL" || container.tagName === "UL" ? "li" : "p";
  container.replaceChildren(element(tag, error.message, "error"));
}
