/**
 * What the tests share. They run against a real `mneme serve`, which
 * tests/typescript_sdk.rs starts and names here:
 *
 * - MNEME_URL: the server's HTTP address;
 * - MNEME_SWARM: the swarm (agents are admitted by name).
 *
 * Without them every test fails. Nothing is mocked but the retry tests'
 * `fetch`, which stands for a failing network.
 *
 * `recordingFetch` checks every JSON answer the server gives against the
 * OpenAPI document the SDK's types are generated from (with Ajv), and
 * notes which operation each request was, so a test can ask that every
 * operation was called.
 */

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

import type { OperationId } from "../src/index.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: tests/typescript_sdk.rs starts the server and sets it`);
  return value;
}

export const url = required("MNEME_URL");
export const swarm = required("MNEME_SWARM");

/** An agent of its own per test, so that tests do not see each other's private memories. */
export function newAgent(): string {
  return `ts-${randomUUID().slice(0, 10)}`;
}

export const OPENAPI_PATH = new URL("../../../../schemas/openapi.json", import.meta.url);

interface Operation {
  operationId: OperationId;
  responses: Record<string, { content?: Record<string, unknown> }>;
}
type Document = { paths: Record<string, Record<string, Operation>> };

export const openapi = JSON.parse(readFileSync(OPENAPI_PATH, "utf8")) as Document;

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true, logger: false });
ajv.addSchema(openapi as object, "openapi.json");

function pointer(parts: string[]): string {
  return parts.map((part) => part.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");
}

const validators = new Map<string, ValidateFunction>();
function validatorAt(ref: string): ValidateFunction {
  let validate = validators.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: `openapi.json#/${ref}` });
    validators.set(ref, validate);
  }
  return validate;
}

/** Throws unless `value` is valid against the contract's schema `name` (e.g. `HandoffDelivery`). */
export function assertSchema(name: string, value: unknown): void {
  const validate = validatorAt(pointer(["components", "schemas", name]));
  if (!validate(value))
    throw new Error(`not a valid ${name}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 2000)}`);
}

/** Every operation of the document: its method, a pattern of its path, and its responses. */
const routes = Object.entries(openapi.paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, operation]) => ({
    path,
    method: method.toUpperCase(),
    operation,
    pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
  })),
);

/** The operations called through recording fetches, by this process. */
export const called = new Set<OperationId>();

/** `fetch`, checking each JSON answer against the document and noting the operation. */
export const recordingFetch: typeof fetch = async (input, init) => {
  const request = new Request(input, init);
  const route = routes.find(
    (entry) => entry.method === request.method && entry.pattern.test(new URL(request.url).pathname),
  );
  if (!route) throw new Error(`${request.method} ${request.url} is no operation of the OpenAPI document`);
  const response = await fetch(request);
  called.add(route.operation.operationId);
  const type = response.headers.get("content-type") ?? "";
  if (type.startsWith("application/json")) {
    const status = String(response.status);
    const declared = route.operation.responses[status] ? status : "default";
    if (!route.operation.responses[declared]?.content?.["application/json"]) {
      throw new Error(`${route.operation.operationId} answered ${status} with JSON the document does not declare`);
    }
    const where = pointer([
      "paths",
      route.path,
      route.method.toLowerCase(),
      "responses",
      declared,
      "content",
      "application/json",
      "schema",
    ]);
    const validate = validatorAt(where);
    const body: unknown = await response.clone().json();
    if (!validate(body)) {
      throw new Error(
        `${route.operation.operationId} answered ${status} off its schema: ${ajv.errorsText(validate.errors)}`,
      );
    }
  }
  return response;
};

/** The promise, or a failure after `ms` milliseconds saying what did not come. */
export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
