// The live view in a real browser (Debian's headless Chromium driven by playwright-core): load
// the page, send a prompt, see streamed text arrive and the KV block grid change.
//   node live_view_browser.mjs BASE_URL [SCREENSHOT.png]
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(new URL("../../peers/package.json", import.meta.url));
const { chromium } = require("playwright-core");
const [base, screenshot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox"] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  await page.goto(base + "/");
  await page.waitForFunction(() => document.getElementById("model").textContent.includes("context"));
  // The feed draws the pool: every block, none owned yet.
  await page.waitForFunction(() => document.querySelectorAll("#grid .blk").length > 0);
  const owned = () => page.$$eval("#grid .blk", (d) => d.filter((x) => x.dataset.owner !== "").length);
  assert.equal(await owned(), 0);
  await page.fill("#max", "48");
  await page.click("#send");
  // Streamed text arrives while the request runs, and its blocks show up in the grid.
  await page.waitForFunction(() => document.getElementById("output").textContent.length > 0,
                             null, { timeout: 30_000 });
  await page.waitForFunction(() => [...document.querySelectorAll("#grid .blk")]
                               .some((d) => d.dataset.owner !== ""), null, { timeout: 30_000 });
  const partial = await page.textContent("#output");
  if (screenshot) await page.screenshot({ path: screenshot });
  await page.waitForFunction(() => document.getElementById("status").textContent.includes("done"),
                             null, { timeout: 60_000 });
  const full = await page.textContent("#output");
  assert.ok(full.length >= partial.length && full.startsWith(partial));
  // Finished: its blocks were freed (ref 0), the grid shows no owner again.
  await page.waitForFunction(() => [...document.querySelectorAll("#grid .blk")]
                               .every((d) => d.dataset.owner === ""), null, { timeout: 10_000 });
  console.log(`live view: streamed ${full.length} characters, the grid showed the request's ` +
              `blocks and freed them`);
  console.log("live view: 1 passed, 0 failed");
} finally {
  await browser.close();
}
