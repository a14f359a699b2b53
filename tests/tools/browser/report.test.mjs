// ow report in a real browser: generate the report of scan_with_assign with its bundled inputs,
// open it in headless Chromium (the system's, through playwright-core) and check what a reader
// sees; then the report of the largest reference case, every drawing present.
// Usage: node report.test.mjs OW_BINARY SOURCE_DIR WORK_DIR (tests/tools/browser/run.sh).
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, readdirSync, statSync } from "node:fs";
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

const scanInputs = ["--in", `vec=${join(expected, "in_vec.npy")}`, "--in", `mats=${join(expected, "in_mats.npy")}`];
execFileSync(ow, ["report", join(src, "reference/cases/scan_with_assign.uop"), "-o", html, ...scanInputs], { stdio: "inherit" });

// A float32 .npy file's elements (format version 1, little-endian, C order).
function readNpy(path) {
  const b = readFileSync(path), headerLen = b.readUInt16LE(8);
  const body = b.subarray(10 + headerLen);
  return Array.from(new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length)));
}

// The numbers of a value as the report prints it (its first line is the header).
const numbersOf = (text) => text.split("\n").slice(1).join(" ").match(/-?\d+(\.\d*)?(e[-+]?\d+)?/g).map(Number);

// Budgets: whatever one cuts is named on stderr with the flag that raises it.
function reportStderr(...extra) {
  const r = spawnSync(ow, ["report", join(src, "reference/cases/scan_with_assign.uop"), "-o", join(work, "budget.html"), ...scanInputs, ...extra], { encoding: "utf8" });
  return { rc: r.status, out: r.stdout, err: r.stderr };
}
{
  const none = reportStderr();
  check("no budget cuts the small report: stderr is quiet", none.rc === 0 && none.err === "", none.err);
  const late = reportStderr("--layout-budget-ms", "0");
  check("a layout budget of 0 ms: every drawing named as cut, with the flag",
    late.rc === 0 && /cut \d+ drawing\(s\)/.test(late.err) && late.err.includes("the drawing of input (layouts ran past 0 ms)") &&
    late.err.includes("--layout-budget-ms") && / \(0 drawn\)/.test(late.out), late.err + late.out);
  const small = reportStderr("--max-layout-nodes", "5");
  check("--max-layout-nodes 5: drawings over 5 boxes named as cut",
    small.rc === 0 && /the drawing of input \(\d+ boxes, more than 5\)/.test(small.err) && small.err.includes("--max-layout-nodes"), small.err);
  const evals = reportStderr("--validation-budget", "10");
  check("--validation-budget 10: the cut validations named, with the flag",
    evals.rc === 0 && /the validation of pass \w+ \(more than 10 node evaluations\)/.test(evals.err) && evals.err.includes("--validation-budget EVALS"), evals.err);
}

const node = (page, n) => page.locator(`#graph g.node:has(> title:text-is("${n}"))`);
const centre = async (locator) => {
  const r = await locator.boundingBox();
  return { x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width };
};
const near = (a, b, tol = 1.5) => Math.abs(a - b) <= tol;

// Keys + - 0 1, the wheel (zooming at the pointer: the point under it stays put) and dragging.
async function checkPanZoom(page) {
  // The whole box on screen, clear of the sticky pass bar (earlier clicks may have scrolled the page).
  await page.evaluate(() => document.getElementById("graph").scrollIntoView({ block: "end" }));
  await page.keyboard.press("1");
  check("key 1: actual size", (await page.textContent("#zoom-level")) === "100%");
  // A node in the middle of the visible drawing, so every move below stays on screen.
  const g = await page.locator("#graph").boundingBox();
  const titles = await page.locator("#graph g.node title").allTextContents();
  let n = null, best = Infinity;
  for (const t of titles) {
    const c = await centre(node(page, t)), d = Math.hypot(c.x - (g.x + g.width / 2), c.y - (g.y + g.height / 2));
    if (d < best) [n, best] = [node(page, t), d];
  }
  const before = await centre(n);
  await page.keyboard.press("+");
  const zoomed = await centre(n);
  check("key +: 125%, the nodes drawn 1.25 times as large",
    (await page.textContent("#zoom-level")) === "125%" && near(zoomed.w, before.w * 1.25), `${before.w} -> ${zoomed.w}`);
  await page.keyboard.press("-");
  check("key -: back to 100%", (await page.textContent("#zoom-level")) === "100%" && near((await centre(n)).w, before.w));

  const at = { x: g.x + g.width / 3, y: g.y + g.height / 3 };
  await page.mouse.move(at.x, at.y);
  const a = await centre(n);
  await page.mouse.wheel(0, -200);
  await page.waitForFunction(() => document.getElementById("zoom-level").textContent !== "100%");
  const f = parseInt(await page.textContent("#zoom-level")) / 100, b = await centre(n);
  check("the wheel zooms in at the pointer: the point under it stays",
    f > 1.2 && near(b.x, at.x + (a.x - at.x) * f, 2) && near(b.y, at.y + (a.y - at.y) * f, 2), `x${f}: ${a.x},${a.y} -> ${b.x},${b.y}`);

  const selected = await page.textContent("#node-line");
  await page.mouse.move(b.x, b.y);
  await page.mouse.down();
  await page.mouse.move(b.x + 40, b.y + 20, { steps: 4 });
  await page.mouse.move(b.x + 80, b.y + 50, { steps: 4 });
  await page.mouse.up();
  const c = await centre(n);
  check("dragging pans the drawing by the distance dragged", near(c.x, b.x + 80) && near(c.y, b.y + 50), `${b.x},${b.y} -> ${c.x},${c.y}`);
  check("a drag that ends on a node does not select it", (await page.textContent("#node-line")) === selected);

  await page.keyboard.press("0");
  const svg = await page.locator("#graph svg").boundingBox();
  check("key 0: the whole graph in view", svg.x >= g.x - 1 && svg.y >= g.y - 1 && svg.x + svg.width <= g.x + g.width + 1 && svg.y + svg.height <= g.y + g.height + 1,
    JSON.stringify({ svg, g }));
}

// The input graph's values per binding of the scan's range m1. %9 is vec as (1, 10), outside the
// range; %16 = WHERE(m1 == 0, %9, the previous row of out): vec at m1=0, an earlier result later.
async function checkBindings(page) {
  while ((await page.textContent("#pass-name")) !== "input") await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("0");
  const outerColour = await page.locator("#colours span", { hasText: "OUTER range" }).evaluate((e) => e.style.getPropertyValue("--c").trim());
  const rangeFill = await node(page, 5).locator("path, polygon").first().getAttribute("fill");
  check("the legend's OUTER colour is the fill of the OUTER range m1 (%5)", outerColour.length > 0 && rangeFill === outerColour, `${outerColour} vs ${rangeFill}`);
  await node(page, 9).click();
  const vecText = await page.textContent("#node-value");
  const vec = readNpy(join(expected, "in_vec.npy")), shown = numbersOf(vecText);
  check("%9 (no range): vec's values, no binding selector",
    (await page.locator("#binding").count()) === 0 && shown.length === vec.length && shown.every((x, i) => Math.abs(x - vec[i]) <= 1e-4 * Math.max(1, Math.abs(vec[i]))),
    vecText);
  await node(page, 16).click();
  const options = await page.locator("#binding option").allTextContents();
  check("%16: one value per binding of m1", options.join(",") === "m1=0,m1=1,m1=2", options.join(","));
  await page.selectOption("#binding", { label: "m1=0" });
  const at0 = await page.textContent("#node-value");
  check("%16 at m1=0 is vec", at0 === vecText, at0);
  await page.selectOption("#binding", { label: "m1=2" });
  const at2 = await page.textContent("#node-value");
  check("%16 at m1=2 is another value of the same shape", at2 !== at0 && at2.split("\n")[0] === "float32 (1, 10)", at2);
  await node(page, 15).click();
  check("the chosen binding stays when another node is clicked", (await page.locator("#binding").inputValue()) !== "" &&
    (await page.locator("#binding option:checked").textContent()) === "m1=2");
  await node(page, 16).click();
  check("and shows the same value again", (await page.textContent("#node-value")) === at2);

  // After rangeify, %28 loads one element of mats per binding of m1 and two inner ranges:
  // 3 x 10 x 10 = 300 evaluations, of which the report keeps the first 64 and says so.
  while ((await page.textContent("#pass-name")) !== "rangeify") await page.keyboard.press("ArrowRight");
  await page.keyboard.press("0");
  await node(page, 28).click();
  const keys = await page.locator("#binding option").allTextContents();
  const capped = (await page.locator("#node-values .note").allTextContents()).join(" ");
  check("a capped node: 64 bindings to pick from, the 236 left out said",
    (await page.textContent("#node-line")).startsWith("%28 = INDEX") && keys.length === 64 && /^m1=0 \d+=0 \d+=0$/.test(keys[0]) &&
    capped.includes("capped: 236 later evaluation(s) are not recorded"), `${keys.length} ${keys[0]} / ${capped}`);
}

// The largest reference case: its report has a drawing for every stage, and a validation the
// budget cut is named on stderr.
async function checkLargestCase(browser) {
  const dir = join(src, "reference/cases");
  const largest = readdirSync(dir).filter((f) => f.endsWith(".uop")).map((f) => join(dir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0];
  const out = join(work, "largest.html");
  const r = spawnSync(ow, ["report", largest, "-o", out, "--random-inputs"], { encoding: "utf8" });
  check(`ow report of the largest case (${largest}) succeeds`, r.status === 0, r.stderr);
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto("file://" + out);
  await page.waitForSelector("#graph svg");
  const stages = await page.locator("#pass-buttons button").count();
  const missing = [], cut = [];
  for (let i = 0; i < stages; i++) {
    await page.locator("#pass-buttons button").nth(i).click();
    const name = await page.textContent("#pass-name");
    if ((await page.locator("#graph svg g.node").count()) === 0) missing.push(name);
    if ((await page.textContent("#verdict")).includes("not validated in the report")) cut.push(name);
  }
  check(`every one of the ${stages} stages is drawn`, stages >= 9 && missing.length === 0 && r.stdout.includes(`${stages} stages (${stages} drawn)`), missing.join(", ") + r.stdout);
  check("each validation the budget cut is named on stderr with its flag",
    cut.every((name) => r.stderr.includes(`the validation of pass ${name} (`)) && (cut.length === 0 || r.stderr.includes("--validation-budget")), `${cut} / ${r.stderr}`);
  await page.close();
}

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

  await checkPanZoom(page);
  await checkBindings(page);

  const labels = await page.locator('.series[data-buffer="out"] .frame').evaluateAll((fs) => fs.map((f) => f.dataset.label));
  const m1 = labels.filter((l) => /\bm1=\d+/.test(l));
  check("heat maps of 'out' after >= 3 iterations of m1", m1.length >= 3, labels.join(", "));
  check("every kernel passed check", (await page.locator(".badge.bad").count()) === 0 && (await page.locator(".badge.ok").count()) > 0);

  await page.screenshot({ path: screenshot, fullPage: true });
  const size = statSync(screenshot).size;
  check("the screenshot is not trivial", size > 10000, `${screenshot}, ${size} bytes`);
  check("no console or page errors", errors.length === 0, errors.join("; "));
  await checkLargestCase(browser);
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
