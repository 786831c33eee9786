/**
 * What the types promise, checked by the compiler (a line marked
 * `@ts-expect-error` that compiles fails the build), and the parts that
 * need no server: server-sent events cut anywhere, error bodies mapped.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  BadRequest,
  Conflict,
  Mneme,
  MnemeError,
  TooManyRequests,
  buildEvent,
  serverSentEvents,
  type Event,
  type EventData,
  type Schemas,
} from "../src/index.js";

describe("the types", () => {
  test("an event's payload is typed by its kind, and narrowing on kind types data", () => {
    const event: Event = buildEvent("demo", "coder", "tool_result_recorded", {
      tool: "bash",
      output: "ok",
      exit_code: 0,
    });
    if (event.kind === "tool_result_recorded") {
      const exit: number | null | undefined = event.data.exit_code;
      assert.equal(exit, 0);
    }
    const payload: EventData<"decision_made"> = { title: "t", choice: "c" };
    assert.equal(payload.choice, "c");

    // @ts-expect-error: a message has no exit code.
    buildEvent("demo", "coder", "message_recorded", { role: "user", text: "x", exit_code: 1 });
    // @ts-expect-error: a tool result needs its tool.
    buildEvent("demo", "coder", "tool_result_recorded", { output: "ok" });
    // @ts-expect-error: no such kind.
    buildEvent("demo", "coder", "message_sent", { text: "x" });
  });

  test("calls take the contract's parameters and answer its types", () => {
    const mneme = new Mneme("http://127.0.0.1:1", { swarm: "demo", agent: "coder", retries: 0 });
    const typed = async () => {
      const answer: Schemas["SearchAnswer"] = await mneme.search("x", { k: 5, mode: "bm25" });
      const first: string | undefined = answer.hits[0]?.item_id;
      // @ts-expect-error: search has no `kk`.
      await mneme.search("x", { kk: 5 });
      // @ts-expect-error: `k` is a number.
      await mneme.search("x", { k: "5" });
      // @ts-expect-error: a purge body has no `items`.
      await mneme.purge({ items: ["i"] });
      return first;
    };
    assert.equal(typeof typed, "function");
  });
});

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

describe("server-sent events", () => {
  test("are read whole wherever the chunks are cut", async () => {
    const text =
      ': keep-alive\n\nevent: handoff\r\nid: 1\r\ndata: {"a":1}\r\n\r\nevent: handoff\nid: 2\ndata: {"b":\ndata: 2}\n\ndata: é\n\n';
    const bytes = new TextEncoder().encode(text);
    const expected = [
      { event: "handoff", id: "1", data: '{"a":1}' },
      { event: "handoff", id: "2", data: '{"b":\n2}' },
      { event: "message", id: "2", data: "é" },
    ];
    for (let cut = 1; cut < bytes.length; cut += 1) {
      // Cut between bytes, so a cut may split `é` and `\r\n`.
      const events = [];
      for await (const event of serverSentEvents(streamOf([bytes.slice(0, cut), bytes.slice(cut)]))) events.push(event);
      assert.deepEqual(events, expected, `cut at ${cut}`);
    }
  });
});

describe("requests", () => {
  test("carry the token, the wire's names and read-your-writes' min_seq", async () => {
    const seen: Request[] = [];
    const answers = [{ accepted: [{ id: "01KG0000000000000000000000", seq: 41, duplicate: false }] }, { hits: [] }];
    const recording: typeof fetch = async (input, init) => {
      seen.push(new Request(input, init));
      return new Response(JSON.stringify(answers.shift()), { headers: { "content-type": "application/json" } });
    };
    const mneme = new Mneme("http://mneme.test/", { swarm: "demo", agent: "coder", token: "s3cret", fetch: recording });
    await mneme.publish(buildEvent("demo", "coder", "message_recorded", { role: "user", text: "x" }));
    await mneme.search("rate limit", { k: 5, kind: "decision_made,fact_asserted", explain: true });
    assert.equal(seen.length, 2);
    for (const request of seen) assert.equal(request.headers.get("authorization"), "Bearer s3cret");
    const search = new URL(seen[1]!.url);
    assert.equal(search.pathname, "/v1/swarms/demo/agents/coder/search");
    assert.deepEqual(Object.fromEntries(search.searchParams), {
      min_seq: "41",
      k: "5",
      kind: "decision_made,fact_asserted",
      explain: "true",
      q: "rate limit",
    });
  });
});

describe("errors", () => {
  test("are mapped by status, with the body's code and field", () => {
    const body = (status: number, code: string, field?: string) =>
      JSON.stringify({ error: { status, code, message: "m", field } });
    const bad = MnemeError.fromResponse(400, body(400, "invalid_parameter", "k"));
    assert.ok(bad instanceof BadRequest);
    assert.equal(bad.field, "k");
    assert.equal(bad.message, "400 invalid_parameter (k): m");
    assert.ok(MnemeError.fromResponse(409, body(409, "already_acknowledged")) instanceof Conflict);
    const busy = MnemeError.fromResponse(429, body(429, "too_many_requests"), "2");
    assert.ok(busy instanceof TooManyRequests);
    assert.equal(busy.retryAfter, 2);
    const proxy = MnemeError.fromResponse(502, "<html>bad gateway</html>");
    assert.equal(proxy.code, "unexpected_response");
    assert.match(proxy.message, /bad gateway/);
  });
});
