/**
 * `Mneme`, the client of `mneme serve`'s HTTP API, over `fetch`.
 *
 *     const mneme = new Mneme("http://127.0.0.1:7700", { swarm: "demo", agent: "coder" });
 *     await mneme.publish(buildEvent("demo", "coder", "message_recorded", { role: "user", text: "rate-limit login" }));
 *     const { hits } = await mneme.search("rate limit");   // waits until the write is applied
 *
 * Each method answers the contract's typed answer (`Schemas["SearchAnswer"]`,
 * …) and throws `MnemeError` (a subclass by status) carrying the error
 * body's `code` and `field`. Reads wait for this client's own writes: a
 * read of a swarm this client published to passes the highest seq the log
 * gave it as `min_seq` (the server waits until the agent's memory applied
 * it, at most 10 s), unless the call gives `min_seq`, or
 * `readYourWrites: false`. Idempotent calls (reads, and publishing: an
 * event's id makes a repeat harmless) are retried after a lost connection,
 * a timeout, a 429 (after its `Retry-After`) or a 502/503/504, `retries`
 * times with growing waits.
 */

import { MnemeError } from "./errors.js";
import { serverSentEvents } from "./sse.js";
import type { AnswerOf, BodyOf, Event, OperationId, QueryOf, Schemas } from "./types.js";

export const DEFAULT_URL = "http://127.0.0.1:7700";
const RETRY_STATUSES = new Set([429, 502, 503, 504]);

export interface MnemeOptions {
  /** The swarm of calls that do not name one. */
  swarm?: string;
  /** The agent of calls that do not name one. */
  agent?: string;
  /** A bearer token (`[auth]` in swarm.toml). */
  token?: string;
  /** Attempts after the first for idempotent calls (default 3). */
  retries?: number;
  /** Milliseconds one attempt may take (default 30,000; the follow streams have none). */
  timeoutMs?: number;
  /** Reads wait for this client's own writes (default true). */
  readYourWrites?: boolean;
  /** The `fetch` to use (default the global one). */
  fetch?: typeof fetch;
}

/** Which agent's memory a call reads or writes (the client's when left out), and a signal to abort it. */
export type AgentTarget = {
  swarm?: string;
  agent?: string;
  signal?: AbortSignal;
};

/** Which swarm a call is about (the client's when left out), and a signal to abort it. */
export type SwarmTarget = {
  swarm?: string;
  signal?: AbortSignal;
};

type Query = Record<string, unknown>;

/** One request: `idempotent` ones may be retried; `minSeqSwarm` names the swarm whose writes a read waits for. */
interface Call {
  operation: OperationId;
  method: "GET" | "POST";
  path: string;
  query?: Query;
  body?: unknown;
  idempotent: boolean;
  minSeqSwarm?: string;
  signal?: AbortSignal;
}

const segment = encodeURIComponent;

/** A client of `mneme serve`'s HTTP API: one method per operation of the OpenAPI document. */
export class Mneme {
  readonly baseUrl: string;
  readonly swarm: string | undefined;
  readonly agent: string | undefined;
  readonly retries: number;
  readonly timeoutMs: number;
  readonly readYourWrites: boolean;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;
  /** The highest seq this client's publishes got, by swarm. */
  readonly #written = new Map<string, number>();

  constructor(baseUrl: string = DEFAULT_URL, options: MnemeOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.swarm = options.swarm;
    this.agent = options.agent;
    this.retries = options.retries ?? 3;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.readYourWrites = options.readYourWrites ?? true;
    this.#headers = options.token ? { authorization: `Bearer ${options.token}` } : {};
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The highest seq this client's publishes to `swarm` got (undefined before any). */
  writtenSeq(swarm?: string): number | undefined {
    return this.#written.get(this.#swarm(swarm));
  }

  // -- writing ---------------------------------------------------------

  /**
   * Appends one event or several (as `buildEvent` makes them): each gets
   * its seq, or `duplicate` when the log has it already. All are checked
   * before any is appended. Later reads of their swarms wait for them.
   */
  async publish(
    events: Event | readonly Event[],
    options: { signal?: AbortSignal } = {},
  ): Promise<AnswerOf<"AppendEvents">> {
    const batch = Array.isArray(events) ? [...events] : [events as Event];
    const answer = await this.#send<"AppendEvents">({
      operation: "AppendEvents",
      method: "POST",
      path: "/v1/events",
      body: batch,
      // An event's id makes a repeat harmless: the log stores it once.
      idempotent: true,
      signal: options.signal,
    });
    answer.accepted.forEach((accepted, index) => {
      const swarm = batch[index]?.swarm;
      if (typeof swarm === "string") this.#noteWritten(swarm, accepted.seq);
    });
    return answer;
  }

  /** Writes a note into the agent's memory (`tags`, `importance`, `scope`, `task`). */
  async writeNote(
    text: string,
    options: Omit<BodyOf<"WriteNote">, "text"> & AgentTarget = {},
  ): Promise<AnswerOf<"WriteNote">> {
    const { swarm, agent, signal, ...body } = options;
    const answer = await this.#send<"WriteNote">({
      operation: "WriteNote",
      method: "POST",
      path: this.#agentPath(swarm, agent, "/notes"),
      body: { text, ...body },
      idempotent: false,
      signal,
    });
    this.#noteWritten(this.#swarm(swarm), answer.seq);
    return answer;
  }

  /** Replaces one block of the agent's core memory (empty `content` clears it). */
  async updateCore(block: string, content: string, options: AgentTarget = {}): Promise<AnswerOf<"UpdateCore">> {
    const { swarm, agent, signal } = options;
    const answer = await this.#send<"UpdateCore">({
      operation: "UpdateCore",
      method: "POST",
      path: this.#agentPath(swarm, agent, "/core"),
      body: { block, content } satisfies BodyOf<"UpdateCore">,
      idempotent: false,
      signal,
    });
    this.#noteWritten(this.#swarm(swarm), answer.written.seq);
    return answer;
  }

  /** Acknowledges a handoff the agent received. A second acknowledgement is refused (409, `Conflict`). */
  async acknowledge(
    handoffId: string,
    options: BodyOf<"Acknowledge"> & AgentTarget = {},
  ): Promise<AnswerOf<"Acknowledge">> {
    const { swarm, agent, signal, ...body } = options;
    const answer = await this.#send<"Acknowledge">({
      operation: "Acknowledge",
      method: "POST",
      path: this.#agentPath(swarm, agent, `/handoffs/${segment(handoffId)}/ack`),
      body,
      // A repeat after a lost answer is refused as already acknowledged: not retried.
      idempotent: false,
      signal,
    });
    this.#noteWritten(this.#swarm(swarm), answer.seq);
    return answer;
  }

  // -- one agent's memory ------------------------------------------------

  /** Hybrid search by default; `k`, `mode`, `kind`, `since`, … as the API takes them. */
  async search(q: string, options: Omit<QueryOf<"Search">, "q"> & AgentTarget = {}): Promise<AnswerOf<"Search">> {
    return this.#agentRead("Search", "GET", "/search", { ...options, q });
  }

  /** Budgeted context for a prompt: `budget` tokens, `signals` (current file, recent errors, …), as a JSON body. */
  async context(
    query = "",
    options: Omit<BodyOf<"PostContext">, "query"> & AgentTarget = {},
  ): Promise<AnswerOf<"PostContext">> {
    const { swarm, agent, signal, ...body } = options;
    return this.#send<"PostContext">({
      operation: "PostContext",
      method: "POST",
      path: this.#agentPath(swarm, agent, "/context"),
      body: { query, ...body },
      idempotent: true,
      minSeqSwarm: this.#swarm(swarm),
      signal,
    });
  }

  /** The same context through query parameters (`recent_errors` newline-separated). */
  async contextGet(options: QueryOf<"GetContext"> & AgentTarget = {}): Promise<AnswerOf<"GetContext">> {
    return this.#agentRead("GetContext", "GET", "/context", options);
  }

  /** The fact graph around an entity (`hops`, `relations`, `as_of`). */
  async graph(
    entity: string,
    options: Omit<QueryOf<"Graph">, "entity"> & AgentTarget = {},
  ): Promise<AnswerOf<"Graph">> {
    return this.#agentRead("Graph", "GET", "/graph", { ...options, entity });
  }

  /** The agent's items with their states, newest first (`state`, `limit`, `before_seq`). */
  async items(options: QueryOf<"ItemStates"> & AgentTarget = {}): Promise<AnswerOf<"ItemStates">> {
    return this.#agentRead("ItemStates", "GET", "/items", options);
  }

  /** One item of the agent's memory. */
  async item(itemId: string, options: QueryOf<"Item"> & AgentTarget = {}): Promise<AnswerOf<"Item">> {
    return this.#agentRead("Item", "GET", `/items/${segment(itemId)}`, options);
  }

  /** The events an item of the agent's memory came from. */
  async provenance(
    itemId: string,
    options: QueryOf<"AgentProvenance"> & AgentTarget = {},
  ): Promise<AnswerOf<"AgentProvenance">> {
    return this.#agentRead("AgentProvenance", "GET", `/provenance/${segment(itemId)}`, options);
  }

  /** The agent's compressed phases. */
  async phases(options: QueryOf<"Phases"> & AgentTarget = {}): Promise<AnswerOf<"Phases">> {
    return this.#agentRead("Phases", "GET", "/phases", options);
  }

  /** One phase, at a `level` of detail. */
  async phase(phaseId: string, options: QueryOf<"Phase"> & AgentTarget = {}): Promise<AnswerOf<"Phase">> {
    return this.#agentRead("Phase", "GET", `/phases/${segment(phaseId)}`, options);
  }

  /** The handoffs the agent received, pending and acknowledged. */
  async handoffs(options: Omit<QueryOf<"Handoffs">, "follow"> & AgentTarget = {}): Promise<AnswerOf<"Handoffs">> {
    return this.#agentRead("Handoffs", "GET", "/handoffs", options);
  }

  /**
   * The agent's pending handoffs, then each new one as it is delivered
   * (server-sent events), until the caller stops iterating, aborts the
   * signal, or the server ends the stream.
   */
  async *followHandoffs(options: AgentTarget = {}): AsyncGenerator<Schemas["HandoffDelivery"], void, undefined> {
    const path = this.#agentPath(options.swarm, options.agent, "/handoffs");
    for await (const message of this.#follow("Handoffs", path, {}, options.signal)) {
      if (message.event === "handoff") yield JSON.parse(message.data) as Schemas["HandoffDelivery"];
    }
  }

  /** The agent's core memory blocks. */
  async core(options: QueryOf<"Core"> & AgentTarget = {}): Promise<AnswerOf<"Core">> {
    return this.#agentRead("Core", "GET", "/core", options);
  }

  /** What happened to the agent's memory, in log order (`since`, `since_seq`, `limit`). */
  async timeline(options: QueryOf<"Timeline"> & AgentTarget = {}): Promise<AnswerOf<"Timeline">> {
    const { swarm, agent, signal, ...query } = options;
    return this.#send<"Timeline">({
      operation: "Timeline",
      method: "GET",
      path: this.#agentPath(swarm, agent, "/timeline"),
      query,
      idempotent: true,
      signal,
    });
  }

  /** A digest of the agent's memory: equal digests, equal memories. */
  async digest(options: QueryOf<"Digest"> & AgentTarget = {}): Promise<AnswerOf<"Digest">> {
    return this.#agentRead("Digest", "GET", "/digest", options);
  }

  /** Rebuilds the agent's memory from the log (`verify` compares the digests). */
  async replay(options: QueryOf<"Replay"> & AgentTarget = {}): Promise<AnswerOf<"Replay">> {
    const { swarm, agent, signal, ...query } = options;
    return this.#send<"Replay">({
      operation: "Replay",
      method: "POST",
      path: this.#agentPath(swarm, agent, "/replay"),
      query,
      idempotent: false,
      minSeqSwarm: this.#swarm(swarm),
      signal,
    });
  }

  // -- the swarm and the process -----------------------------------------

  /** The process's health: its log, its swarms, their backlogs. */
  async health(options: { signal?: AbortSignal } = {}): Promise<AnswerOf<"Health">> {
    return this.#send<"Health">({
      operation: "Health",
      method: "GET",
      path: "/healthz",
      idempotent: true,
      signal: options.signal,
    });
  }

  /** The swarms this process serves. */
  async swarms(options: { signal?: AbortSignal } = {}): Promise<AnswerOf<"Swarms">> {
    return this.#send<"Swarms">({
      operation: "Swarms",
      method: "GET",
      path: "/v1/swarms",
      idempotent: true,
      signal: options.signal,
    });
  }

  /** The agents of a swarm that have a memory. */
  async agents(options: SwarmTarget = {}): Promise<AnswerOf<"Agents">> {
    return this.#swarmCall("Agents", "GET", "/agents", options);
  }

  /** A page of the swarm's log (`from_seq`, `agent`, `limit`). */
  async events(options: Omit<QueryOf<"Events">, "follow"> & SwarmTarget = {}): Promise<AnswerOf<"Events">> {
    return this.#swarmCall("Events", "GET", "/events", options);
  }

  /**
   * Every entry of the swarm's log from `from_seq` on (events, dead-lettered
   * records, erased stubs), then each new one as it is appended, until the
   * caller stops iterating, aborts the signal, or the server ends the stream.
   */
  async *followEvents(
    options: Omit<QueryOf<"Events">, "follow" | "limit"> & SwarmTarget = {},
  ): AsyncGenerator<Schemas["LogEntry"], void, undefined> {
    const { swarm, signal, ...query } = options;
    for await (const message of this.#follow("Events", this.#swarmPath(swarm, "/events"), query, signal)) {
      if (message.event === "entry") yield JSON.parse(message.data) as Schemas["LogEntry"];
    }
  }

  /** The swarm's dead-lettered records, with why. */
  async deadLetters(options: SwarmTarget = {}): Promise<AnswerOf<"DeadLetters">> {
    return this.#swarmCall("DeadLetters", "GET", "/deadletters", options);
  }

  /** Runs the consolidator now (`dry_run` reports without writing; `agent` limits it to one memory). */
  async consolidate(options: QueryOf<"Consolidate"> & SwarmTarget = {}): Promise<AnswerOf<"Consolidate">> {
    return this.#swarmCall("Consolidate", "POST", "/consolidate", options, { idempotent: false });
  }

  /** The swarm's open contradictions (`agent` limits them to one memory). */
  async contradictions(options: QueryOf<"Contradictions"> & SwarmTarget = {}): Promise<AnswerOf<"Contradictions">> {
    return this.#swarmCall("Contradictions", "GET", "/contradictions", options);
  }

  /** Resolves a contradiction: `a_wins`, `b_wins`, `both_valid` or `merged`. */
  async resolve(
    contradictionId: string,
    resolution: BodyOf<"Resolve">["resolution"],
    options: Omit<BodyOf<"Resolve">, "resolution"> & SwarmTarget = {},
  ): Promise<AnswerOf<"Resolve">> {
    const { swarm, signal, ...body } = options;
    return this.#send<"Resolve">({
      operation: "Resolve",
      method: "POST",
      path: this.#swarmPath(swarm, `/contradictions/${segment(contradictionId)}/resolve`),
      body: { resolution, ...body },
      idempotent: false,
      signal,
    });
  }

  /** Which memories of the swarm hold an item, and the events it came from. */
  async swarmProvenance(itemId: string, options: SwarmTarget = {}): Promise<AnswerOf<"SwarmProvenance">> {
    return this.#swarmCall("SwarmProvenance", "GET", `/provenance/${segment(itemId)}`, options);
  }

  /** Erases items from the log and every projection: `item_ids`, or an `agent` and a time `before`. */
  async purge(options: BodyOf<"Purge"> & SwarmTarget): Promise<AnswerOf<"Purge">> {
    const { swarm, signal, ...body } = options;
    return this.#send<"Purge">({
      operation: "Purge",
      method: "POST",
      path: this.#swarmPath(swarm, "/purge"),
      body,
      idempotent: false,
      signal,
    });
  }

  /** The process's Prometheus metrics, as text. */
  async metrics(options: { signal?: AbortSignal } = {}): Promise<string> {
    const response = await this.#request({
      operation: "Metrics",
      method: "GET",
      path: "/metrics",
      idempotent: true,
      signal: options.signal,
    });
    return response.text();
  }

  /** The OpenAPI document the server serves (the one this client's types are generated from). */
  async openapi(options: { signal?: AbortSignal } = {}): Promise<Record<string, unknown>> {
    const response = await this.#request({
      operation: "OpenApi",
      method: "GET",
      path: "/v1/openapi.json",
      idempotent: true,
      signal: options.signal,
    });
    return (await response.json()) as Record<string, unknown>;
  }

  // -- the plumbing ----------------------------------------------------

  #swarm(swarm: string | undefined): string {
    const chosen = swarm ?? this.swarm;
    if (!chosen) throw new TypeError("no swarm: pass { swarm } to the call or to the client");
    return chosen;
  }

  #agent(agent: string | undefined): string {
    const chosen = agent ?? this.agent;
    if (!chosen) throw new TypeError("no agent: pass { agent } to the call or to the client");
    return chosen;
  }

  #swarmPath(swarm: string | undefined, rest: string): string {
    return `/v1/swarms/${segment(this.#swarm(swarm))}${rest}`;
  }

  #agentPath(swarm: string | undefined, agent: string | undefined, rest: string): string {
    const swarmPath = this.#swarmPath(swarm, "");
    return `${swarmPath}/agents/${segment(this.#agent(agent))}${rest}`;
  }

  #noteWritten(swarm: string, seq: number): void {
    this.#written.set(swarm, Math.max(this.#written.get(swarm) ?? 0, seq));
  }

  /** A read of one agent's memory, with its query, waiting for this client's writes to the swarm. */
  #agentRead<O extends OperationId>(
    operation: O,
    method: "GET" | "POST",
    rest: string,
    options: AgentTarget & Query,
  ): Promise<AnswerOf<O>> {
    const { swarm, agent, signal, ...query } = options;
    return this.#send<O>({
      operation,
      method,
      path: this.#agentPath(swarm, agent, rest),
      query,
      idempotent: true,
      minSeqSwarm: this.#swarm(swarm),
      signal,
    });
  }

  /** A call about a swarm, with its query. */
  #swarmCall<O extends OperationId>(
    operation: O,
    method: "GET" | "POST",
    rest: string,
    options: SwarmTarget & Query,
    { idempotent = true } = {},
  ): Promise<AnswerOf<O>> {
    const { swarm, signal, ...query } = options;
    return this.#send<O>({ operation, method, path: this.#swarmPath(swarm, rest), query, idempotent, signal });
  }

  #url(path: string, query: Query = {}): string {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      search.set(key, Array.isArray(value) ? value.join(",") : String(value));
    }
    const text = search.toString();
    return `${this.baseUrl}${path}${text ? `?${text}` : ""}`;
  }

  /** The call with `min_seq` added for read-your-writes: in the JSON body where the call has one, else in the query. */
  #prepare(call: Call): { url: string; body: string | undefined } {
    let query = call.query ?? {};
    let body = call.body;
    const seq = this.readYourWrites && call.minSeqSwarm !== undefined ? this.#written.get(call.minSeqSwarm) : undefined;
    if (seq !== undefined) {
      if (body !== null && typeof body === "object" && !Array.isArray(body)) body = { min_seq: seq, ...body };
      else query = { min_seq: seq, ...query };
    }
    return { url: this.#url(call.path, query), body: body === undefined ? undefined : JSON.stringify(body) };
  }

  /** Sends one call, with the retries it allows, and answers the response of the last attempt if it succeeded. */
  async #request(call: Call): Promise<Response> {
    const { url, body } = this.#prepare(call);
    const headers: Record<string, string> = { accept: "application/json", ...this.#headers };
    if (body !== undefined) headers["content-type"] = "application/json";
    for (let attempt = 0; ; attempt += 1) {
      let response: Response | undefined;
      const signals = [AbortSignal.timeout(this.timeoutMs), ...(call.signal ? [call.signal] : [])];
      try {
        response = await this.#fetch(url, { method: call.method, headers, body, signal: AbortSignal.any(signals) });
      } catch (error) {
        if (call.signal?.aborted || !call.idempotent || attempt >= this.retries) throw error;
      }
      if (response !== undefined) {
        const retry = call.idempotent && RETRY_STATUSES.has(response.status) && attempt < this.retries;
        if (!retry) {
          if (response.ok) return response;
          throw MnemeError.fromResponse(response.status, await response.text(), response.headers.get("retry-after"));
        }
        // The refused attempt's body is not needed: free the connection.
        await response.body?.cancel();
      }
      await sleep(waitBefore(attempt, response), call.signal);
    }
  }

  async #send<O extends OperationId>(call: Call & { operation: O }): Promise<AnswerOf<O>> {
    const response = await this.#request(call);
    return (await response.json()) as AnswerOf<O>;
  }

  /** A follow stream (`follow=true`): its server-sent events. Not retried: a stream's reader decides. */
  async *#follow(operation: OperationId, path: string, query: Query, signal: AbortSignal | undefined) {
    const url = this.#url(path, { ...query, follow: true });
    const response = await this.#fetch(url, {
      headers: { accept: "text/event-stream", ...this.#headers },
      signal: signal ?? null,
    });
    if (!response.ok) {
      throw MnemeError.fromResponse(response.status, await response.text(), response.headers.get("retry-after"));
    }
    if (response.body === null)
      throw new MnemeError(response.status, "unexpected_response", `${operation} answered no stream`);
    yield* serverSentEvents(response.body);
  }
}

/** How long to wait before another attempt: the server's `Retry-After` (at most 30 s), else a growing pause. */
function waitBefore(attempt: number, response: Response | undefined): number {
  const after = Number(response?.headers.get("retry-after") ?? Number.NaN);
  if (Number.isFinite(after) && after >= 0) return Math.min(30_000, after * 1000);
  return Math.min(5_000, 200 * 2 ** attempt);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", abort, { once: true });
  });
}
