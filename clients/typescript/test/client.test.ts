/**
 * Every operation of the API against a real server: typed answers checked
 * against the contract, errors mapped, retries, read-your-writes, and both
 * follow streams received live.
 */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import {
  BadRequest,
  Conflict,
  EventBuilder,
  Mneme,
  MnemeError,
  NotFound,
  Unavailable,
  buildEvent,
  eventOf,
  newId,
  type Event,
  type OperationId,
} from "../src/index.js";
import { assertSchema, called, newAgent, openapi, recordingFetch, swarm, url, within } from "./support.js";

/** A small piece of work: a task, a phase, a decision, a failing test run, a fact, and a handoff from `planner` to `agent`. */
function work(agent: string, planner: string): Event[] {
  const task = "task-rate-limit";
  const me = new EventBuilder(swarm, agent, { scope: "private", correlation_id: task });
  const lead = new EventBuilder(swarm, planner, { scope: "private", correlation_id: task });
  return [
    lead.build("task_updated", { task_id: task, status: "in_progress", title: "Rate-limit the login endpoint" }),
    me.build("phase_started", { phase: "implement", goal: "count login attempts per client" }),
    me.build(
      "decision_made",
      { title: "where to count attempts", choice: "a token bucket in redis", rationale: "three replicas" },
      { importance: 0.8 },
    ),
    me.build("tool_result_recorded", {
      tool: "bash",
      args: { cmd: "cargo test --test login", path: "src/api/login.rs" },
      output: "test too_many_attempts_are_refused ... FAILED\nassertion failed: status == 429",
      exit_code: 101,
      duration_ms: 1200,
    }),
    me.build("fact_asserted", { subject: "file:src/api/login.rs", predicate: "depends_on", object: "redis" }),
    me.build("phase_completed", { phase: "implement", outcome: "the bucket is in place and the tests pass" }),
    lead.build("handoff_sent", {
      to: agent,
      task,
      summary: "please review the login rate limit",
      artifacts: ["src/api/login.rs"],
    }),
  ];
}

function client(agent: string, options: ConstructorParameters<typeof Mneme>[1] = {}): Mneme {
  return new Mneme(url, { swarm, agent, fetch: recordingFetch, ...options });
}

describe("the client against a real server", { timeout: 120_000 }, () => {
  test("every operation answers its type", async () => {
    const agent = newAgent();
    const planner = `${agent}-lead`;
    const mneme = client(agent);

    assert.ok(["ok", "degraded"].includes((await mneme.health()).status));
    assert.ok((await mneme.swarms()).swarms.some((entry) => entry.swarm === swarm));
    const document = await mneme.openapi();
    const packageJson = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    assert.equal((document.info as { version: string }).version, packageJson.version, "the SDK's version is the API's");
    assert.match(await mneme.metrics(), /mneme_/);

    const events = work(agent, planner);
    const accepted = await mneme.publish(events);
    assert.deepEqual(
      accepted.accepted.map((entry) => entry.id),
      events.map((event) => event.id),
    );
    assert.ok(accepted.accepted.every((entry) => !entry.duplicate));
    assert.equal(mneme.writtenSeq(), Math.max(...accepted.accepted.map((entry) => entry.seq)));
    const again = await mneme.publish(events[3]!);
    assert.ok(again.accepted[0]!.duplicate);
    assert.equal(again.accepted[0]!.seq, accepted.accepted[3]!.seq);

    // Read-your-writes: the search waits for the publish without being told.
    const { hits } = await mneme.search("too many attempts refused", { k: 5 });
    assert.equal(hits[0]?.kind, "tool_result_recorded");
    assert.match(hits[0]!.text, /429/);
    const toolItem = hits[0]!.item_id;
    assert.ok((await mneme.agents()).agents.includes(agent));

    const context = await mneme.context("rate limit login", {
      budget: 600,
      signals: { current_file: "src/api/login.rs" },
    });
    assert.ok(context.tokens <= 600 && context.text.length > 0);
    const contextGet = await mneme.contextGet({ q: "rate limit", budget: 400 });
    assert.ok(contextGet.tokens <= 400);

    const graph = await mneme.graph("file:src/api/login.rs", { hops: 1 });
    assert.ok(graph.nodes.some((node) => node.id === "file:src/api/login.rs"));

    const listed = await mneme.items({ limit: 50 });
    assert.ok(listed.items.some((entry) => entry.item_id === toolItem));
    const item = await mneme.item(toolItem);
    assert.equal(item.kind, "tool_result_recorded");
    assert.ok(item.provenance.length > 0);
    const provenance = await mneme.provenance(toolItem);
    assert.equal(eventOf(provenance.events[0]!)?.id, events[3]!.id);
    const holders = await mneme.swarmProvenance(toolItem);
    assert.ok(holders.holders.includes(agent));

    const phases = await mneme.phases();
    assert.ok(phases.phases.length > 0, "the completed phase is listed");
    const phase = await mneme.phase(phases.phases[0]!.phase_id, { level: "full" });
    assert.equal(phase.name, "implement");

    const handoffs = await mneme.handoffs();
    assert.deepEqual(
      handoffs.handoffs.map((entry) => entry.from),
      [planner],
    );
    const stream = mneme.followHandoffs();
    const delivery = (await within(20_000, "the pending handoff", stream.next())).value;
    await stream.return();
    assert.ok(delivery);
    assertSchema("HandoffDelivery", delivery);
    assert.equal(delivery.handoff_id, handoffs.handoffs[0]!.handoff_id);
    assert.equal(delivery.status, "pending");
    const acknowledged = await mneme.acknowledge(delivery.handoff_id, { note: "on it" });
    assert.equal(acknowledged.handoff_id, delivery.handoff_id);
    await assert.rejects(
      mneme.acknowledge(delivery.handoff_id),
      (error) => error instanceof Conflict && error.status === 409,
    );
    assert.equal((await mneme.handoffs()).handoffs[0]!.status, "acknowledged");

    const core = await mneme.updateCore("persona", "reviews rate limits carefully");
    assert.match(JSON.stringify(core.core), /persona/);
    assert.ok((await mneme.core()).blocks.length > 0);
    const note = await mneme.writeNote("login attempts are counted per client IP in redis", { tags: ["design"] });
    assert.ok(note.item_id);
    assert.ok((await mneme.search("counted per client IP")).hits.some((hit) => hit.item_id === note.item_id));

    assert.ok((await mneme.timeline({ limit: 100 })).entries.length > 0);
    const digest = await mneme.digest();
    const replayed = await mneme.replay({ verify: true });
    assert.notEqual(replayed.matches, false);
    assert.equal(replayed.digest, digest.digest);

    const page = await mneme.events({ agent, limit: 100 });
    const logged = new Set(page.events.map(eventOf).map((event) => event?.id));
    for (const event of events.filter((entry) => entry.agent === agent)) assert.ok(logged.has(event.id), event.kind);
    assert.ok(Array.isArray((await mneme.deadLetters()).dead_letters));

    const dry = await mneme.consolidate({ dry_run: true });
    assert.ok(dry.dry_run);
    assert.equal(dry.events_written, 0);
    assert.ok(Array.isArray((await mneme.contradictions({ agent })).open));
    await assert.rejects(
      mneme.resolve("01KG0000000000000000000000", "a_wins"),
      (error) => error instanceof NotFound && error.status === 404 && error.code.length > 0,
    );

    const purged = await mneme.purge({ item_ids: [note.item_id], agent, reason: "a test of erasure" });
    assert.match(JSON.stringify(purged), new RegExp(note.item_id));
    assert.ok(!(await mneme.search("counted per client IP")).hits.some((hit) => hit.item_id === note.item_id));
  });

  test("a handoff sent while the stream is open arrives live, and the log's stream follows it", async () => {
    const agent = newAgent();
    const mneme = client(agent);
    // The agent exists once its first event is applied.
    await mneme.publish(buildEvent(swarm, agent, "message_recorded", { role: "user", text: "review queue" }));
    await mneme.items();
    const controller = new AbortController();
    const stream = mneme.followHandoffs({ signal: controller.signal });
    const first = stream.next();
    await sleep(500);
    const events = work(agent, `${agent}-lead`);
    const accepted = await mneme.publish(events);
    const delivery = (await within(20_000, "the live handoff", first)).value;
    controller.abort();
    assert.ok(delivery);
    assert.equal(delivery.from, `${agent}-lead`);
    assert.ok(delivery.package);

    // The log from the batch's first seq: its events in order (with any
    // another publisher put between them), then the stream is closed.
    const ours = new Set(events.map((event) => event.id));
    const followed: string[] = [];
    for await (const entry of mneme.followEvents({ from_seq: accepted.accepted[0]!.seq })) {
      assertSchema("LogEntry", entry);
      const id = eventOf(entry)?.id;
      if (id !== undefined && ours.has(id)) followed.push(id);
      if (followed.length === events.length) break;
    }
    assert.deepEqual(
      followed,
      events.map((event) => event.id),
    );
  });

  test("errors carry the status, the code and the field", async () => {
    const agent = newAgent();
    const mneme = client(agent);
    await assert.rejects(mneme.search("x", { mode: "telepathy" }), (error) => {
      assert.ok(error instanceof BadRequest && error instanceof MnemeError);
      assert.equal(error.status, 400);
      assert.equal(error.field, "mode");
      assert.ok(error.code.length > 0);
      return true;
    });
    const unknown = {
      ...buildEvent(swarm, agent, "message_recorded", { role: "user", text: "x" }),
      data: { role: "user", text: "x", colour: "red" },
    } as unknown as Event;
    await assert.rejects(mneme.publish(unknown), (error) => {
      assert.ok(error instanceof BadRequest);
      assert.equal(error.code, "unknown_field");
      assert.match(`${error.field} ${error.message}`, /colour/);
      return true;
    });
    await assert.rejects(
      mneme.publish(buildEvent("no spaces allowed", agent, "message_recorded", { role: "user", text: "x" })),
      (error) => error instanceof BadRequest && error.field !== undefined,
    );
    // A query parameter the API does not have is refused by the server, named.
    await assert.rejects(
      mneme.search("x", { kk: 3 } as never),
      (error) =>
        error instanceof BadRequest && error.code === "unknown_field" && /kk/.test(`${error.field} ${error.message}`),
    );
    await assert.rejects(new Mneme(url).search("x"), /no swarm/);
  });

  test("reads wait for the client's own writes", async () => {
    const agent = newAgent();
    const mneme = client(agent);
    for (let round = 0; round < 5; round += 1) {
      const text = `round ${round} of the flaky cache invalidation hunt ${agent}`;
      await mneme.publish(buildEvent(swarm, agent, "message_recorded", { role: "assistant", text }));
      const { hits } = await mneme.search(`round ${round} flaky cache invalidation`, { k: 3 });
      assert.ok(
        hits.some((hit) => hit.text.includes(text)),
        `round ${round}`,
      );
    }
  });

  test("idempotent calls are retried and others are not", async () => {
    const agent = newAgent();
    const flaky = (failures: (number | null)[]) => {
      const state = { seen: 0 };
      const fetchImpl: typeof fetch = async (input, init) => {
        state.seen += 1;
        const failure = failures.shift();
        if (failure === null) throw new TypeError("fetch failed: connection refused");
        if (failure !== undefined) {
          const body = { error: { status: failure, code: "unavailable", message: "try again" } };
          return new Response(JSON.stringify(body), {
            status: failure,
            headers: { "content-type": "application/json", "retry-after": "0" },
          });
        }
        return recordingFetch(input, init);
      };
      return { state, fetchImpl };
    };
    const retried = flaky([null, 503, 429]);
    const event = buildEvent(swarm, agent, "message_recorded", { role: "user", text: "retried publish" });
    const answer = await client(agent, { fetch: retried.fetchImpl }).publish(event);
    assert.ok(answer.accepted[0]!.seq > 0);
    assert.equal(retried.state.seen, 4);

    const refused = flaky([503]);
    await assert.rejects(
      client(agent, { fetch: refused.fetchImpl }).writeNote("not retried"),
      (error) => error instanceof Unavailable && error.status === 503 && error.retryAfter === 0,
    );
    assert.equal(refused.state.seen, 1);

    const exhausted = flaky([503, 503, 503]);
    await assert.rejects(client(agent, { fetch: exhausted.fetchImpl, retries: 2 }).health(), Unavailable);
    assert.equal(exhausted.state.seen, 3);
  });

  test("the answers' checker refuses what is off the contract", () => {
    assert.throws(() => assertSchema("SearchAnswer", { hits: [{ item_id: 3 }] }), /not a valid SearchAnswer/);
    assert.throws(() => assertSchema("HandoffDelivery", {}), /not a valid HandoffDelivery/);
    assert.throws(() => assertSchema("ErrorBody", { error: { status: 400, code: "x", message: "m", colour: 1 } }));
  });

  test("ids made in one millisecond still sort in the order they were made", () => {
    const ids = Array.from({ length: 2000 }, () => newId());
    assert.ok(ids.every((id) => /^[0-9A-HJKMNP-TV-Z]{26}$/.test(id)));
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
  });
});

after(() => {
  const operations = new Set<OperationId>(
    Object.values(openapi.paths).flatMap((methods) => Object.values(methods).map((operation) => operation.operationId)),
  );
  const missing = [...operations].filter((operation) => !called.has(operation));
  assert.deepEqual(missing, [], "every operation of the OpenAPI document was called");
});
