// ow report in a real browser: generate the report of scan_with_assign with its bundled inputs,
// open it in headless Chromium (the system's, through playwright-core) and check what a reader
// sees. Usage: node report.test.mjs OW_BINARY SOURCE_DIR WORK_DIR (tests/browser/run.sh).
import { execFileSync } from "node:child_process";
import { statSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [ow, src, work] = process.argv.slice(2);
const expected = join(src, "reference/expected/scan_with_assign");
const html = join(work, "scan_with_assign.html");
const screenshot = join(work, "scan_with_assign.png");

let passed = 0, failed = 0;
function check(what, ok, detail = "") {
  if (ok) passed++; else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail ? ": " + detail : ""}`);
}

execFileSync(ow, ["report", join(src, "reference/cases/scan_with_assign.uop"), "-o", html,
  "--in", `vec=${join(expected, "in_vec.npy")}`, "--in", `mats=${join(expected, "in_mats.npy")}`], { stdio: "inherit" });

const browser = await chromium.launch({
  executablePath: process.env.OW_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push("console: " + m.text()); });
  page.on("pageerror", (e) => errors.push("page error: " + e.message));
  await page.goto("file://" + html);
  await page.waitForSelector("#graph svg");

  check("a graph is drawn as SVG", (await page.locator("#graph svg g.node").count()) > 0);
  const first = await page.textContent("#pass-name");
  await page.keyboard.press("ArrowRight");
  const second = await page.textContent("#pass-name");
  check("ArrowRight moves to the next pass", first !== second && second.length > 0, `${first} -> ${second}`);
  // cleanup (after the input and `gradient`, which has nothing to expand here) rewrites
  // REDUCE_BACKWARD first: ArrowDown walks its rewrites on the graph the pass received, the
  // rewritten node outlined; ArrowUp walks back.
  let previous = first;
  for (let i = 0; i < 3 && !(await page.textContent("#pass-name")).includes("cleanup"); i++) {
    previous = await page.textContent("#pass-name");
    await page.keyboard.press("ArrowRight");
  }
  await page.keyboard.press("ArrowDown");
  const step1 = await page.textContent("#step-text");
  check("ArrowDown shows the pass's first rewrite", /^rewrite 1 of \d+: /.test(step1) && step1.includes("REDUCE_BACKWARD"), step1);
  const outlined = await page.locator("#graph g.node.rewritten title").allTextContents();
  check("the rewritten node is outlined in the graph the pass received", outlined.length === 1 && step1.includes(`%${outlined[0]} is outlined`), outlined.join(","));
  await page.keyboard.press("ArrowDown");
  check("ArrowDown moves to the next rewrite", /^rewrite 2 of /.test(await page.textContent("#step-text")));
  await page.keyboard.press("ArrowUp");
  await page.keyboard.press("ArrowUp");
  check("ArrowUp back to the pass's result", (await page.locator("#graph g.node.rewritten").count()) === 0 && /^the graph after this pass/.test(await page.textContent("#step-text")));
  await page.keyboard.press("ArrowLeft");
  check("ArrowLeft moves back", (await page.textContent("#pass-name")) === previous);

  await page.locator("#graph g.node").first().click();
  const line = await page.textContent("#node-line");
  check("clicking a node shows its .uop line", /^%\d+ = /.test(line), line);

  const labels = await page.locator('.series[data-buffer="out"] .frame').evaluateAll((fs) => fs.map((f) => f.dataset.label));
  const m1 = labels.filter((l) => /\bm1=\d+/.test(l));
  check("heat maps of 'out' after >= 3 iterations of m1", m1.length >= 3, labels.join(", "));
  check("every kernel passed check", (await page.locator(".badge.bad").count()) === 0 && (await page.locator(".badge.ok").count()) > 0);

  await page.screenshot({ path: screenshot, fullPage: true });
  const size = statSync(screenshot).size;
  check("the screenshot is not trivial", size > 10000, `${screenshot}, ${size} bytes`);
  check("no console or page errors", errors.length === 0, errors.join("; "));
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
