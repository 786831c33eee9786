// The web view of a server holding two swarms (`design` and `dev`), in
// headless Chromium. With tokens (MNEME_UI_MODE=tokens): a `dev` token
// opens `dev` although the page first names `design`, no picker is shown,
// a `design` path stays refused to it even when the tab asks for `design`,
// and a `design` token then opens `design`. Without tokens (open): the
// header's picker offers both swarms and each shows its own memory. Run by
// tests/ui.rs; prints one JSON line of what it saw.
import { join } from "node:path";

import { openPage } from "./browser.mjs";

const url = process.env.MNEME_UI_URL;
const mode = process.env.MNEME_UI_MODE;
const saw = {};
const consoleErrors = [];

/** Signs in (a token, or none on an open server) and waits for the memory
 *  view of the swarm the page then shows. */
async function signIn(page, token) {
  await page.goto(`${url}/ui#/memory`);
  if (token !== null) {
    await page.waitForSelector("#login:not([hidden])");
    await page.fill("#token", token);
    await page.click("#login-form button");
  }
  await page.waitForSelector("#nav:not([hidden])");
  await page.evaluate(() => (location.hash = "#/memory"));
  await page.waitForSelector("#memory:not([hidden])");
}

/** The texts of the hits of a search of the coder's memory in the swarm shown. */
async function search(page, words) {
  await page.selectOption("#agent", "coder");
  await page.fill("#search-query", words);
  // The last search's hits go first, so that the wait below sees this one's.
  await page.evaluate(() => document.querySelector("#search-hits").replaceChildren());
  await page.click("#search-form button");
  await page.waitForFunction(() => {
    const hits = document.querySelector("#search-hits");
    return hits && hits.children.length > 0;
  });
  return page.$$eval("#search-hits li.item .text", (nodes) => nodes.map((node) => node.textContent));
}

const shown = (page) => page.textContent("#swarm-name");
const offered = (page) => page.$$eval("#swarm option", (options) => options.map((option) => option.value));

const { context, page } = await openPage(consoleErrors);
try {
  if (mode === "tokens") {
    await signIn(page, process.env.MNEME_UI_DEV_TOKEN);
    saw.devShown = await shown(page);
    saw.devOffered = await offered(page);
    saw.devPickerVisible = await page.isVisible("#swarm-picker");
    saw.devHits = await search(page, "narwhal");
    // The tab asks for design: the page goes back to what the token opens,
    // and the API refuses design's routes to the token.
    await page.evaluate(() => sessionStorage.setItem("mneme-swarm", "design"));
    await page.reload();
    await page.waitForSelector("#nav:not([hidden])");
    saw.devAfterAskingForDesign = await shown(page);
    saw.designStatusForDev = await page.evaluate(async () => {
      const token = sessionStorage.getItem("mneme-token");
      const answer = await fetch("/v1/swarms/design/agents/coder/search?q=zanzibar", {
        headers: { Authorization: `Bearer ${token}` },
      });
      return answer.status;
    });
    // Chromium logs the refusal the test asked for.
    consoleErrors.splice(0, consoleErrors.length, ...consoleErrors.filter((text) => !text.includes("status of 403")));
    await page.click("#logout");
    await page.waitForSelector("#login:not([hidden])");
    await signIn(page, process.env.MNEME_UI_DESIGN_TOKEN);
    saw.designShown = await shown(page);
    saw.designHits = await search(page, "zanzibar");
  } else {
    await signIn(page, null);
    saw.firstShown = await shown(page);
    saw.offered = await offered(page);
    saw.pickerVisible = await page.isVisible("#swarm-picker");
    saw.firstHits = await search(page, "zanzibar");
    await page.selectOption("#swarm", "dev");
    await page.waitForFunction(() => document.querySelector("#swarm-name").textContent === "dev");
    await page.waitForSelector("#memory:not([hidden])");
    saw.switchedShown = await shown(page);
    saw.switchedHits = await search(page, "narwhal");
    saw.switchedZanzibar = await search(page, "zanzibar");
    await page.screenshot({ path: join(process.env.MNEME_UI_SHOTS, "swarm-picker.png"), fullPage: false });
  }
  saw.consoleErrors = consoleErrors;
  console.log(JSON.stringify(saw));
} finally {
  await context.close();
}
