// Headless Chromium for the web view's tests (playwright-core from
// ui/node_modules, Chromium from Debian's package): a fresh profile, one
// page, and the console errors and page errors it logs, which the tests
// fail on.
import { createRequire } from "node:module";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(join(process.env.MNEME_UI_DIR, "package.json"));
const { chromium } = require("playwright-core");

/** The browser's context (close it when done) and its page; the errors the
 *  page logs go into `consoleErrors` as they come. */
export async function openPage(consoleErrors) {
  const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "mneme-ui-")), {
    executablePath: process.env.MNEME_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const page = await context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => consoleErrors.push(String(error)));
  return { context, page };
}
