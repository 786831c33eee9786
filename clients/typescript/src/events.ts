/**
 * Events, built from their kind and payload: the id (a ULID) and the time
 * filled in, the payload typed by the kind.
 *
 *     const event = buildEvent("demo", "coder", "tool_result_recorded", { tool: "bash", output: "ok", exit_code: 0 });
 *
 * or, for one agent's events, a builder that remembers the envelope:
 *
 *     const coder = new EventBuilder("demo", "coder", { scope: "shared", correlation_id: "task-42" });
 *     coder.build("message_recorded", { role: "assistant", text: "tests pass" });
 *
 * Every kind of the contract is covered: kinds and payloads are the
 * generated `Event` union's, not listed here.
 */

import type { Envelope, Event, EventData, EventKind, Schemas } from "./types.js";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
let lastId = 0n;

/**
 * A new event id: a ULID (48 bits of milliseconds, 80 random bits) that
 * sorts after every id this process made before it. A later one in the
 * same millisecond is the previous one plus one.
 */
export function newId(): string {
  const random = crypto.getRandomValues(new Uint8Array(10));
  let value = BigInt(Date.now()) << 80n;
  for (const [index, byte] of random.entries()) value |= BigInt(byte) << BigInt(72 - 8 * index);
  if (value >> 80n === lastId >> 80n && value <= lastId) value = lastId + 1n;
  lastId = value;
  let text = "";
  for (let shift = 125n; shift >= 0n; shift -= 5n) text += CROCKFORD[Number((value >> shift) & 31n)];
  return text;
}

/** What an event may say besides its swarm, agent, kind and payload; `ts` may be a `Date`. */
export type EnvelopeOptions = Partial<Omit<Envelope, "swarm" | "agent" | "ts">> & { ts?: Date | string };

/**
 * An event of kind `kind` (its payload typed by the kind), with a new ULID
 * and the current time unless `options` gives them. Fields left undefined
 * are left out. The server checks the rest (names, ranges, unknown fields)
 * and refuses the whole publish with the field at fault.
 */
export function buildEvent<K extends EventKind>(
  swarm: string,
  agent: string,
  kind: K,
  data: EventData<K>,
  options: EnvelopeOptions = {},
): Extract<Event, { kind: K }> {
  const { ts, id, ...rest } = options;
  const event: Record<string, unknown> = {
    id: id ?? newId(),
    swarm,
    agent,
    ts: ts instanceof Date ? ts.toISOString() : (ts ?? new Date().toISOString()),
    kind,
    data,
  };
  for (const [key, value] of Object.entries(rest)) if (value !== undefined && value !== null) event[key] = value;
  return event as Extract<Event, { kind: K }>;
}

/** Builds one agent's events with the same envelope: swarm, agent, and optionally scope and task. */
export class EventBuilder {
  constructor(
    readonly swarm: string,
    readonly agent: string,
    readonly defaults: EnvelopeOptions = {},
  ) {}

  build<K extends EventKind>(kind: K, data: EventData<K>, options: EnvelopeOptions = {}): Extract<Event, { kind: K }> {
    return buildEvent(this.swarm, this.agent, kind, data, { ...this.defaults, ...options });
  }
}

/**
 * The event a log entry of an answer (`events`, `provenance`) holds, with
 * its `seq` and `appended_at` set apart: undefined for a record that is not
 * an event (dead-lettered) or one a purge erased.
 */
export function eventOf(entry: Schemas["LogEntry"] | Schemas["EventEntry"]): Event | undefined {
  if (!("kind" in entry) || !("data" in entry) || typeof entry.kind !== "string") return undefined;
  const { seq: _seq, appended_at: _appendedAt, ...event } = entry as Schemas["EventEntry"];
  return event as unknown as Event;
}
