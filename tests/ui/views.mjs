// Drives Mneme's web view in headless Chromium (playwright-core from
// ui/node_modules, Chromium from Debian's package): signs in, reads the
// timeline and searches a memory, and fails on any console error. Run by
// tests/ui.rs, which starts `mneme serve` and publishes the example
// trajectory first. Prints one JSON line of what it saw; screenshots go to
// MNEME_UI_SHOTS.
import { createRequire } from "node:module";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(join(process.env.MNEME_UI_DIR, "package.json"));
const { chromium } = require("playwright-core");

const url = process.env.MNEME_UI_URL;
const token = process.env.MNEME_UI_TOKEN;
const shots = process.env.MNEME_UI_SHOTS;
const saw = {};
const consoleErrors = [];

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "mneme-ui-")), {
  executablePath: process.env.MNEME_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1400, height: 900 },
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
try {
  const page = await context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => consoleErrors.push(String(error)));

  // Signing in: a wrong token is refused with a message, the right one opens.
  await page.goto(`${url}/ui`);
  await page.waitForSelector("#login:not([hidden])");
  await page.fill("#token", "not-a-token");
  await page.click("#login-form button");
  await page.waitForFunction(() => document.querySelector("#login-error").textContent.length > 0);
  saw.wrongToken = await page.textContent("#login-error");
  // A token bound to one agent does not open the swarm-wide views.
  await page.fill("#token", process.env.MNEME_UI_AGENT_TOKEN);
  await page.click("#login-form button");
  // The form clears the message before it asks: wait for the new one.
  await page.waitForFunction((before) => {
    const text = document.querySelector("#login-error").textContent;
    return text.length > 0 && text !== before;
  }, saw.wrongToken);
  saw.agentToken = await page.textContent("#login-error");
  // Chromium logs the two refused requests as console errors: they are the
  // test's doing. From here on, any console error is the page's.
  saw.errorsWhileRefused = consoleErrors.splice(0);
  // Named, it opens that agent's memory and nothing swarm-wide.
  await page.fill("#token-agent", "coder");
  await page.click("#login-form button");
  await page.waitForSelector("#memory:not([hidden])");
  saw.boundAgents = await page.$$eval("#memory-agent option", (options) => options.map((option) => option.value));
  saw.boundTimelineLink = await page.isVisible('nav a[data-view="timeline"]');
  await page.fill("#search-query", "refresh token rotation");
  await page.click("#search-form button");
  await page.waitForSelector("#search-hits li");
  saw.boundHits = await page.locator("#search-hits li .hit-text").count();
  await page.screenshot({ path: join(shots, "agent-token.png"), fullPage: false });
  await page.click("#logout");
  await page.waitForSelector("#login:not([hidden])");
  await page.fill("#token-agent", "");
  await page.fill("#token", token);
  await page.click("#login-form button");

  // The timeline: every event of the log, newest first.
  await page.waitForSelector("#timeline:not([hidden]) #timeline-events tbody tr");
  saw.timelineRows = await page.locator("#timeline-events tbody tr").count();
  saw.kinds = await page.$$eval("#timeline-events tbody td:nth-child(4)", (cells) => [...new Set(cells.map((c) => c.textContent))]);
  const seqs = await page.$$eval("#timeline-events tbody tr", (rows) => rows.map((row) => Number(row.dataset.seq)));
  check(seqs.every((seq, index) => index === 0 || seq < seqs[index - 1]), "the timeline is newest first");
  saw.summary = await page.textContent("#timeline-summary");
  await page.screenshot({ path: join(shots, "timeline.png"), fullPage: false });
  await page.selectOption("#filter-agent", "coder");
  await page.selectOption("#filter-kind", "decision_made");
  saw.coderDecisions = await page.$$eval("#timeline-events tbody tr", (rows) =>
    rows.map((row) => [row.children[2].textContent, row.children[3].textContent, row.children[5].textContent]),
  );
  await page.screenshot({ path: join(shots, "timeline-filtered.png"), fullPage: false });

  // An agent's memory: a search, with what found each hit.
  await page.click('nav a[data-view="memory"]');
  await page.waitForSelector("#memory:not([hidden])");
  await page.selectOption("#memory-agent", "coder");
  await page.waitForFunction(() => document.querySelector("#item-states").textContent.startsWith("coder's items"));
  saw.itemStates = await page.textContent("#item-states");
  saw.coreTask = await page.textContent("#core-task");
  await page.fill("#search-query", "how should refresh tokens rotate");
  await page.click("#search-form button");
  await page.waitForSelector("#search-hits li");
  saw.hits = await page.$$eval("#search-hits li", (items) =>
    items.map((item) => ({
      text: item.querySelector(".hit-text")?.textContent ?? item.textContent,
      explain: item.querySelector(".explain")?.textContent ?? "",
    })),
  );
  await page.screenshot({ path: join(shots, "memory-search.png"), fullPage: false });

  // Provenance: the first hit's events, in log order, each as its JSON.
  saw.firstHit = await page.getAttribute("#search-hits li:first-child", "data-item-id");
  await page.click("#search-hits li:first-child button.provenance");
  await page.waitForSelector("#provenance:not([hidden]) #provenance-events li pre");
  saw.provenance = await page.$$eval("#provenance-events li", (items) =>
    items.map((item) => ({ seq: Number(item.dataset.seq), json: JSON.parse(item.querySelector("pre").textContent) })),
  );
  await page.screenshot({ path: join(shots, "provenance.png"), fullPage: false });
  saw.consoleErrors = consoleErrors;
  console.log(JSON.stringify(saw));
} finally {
  await context.close();
}
