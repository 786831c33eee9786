/**
 * What the SDK costs over a bare `fetch`, against a running `mneme serve`:
 * publishes in batches of 100 (throughput), then, once all is applied,
 * searches one after another (latency), alternating the two clients in
 * rounds so that a noisy machine weighs on both alike. Prints JSON: each side's figures and the
 * SDK's over the bare one's.
 *
 *     node dist/bench/overhead.js --url http://127.0.0.1:7700 [--swarm demo] [--searches 2000] [--batches 20] [--rounds 5]
 *
 * scripts/bench-sdks.sh starts the server and runs this and the Python twin.
 */

import { parseArgs } from "node:util";

import { Mneme, buildEvent, type Event } from "../src/index.js";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:7700" },
    swarm: { type: "string", default: "demo" },
    searches: { type: "string", default: "2000" },
    batches: { type: "string", default: "20" },
    rounds: { type: "string", default: "5" },
  },
});
const url = values.url;
const swarm = values.swarm;
const rounds = Number(values.rounds);
const searchesPerRound = Math.ceil(Number(values.searches) / rounds);
const batchesPerRound = Math.ceil(Number(values.batches) / rounds);
const agent = `bench-${process.pid}`;
const mneme = new Mneme(url, { swarm, agent });
const QUESTION = "login rate limit 429";

function batch(size: number): Event[] {
  return Array.from({ length: size }, (_, index) =>
    buildEvent(swarm, agent, "tool_result_recorded", {
      tool: "bash",
      args: { cmd: `cargo test login_${index}` },
      output: `test login_${index} ... FAILED: expected 429 after ${index % 7} attempts`,
      exit_code: 101,
    }),
  );
}

async function rawSearch(): Promise<unknown> {
  const query = new URLSearchParams({ q: QUESTION, k: "10" });
  const response = await fetch(`${url}/v1/swarms/${swarm}/agents/${agent}/search?${query}`);
  if (!response.ok) throw new Error(`search: ${response.status}`);
  return response.json();
}

let bareSeq = 0;
async function rawPublish(events: Event[]): Promise<void> {
  const response = await fetch(`${url}/v1/events`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(events),
  });
  if (!response.ok) throw new Error(`publish: ${response.status}`);
  const answer = (await response.json()) as { accepted: { seq: number }[] };
  bareSeq = Math.max(bareSeq, ...answer.accepted.map((accepted) => accepted.seq));
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

type Side = { searchMs: number[]; publishSeconds: number; published: number };
const sides: Record<"bare" | "sdk", Side> = {
  bare: { searchMs: [], publishSeconds: 0, published: 0 },
  sdk: { searchMs: [], publishSeconds: 0, published: 0 },
};

// Publishing first: batches of 100, the two clients in turn.
for (let round = 0; round < rounds; round += 1) {
  for (const name of round % 2 === 0 ? (["bare", "sdk"] as const) : (["sdk", "bare"] as const)) {
    const side = sides[name];
    const batches = Array.from({ length: batchesPerRound }, () => batch(100));
    const start = performance.now();
    for (const events of batches) await (name === "bare" ? rawPublish(events) : mneme.publish(events));
    side.publishSeconds += (performance.now() - start) / 1000;
    side.published += batches.length * 100;
  }
}

// Then searching a memory that no longer changes: everything published is
// applied first (this search waits for it), so the SDK's read-your-writes
// `min_seq` waits for nothing, as in an agent that reads after the apply.
await mneme.search(QUESTION, { min_seq: Math.max(bareSeq, mneme.writtenSeq() ?? 0) });
for (let round = 0; round < rounds; round += 1) {
  for (const name of round % 2 === 0 ? (["bare", "sdk"] as const) : (["sdk", "bare"] as const)) {
    const side = sides[name];
    for (let index = 0; index < searchesPerRound; index += 1) {
      const start = performance.now();
      await (name === "bare" ? rawSearch() : mneme.search(QUESTION, { k: 10 }));
      side.searchMs.push(performance.now() - start);
    }
  }
}

function summary(side: Side) {
  const sorted = [...side.searchMs].sort((a, b) => a - b);
  return {
    searches: sorted.length,
    search_p50_ms: quantile(sorted, 0.5),
    search_p99_ms: quantile(sorted, 0.99),
    publish_events_per_s: side.published / side.publishSeconds,
  };
}
const report = { bare: summary(sides.bare), sdk: summary(sides.sdk) };
console.log(
  JSON.stringify({
    client: "typescript",
    node: process.version,
    ...report,
    sdk_over_bare: {
      search_p50: report.sdk.search_p50_ms / report.bare.search_p50_ms,
      search_p99: report.sdk.search_p99_ms / report.bare.search_p99_ms,
      publish_rate: report.sdk.publish_events_per_s / report.bare.publish_events_per_s,
    },
  }),
);
