/**
 * Every refusal of the server is an `ErrorBody`, thrown here as a
 * `MnemeError` carrying its status, code and field, of a subclass by status.
 */

import type { Schemas } from "./types.js";

/**
 * The server refused or failed a request: `status` (HTTP), `code` (a stable
 * machine-readable name such as `unknown_field`), `field` (the parameter or
 * body field at fault, if one is), `message` (for people) and `retryAfter`
 * (the seconds a 429 or 503 asked the client to wait, if it did).
 */
export class MnemeError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  readonly retryAfter: number | undefined;

  constructor(status: number, code: string, message: string, field?: string | null, retryAfter?: number) {
    super(`${status} ${code}${field ? ` (${field})` : ""}: ${message}`);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.field = field ?? undefined;
    this.retryAfter = retryAfter;
  }

  /**
   * The error a response stands for: its `ErrorBody`, or for a body that is
   * not one (a proxy's page) the status and the body's start, as
   * `unexpected_response`.
   */
  static fromResponse(status: number, body: string, retryAfter?: string | null): MnemeError {
    const wait = seconds(retryAfter);
    const Class = BY_STATUS[status] ?? MnemeError;
    let error: Schemas["ErrorDetail"] | undefined;
    try {
      error = (JSON.parse(body) as Partial<Schemas["ErrorBody"]>).error;
    } catch {
      error = undefined;
    }
    if (!error || typeof error.code !== "string" || typeof error.message !== "string") {
      return new Class(status, "unexpected_response", body.slice(0, 200) || "no body", undefined, wait);
    }
    return new Class(error.status ?? status, error.code, error.message, error.field, wait);
  }
}

/** 400 or 413: the request is wrong (`field` names what); nothing was appended. */
export class BadRequest extends MnemeError {}
/** 401 or 403: no token, or one that does not open this swarm or agent. */
export class Unauthorized extends MnemeError {}
/** 404: an unknown swarm, agent, item, handoff or contradiction. */
export class NotFound extends MnemeError {}
/** 409: already acknowledged, already resolved, an id reused with other content. */
export class Conflict extends MnemeError {}
/** 429: over a quota or a limit of queries in flight; `retryAfter` says when to try again. */
export class TooManyRequests extends MnemeError {}
/** 5xx: the server could not answer now (a replica without the lease, a log that is down). */
export class Unavailable extends MnemeError {}

const BY_STATUS: Record<number, typeof MnemeError> = {
  400: BadRequest,
  401: Unauthorized,
  403: Unauthorized,
  404: NotFound,
  409: Conflict,
  413: BadRequest,
  429: TooManyRequests,
  500: Unavailable,
  502: Unavailable,
  503: Unavailable,
  504: Unavailable,
};

function seconds(value: string | null | undefined): number | undefined {
  if (value === null || value === undefined || value.trim() === "") return undefined;
  const parsed = Number(value);
  return Number.isFinite(parsed) ? Math.max(0, parsed) : undefined;
}
