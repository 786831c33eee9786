/**
 * The AI SDK recorder, driven by the AI SDK's own mock model through a
 * real tool-calling loop (no network, no LLM): what lands on the log, and
 * that search then finds it.
 */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ToolLoopAgent, generateText, isStepCount, simulateReadableStream, streamText, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";

import { Mneme, eventOf, type Event } from "../src/index.js";
import { AiSdkRecorder } from "../src/ai.js";
import { newAgent, recordingFetch, swarm, url } from "./support.js";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** The model's first step: two tools called at once. */
const TOOL_CALLS = [
  { type: "tool-call", toolCallId: "call-1", toolName: "run_tests", input: JSON.stringify({ path: "tests/login" }) },
  { type: "tool-call", toolCallId: "call-2", toolName: "read_file", input: JSON.stringify({ path: "src/gone.rs" }) },
] as const;

/** A model that calls two tools at once, then answers. */
function scriptedModel() {
  return new MockLanguageModelV4({
    doGenerate: [
      {
        content: [...TOOL_CALLS],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage,
        warnings: [],
      },
      {
        content: [{ type: "text", text: "The login test fails: the limiter answers 200 where 429 is expected." }],
        finishReason: { unified: "stop", raw: undefined },
        usage,
        warnings: [],
      },
    ],
  });
}

/** The same model, streaming: the two tool calls, then the answer in two pieces. */
function streamingModel() {
  const finish = (unified: "tool-calls" | "stop") => ({
    type: "finish" as const,
    finishReason: { unified, raw: undefined },
    usage,
  });
  return new MockLanguageModelV4({
    doStream: [
      {
        stream: simulateReadableStream({
          chunks: [...TOOL_CALLS, finish("tool-calls")],
        }),
      },
      {
        stream: simulateReadableStream({
          chunks: [
            { type: "text-start", id: "answer" },
            { type: "text-delta", id: "answer", delta: "The login test fails: the limiter answers 200 " },
            { type: "text-delta", id: "answer", delta: "where 429 is expected." },
            { type: "text-end", id: "answer" },
            finish("stop"),
          ],
        }),
      },
    ],
  });
}

const tools = {
  run_tests: tool({
    description: "Runs a test file",
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => `1 failed: ${path}::too_many_attempts_are_refused (expected 429, got 200)`,
  }),
  read_file: tool({
    description: "Reads a file",
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }): Promise<string> => {
      throw new Error(`no such file: ${path}`);
    },
  }),
};

/** One generateText tool loop, recorded, and its publishes waited for. */
async function askWhyTheTestFails(recorder: AiSdkRecorder) {
  const result = await generateText({
    model: scriptedModel(),
    tools,
    stopWhen: isStepCount(5),
    prompt: "Why does the login test fail?",
    ...recorder.callbacks(),
  });
  await recorder.flush();
  return result;
}

/** The agent's events on the log, in log order. */
async function logged(mneme: Mneme, agent: string): Promise<Event[]> {
  const page = await mneme.events({ agent, limit: 100 });
  return page.events.map(eventOf).filter((event): event is Event => event !== undefined);
}

function checkRun(events: Event[]): void {
  assert.deepEqual(
    events.map((event) => event.kind),
    ["message_recorded", "tool_result_recorded", "tool_result_recorded", "message_recorded"],
  );
  const [question, first, second, answer] = events as [Event, Event, Event, Event];
  assert.ok(question.kind === "message_recorded" && question.data.role === "user");
  assert.match(question.data.text, /login test/);
  assert.ok(answer.kind === "message_recorded" && answer.data.role === "assistant");
  assert.match(answer.data.text, /429 is expected/);
  const results = [first, second].map((event) => {
    assert.ok(event.kind === "tool_result_recorded");
    return event.data;
  });
  const run = results.find((data) => data.tool === "run_tests");
  const read = results.find((data) => data.tool === "read_file");
  assert.deepEqual(run?.args, { path: "tests/login" });
  assert.equal(run?.exit_code, 0);
  assert.match(run?.output ?? "", /too_many_attempts_are_refused/);
  assert.equal(read?.exit_code, 1);
  assert.equal(read?.output, "no such file: src/gone.rs");
  for (const data of results) assert.ok(typeof data.duration_ms === "number" && data.duration_ms >= 0);
  // One run, one correlation id.
  assert.equal(new Set(events.map((event) => event.correlation_id)).size, 1);
  assert.match(events[0]!.correlation_id ?? "", /^run-/);
}

describe("the AI SDK recorder", { timeout: 60_000 }, () => {
  test("records a generateText tool loop, and search finds it", async () => {
    const agent = newAgent();
    const mneme = new Mneme(url, { swarm, agent, fetch: recordingFetch });
    const recorder = new AiSdkRecorder(mneme, { scope: "private" });
    const result = await askWhyTheTestFails(recorder);
    assert.equal(recorder.failures, 0, String(recorder.lastError));
    assert.match(result.text, /429/);

    checkRun(await logged(mneme, agent));
    // The recorder published through this client: the search waits for it.
    const { hits } = await mneme.search("too many attempts refused", { k: 3 });
    assert.equal(hits[0]?.kind, "tool_result_recorded");
    assert.match(hits[0]!.text, /too_many_attempts_are_refused/);
  });

  test("records a ToolLoopAgent's run under the agent and task given", async () => {
    const agent = newAgent();
    const mneme = new Mneme(url, { swarm, fetch: recordingFetch });
    const recorder = new AiSdkRecorder(mneme, { agent, correlationId: "task-login-429" });
    const reviewer = new ToolLoopAgent({
      model: scriptedModel(),
      tools,
      stopWhen: isStepCount(5),
      ...recorder.callbacks(),
    });
    await reviewer.generate({ prompt: "Why does the login test fail?" });
    await recorder.flush();
    assert.equal(recorder.failures, 0, String(recorder.lastError));
    const events = await mneme.events({ agent, limit: 100 }).then((page) => page.events.map(eventOf));
    assert.equal(events.length, 4);
    assert.ok(events.every((event) => event?.correlation_id === "task-login-429"));
  });

  test("records a streamText run alike", async () => {
    const agent = newAgent();
    const mneme = new Mneme(url, { swarm, agent, fetch: recordingFetch });
    const recorder = new AiSdkRecorder(mneme);
    const result = streamText({
      model: streamingModel(),
      tools,
      stopWhen: isStepCount(5),
      prompt: "Why does the login test fail?",
      ...recorder.callbacks(),
    });
    assert.match(await result.text, /429 is expected/);
    await recorder.flush();
    assert.equal(recorder.failures, 0, String(recorder.lastError));
    checkRun(await logged(mneme, agent));
  });

  test("a publish that fails is counted and does not stop the run", async () => {
    const agent = newAgent();
    const refusing: typeof fetch = async () =>
      new Response(JSON.stringify({ error: { status: 400, code: "invalid_event", message: "refused" } }), {
        status: 400,
        headers: { "content-type": "application/json" },
      });
    const seen: unknown[] = [];
    const mneme = new Mneme(url, { swarm, agent, fetch: refusing });
    const recorder = new AiSdkRecorder(mneme, { onError: (error) => seen.push(error) });
    const result = await askWhyTheTestFails(recorder);
    assert.match(result.text, /429/);
    assert.equal(recorder.failures, 4);
    assert.equal(seen.length, 4);
  });
});
