/** The quick starts of the README and of the book's chapter run as written, against the test's server. */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { test } from "node:test";
import { promisify } from "node:util";

import { newAgent, swarm, url } from "./support.js";

const ROOT = new URL("../../../../", import.meta.url);
const QUICK_STARTS = ["README.md", "docs/src/typescript.md"];

function quickStart(path: string): string {
  const text = readFileSync(new URL(path, ROOT), "utf8");
  const blocks = [...text.matchAll(/```ts\n(.*?)```/gs)].map((match) => match[1]!);
  const runnable = blocks.find((block) => block.startsWith('import { Mneme, buildEvent } from "mneme-client";'));
  assert.ok(runnable, `${path} has no quick start`);
  return runnable;
}

for (const path of QUICK_STARTS) {
  test(`the quick start of ${path} runs`, { timeout: 60_000 }, async () => {
    // The test's server, swarm and an agent of its own.
    const agent = newAgent();
    const code = quickStart(path)
      .replaceAll("http://127.0.0.1:7700", url)
      .replaceAll('"demo"', JSON.stringify(swarm))
      .replaceAll('"coder"', JSON.stringify(agent));
    // Inside the package, so that `mneme-client` is the package itself (its
    // `exports`, built in dist/), as it is for a user who installed it.
    const file = new URL(`../quick-start-${agent}.mts`, import.meta.url);
    writeFileSync(file, code);
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [file.pathname], { timeout: 50_000 });
      assert.match(stdout, /1 failed: test_token_refresh/);
    } finally {
      rmSync(file);
    }
  });
}
