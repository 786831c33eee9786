/**
 * Names for the generated contract (`schema.ts`, from `schemas/openapi.json`
 * by openapi-typescript): nothing here is a wire type of its own, only a
 * way to reach one.
 */

import type { components, operations } from "./schema.js";

export type { components, operations, paths } from "./schema.js";

/** Every schema of the contract by name: `Schemas["SearchAnswer"]`, `Schemas["HandoffDelivery"]`, … */
export type Schemas = components["schemas"];

/** One event as publishers send it and the API shows it; narrowing on `kind` types `data`. */
export type Event = Schemas["Event"];

/** Every kind of event: `"message_recorded"`, `"tool_result_recorded"`, … */
export type EventKind = Event["kind"];

/** The payload an event of kind `K` carries, e.g. `EventData<"tool_result_recorded">`. */
export type EventData<K extends EventKind> = Extract<Event, { kind: K }>["data"];

/** The fields of an event besides its kind and payload: who, when, which task, who sees it. */
export type Envelope = Omit<Schemas["Event"], "kind" | "data">;

/** The operations of the API by `operationId` (`Search`, `AppendEvents`, …). */
export type OperationId = keyof operations;

/** The query parameters of an operation. */
export type QueryOf<O extends OperationId> = operations[O]["parameters"] extends { query?: infer Q }
  ? NonNullable<Q>
  : never;

/** The JSON body of an operation. */
export type BodyOf<O extends OperationId> = operations[O] extends {
  requestBody: { content: { "application/json": infer B } };
}
  ? B
  : never;

/** What an operation answers when it succeeds (its 200 or 202 JSON). */
export type AnswerOf<O extends OperationId> = operations[O]["responses"] extends {
  200: { content: { "application/json": infer A } };
}
  ? A
  : operations[O]["responses"] extends { 202: { content: { "application/json": infer A } } }
    ? A
    : never;
