/**
 * A reviewer agent in TypeScript: it receives its handoff from Mneme, asks
 * its memory for context, notes what it will check, and acknowledges the
 * handoff, over the HTTP API with the TypeScript SDK (clients/typescript,
 * `mneme-client`).
 *
 * Whoever sent the handoff (examples/python/orchestrator.py publishes one
 * to `reviewer` over JetStream) wrote no HTTP of its own: Mneme delivers a
 * package with the sender's summary and a context bundle from its memory.
 *
 *     (cd ../../clients/typescript && npm ci && npm run build) && npm install
 *     node reviewer.ts --url http://127.0.0.1:7700 [--swarm demo] [--agent reviewer] [--wait 30]
 *
 * Waits up to --wait seconds for a pending handoff; exits 1 if none came.
 */

import { parseArgs } from "node:util";

import { Mneme } from "mneme-client";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: "http://127.0.0.1:7700" },
    swarm: { type: "string", default: "demo" },
    agent: { type: "string", default: "reviewer" },
    wait: { type: "string", default: "30" },
  },
});

const mneme = new Mneme(values.url, { swarm: values.swarm, agent: values.agent });

// The pending handoffs come first, then each new one as it is delivered.
const deliveries = mneme.followHandoffs({ signal: AbortSignal.timeout(Number(values.wait) * 1000) });
let handoff;
try {
  handoff = (await deliveries.next()).value;
} catch (error) {
  if (!(error instanceof Error && error.name === "TimeoutError")) throw error;
}
await deliveries.return();
if (!handoff?.package) {
  console.error(`no handoff for ${values.agent} within ${values.wait} s`);
  process.exit(1);
}

const { package: work } = handoff;
console.log(`handoff ${handoff.handoff_id} from ${handoff.from}: ${work.task}`);
console.log(`summary: ${work.summary}`);
for (const constraint of work.constraints ?? []) console.log(`constraints: ${constraint}`);

// What this reviewer's own memory holds about the task, within a budget.
const context = await mneme.context(work.summary, { budget: 800, signals: { current_file: work.artifacts?.[0] } });
console.log(`context: ${context.tokens} tokens, ${context.items.length} items`);

await mneme.writeNote(`review of ${work.task}: check ${(work.artifacts ?? []).join(", ") || "the change"}`, {
  tags: ["review"],
  task: work.task,
});
await mneme.acknowledge(handoff.handoff_id, { note: "reviewing now" });
const pending = (await mneme.handoffs()).handoffs.filter((entry) => entry.status === "pending");
console.log(`pending handoffs left: ${pending.length}`);
