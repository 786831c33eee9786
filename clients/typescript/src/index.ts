/**
 * The TypeScript client of Mneme, the memory of multi-agent LLM swarms.
 *
 *     import { Mneme, buildEvent } from "mneme-client";
 *
 *     const mneme = new Mneme("http://127.0.0.1:7700", { swarm: "demo", agent: "coder" });
 *     await mneme.publish(buildEvent("demo", "coder", "message_recorded", { role: "user", text: "rate-limit login" }));
 *     const { hits } = await mneme.search("rate limit");
 *
 * Every wire type is generated from the server's OpenAPI document
 * (`schema.ts`); `Schemas["SearchAnswer"]` and the like name them.
 */

export { DEFAULT_URL, Mneme } from "./client.js";
export type { AgentTarget, MnemeOptions, SwarmTarget } from "./client.js";
export { BadRequest, Conflict, MnemeError, NotFound, TooManyRequests, Unauthorized, Unavailable } from "./errors.js";
export { buildEvent, EventBuilder, eventOf, newId } from "./events.js";
export type { EnvelopeOptions } from "./events.js";
export { serverSentEvents } from "./sse.js";
export type { ServerSentEvent } from "./sse.js";
export type {
  AnswerOf,
  BodyOf,
  components,
  Envelope,
  Event,
  EventData,
  EventKind,
  OperationId,
  operations,
  paths,
  QueryOf,
  Schemas,
} from "./types.js";
