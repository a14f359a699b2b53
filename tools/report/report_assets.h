// The page of `ow report` (tools/cmd_report.cpp): HTML skeleton, CSS and the one script that
// draws everything from the embedded JSON blob (<script type="application/json" id="ow-data">).
// No network: no CDN, no fonts, no external files.
#pragma once
#include <string>

namespace ow::cli {

inline const char* kReportCss = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
header { padding: 10px 16px; background: #2b3a4a; color: #fff; }
header h1 { font-size: 18px; margin: 0 0 4px; }
header .sub { font-size: 12px; opacity: .85; }
nav#passbar { position: sticky; top: 0; z-index: 2; display: flex; gap: 6px; align-items: center; flex-wrap: wrap;
  padding: 8px 16px; background: #e8edf2; border-bottom: 1px solid #c8d0d8; }
nav button { font: inherit; padding: 3px 10px; border: 1px solid #8796a5; border-radius: 4px; background: #fff; cursor: pointer; }
nav button.current { background: #2b3a4a; color: #fff; }
nav button.bad { border-color: #c0392b; color: #c0392b; }
#pass-name { font-weight: bold; font-size: 16px; min-width: 90px; }
#pass-hint { font-size: 12px; color: #556; }
main { display: flex; gap: 12px; padding: 12px 16px; align-items: flex-start; }
#graph-pane { flex: 3; min-width: 0; }
#side { flex: 2; min-width: 280px; max-width: 560px; }
#graph { overflow: auto; max-height: 75vh; border: 1px solid #ccd; background: #fff; }
#graph.pannable { overflow: hidden; height: 75vh; position: relative; cursor: grab; touch-action: none; user-select: none; }
#graph.pannable.dragging { cursor: grabbing; }
#graph svg { position: absolute; left: 0; top: 0; transform-origin: 0 0; }
#zoombar { display: flex; gap: 6px; align-items: center; margin: 4px 0; font-size: 12px; }
#zoombar button { font: inherit; padding: 0 8px; border: 1px solid #8796a5; border-radius: 4px; background: #fff; cursor: pointer; }
#zoom-level { min-width: 42px; text-align: center; font-family: monospace; }
#node-values label { font-size: 12px; }
#colours { display: flex; flex-wrap: wrap; gap: 4px 10px; margin: 4px 0; font-size: 11px; color: #556; }
#colours span::before { content: ""; display: inline-block; width: 10px; height: 10px; margin-right: 3px; border: 1px solid #888;
  border-radius: 2px; background: var(--c); vertical-align: -1px; }
#graph g.node { cursor: pointer; }
#graph g.node.selected polygon, #graph g.node.selected path { stroke: #d62728; stroke-width: 3px; }
#graph g.node.rewritten polygon, #graph g.node.rewritten path, #graph g.node.rewritten ellipse { stroke: #ff7f0e; stroke-width: 5px; }
#stepbar { display: flex; gap: 6px; align-items: flex-start; margin: 4px 0; }
#stepbar button { font: inherit; padding: 1px 8px; border: 1px solid #8796a5; border-radius: 4px; background: #fff; cursor: pointer; }
#stepbar button:disabled { opacity: .4; cursor: default; }
#step-text { flex: 1; margin: 0; white-space: pre-wrap; }
.verdict { padding: 4px 8px; border-radius: 4px; margin: 6px 0; white-space: pre-wrap; font-family: monospace; font-size: 12px; }
.verdict.ok { background: #e3f4e1; } .verdict.bad { background: #fbe3e0; }
pre { background: #fff; border: 1px solid #dde; padding: 6px 8px; overflow: auto; font-size: 12px; margin: 4px 0; }
h2 { font-size: 16px; margin: 18px 0 6px; } h3 { font-size: 14px; margin: 10px 0 4px; }
section { padding: 0 16px 12px; }
.rule { margin: 4px 0; } .rule b { font-family: monospace; } .rule .count { color: #667; }
.rule pre { margin: 2px 0 2px 12px; white-space: pre-wrap; }
.note { color: #8a5a00; font-style: italic; }
.series { margin-bottom: 14px; }
.frames { display: flex; flex-wrap: wrap; gap: 6px; }
.frame { display: inline-flex; flex-direction: column; align-items: center; font: 10px monospace; }
.frame canvas { border: 1px solid #99a; image-rendering: pixelated; }
.kernel summary { cursor: pointer; font-family: monospace; }
.badge { display: inline-block; padding: 0 6px; border-radius: 3px; font-size: 11px; margin-left: 6px; }
.badge.ok { background: #cdeccb; } .badge.bad { background: #f5c6c0; }
.legend { font-size: 11px; color: #556; }
)CSS";

inline const char* kReportJs = R"JS(
"use strict";
const data = JSON.parse(document.getElementById("ow-data").textContent);
const $ = (id) => document.getElementById(id);
let current = 0;  // the pass shown
let step = -1;    // -1: the graph after the pass; k >= 0: its k-th rewrite, on the graph it received
let shown = 0;    // the stage whose graph is drawn (the previous one while stepping)
let pickedBinding = null;  // the range binding last chosen ("m1=2"), kept while clicking other nodes

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

// ---- passes: navigation bar, graph, verdict, rules fired ----
function buildPassBar() {
  const bar = $("pass-buttons");
  data.stages.forEach((s, i) => {
    const b = el("button", { "data-index": i, title: s.what }, `${i}. ${s.name}`);
    if (!s.ok) b.classList.add("bad");
    b.addEventListener("click", () => showStage(i));
    bar.append(b);
  });
  $("prev").addEventListener("click", () => showStage(current - 1));
  $("next").addEventListener("click", () => showStage(current + 1));
  $("step-prev").addEventListener("click", () => showStep(step - 1));
  $("step-next").addEventListener("click", () => showStep(step + 1));
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "SELECT") return;  // the arrows choose a range binding there
    if (e.key === "ArrowLeft") showStage(current - 1);
    else if (e.key === "ArrowRight") showStage(current + 1);
    else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      showStep(step + (e.key === "ArrowDown" ? 1 : -1));
    }
  });
}

function showStage(i) {
  if (i < 0 || i >= data.stages.length) return;
  current = i;
  const s = data.stages[i];
  $("pass-name").textContent = s.name;
  $("pass-index").textContent = `(${i + 1} of ${data.stages.length})`;
  $("pass-what").textContent = `${s.what} — ${s.nodes} nodes`;
  const v = $("verdict");
  v.textContent = i === 0 ? s.verdict : "interpreter: " + s.verdict;
  v.className = "verdict " + (s.ok ? "ok" : "bad");
  document.querySelectorAll("#pass-buttons button").forEach((b, k) => b.classList.toggle("current", k === i));
  step = -1;
  showGraph(i, null);
  showFirings(s, i);
  showStepBar();
  showNode(null);
}

// Rewrite k of the current pass (-1: back to the pass's result). Rules rewrite the graph the pass
// received, so that graph is drawn with the rewritten node outlined.
function showStep(k) {
  const s = data.stages[current];
  if (current === 0 || k < -1 || k >= s.steps.length) return;
  step = k;
  showGraph(k < 0 ? current : current - 1, k < 0 ? null : s.steps[k].node);
  showStepBar();
  showNode(null);
}

function showStepBar() {
  const s = data.stages[current], t = $("step-text");
  $("step-prev").disabled = step < 0;
  $("step-next").disabled = current === 0 || step + 1 >= s.steps.length;
  if (current === 0) t.textContent = "the input graph: no pass has rewritten it yet";
  else if (step < 0) t.textContent = s.totalSteps ? `the graph after this pass; down arrow: its ${s.totalSteps} rewrite(s) one by one` : "no rule fired in this pass";
  else {
    const r = s.steps[step];
    const where = r.node >= 0 ? `%${r.node} is outlined in the graph this pass received` : "a node an earlier rewrite of this pass made (not in the graph it received)";
    const cut = step + 1 === s.steps.length && s.totalSteps > s.steps.length ? `\n(the first ${s.steps.length} of ${s.totalSteps} rewrites are shown)` : "";
    t.textContent = `rewrite ${step + 1} of ${s.totalSteps}: ${r.rule}\n${r.before}\n  -> ${r.after}\n${where}${cut}`;
  }
}

function showGraph(i, outline) {
  shown = i;
  const s = data.stages[i], g = $("graph");
  g.innerHTML = s.svg;
  g.classList.toggle("pannable", !!s.svg);
  if (!s.svg) g.append(el("p", { class: "note" }, s.note || "no drawing"), el("pre", {}, s.lines.join("\n")));
  startView(g.querySelector("svg"));
  g.querySelectorAll("g.node").forEach((n) => {
    if (outline !== null && Number(n.querySelector("title").textContent) === outline) {
      n.classList.add("rewritten");
      centerOn(n);
    }
    n.addEventListener("click", () => {
      if (view.dragged) return;  // the end of a drag, not a click
      g.querySelectorAll("g.node.selected").forEach((x) => x.classList.remove("selected"));
      n.classList.add("selected");
      showNode(Number(n.querySelector("title").textContent));
    });
  });
}

// The clicked node's line and its value: one per range binding, chosen in a selector.
function showNode(n) {
  const s = data.stages[shown], box = $("node-values");
  $("node-line").textContent = n === null ? "click a node in the graph" : (s.lines[n] || `node ${n}`);
  box.replaceChildren();
  if (n === null) return;
  const rec = s.values[String(n)];
  if (!rec || !rec.bindings.length) {
    box.append(el("p", { class: "note" }, "no value recorded: the interpreter did not evaluate this node while checking this stage"));
    return;
  }
  const pre = el("pre", { id: "node-value" });
  if (rec.bindings.length > 1 || rec.bindings[0][0] !== "") {
    const select = el("select", { id: "binding" });
    rec.bindings.forEach(([key], i) => select.append(el("option", { value: String(i) }, key || "(no range binding)")));
    select.value = String(Math.max(0, rec.bindings.findIndex(([key]) => key === pickedBinding)));
    const show = () => {
      const [key, text] = rec.bindings[Number(select.value)];
      pickedBinding = key;
      pre.textContent = text;
    };
    select.addEventListener("change", show);
    box.append(el("label", {}, `value for the range binding (${rec.bindings.length}): `, select));
    show();
  } else pre.textContent = rec.bindings[0][1];
  box.append(pre);
  if (rec.more)
    box.append(el("p", { class: "note" }, `capped: ${rec.more} later evaluation(s) are not recorded (the report keeps the first ${data.maxBindings} range bindings of a node and ${data.maxValueChars / 1e6} MB of printed values per stage)`));
}

// ---- pan and zoom of the drawing: wheel zooms at the pointer, drag pans, keys + - 0 1 ----
const view = { svg: null, w: 0, h: 0, scale: 1, x: 0, y: 0, drag: null, dragged: false };

function applyView() {
  if (!view.svg) return;
  view.svg.style.transform = `translate(${view.x}px, ${view.y}px) scale(${view.scale})`;
  $("zoom-level").textContent = `${Math.round(view.scale * 100)}%`;
}

function zoomAt(factor, cx, cy) {
  const s = Math.min(8, Math.max(0.02, view.scale * factor));
  view.x = cx - ((cx - view.x) * s) / view.scale;
  view.y = cy - ((cy - view.y) * s) / view.scale;
  view.scale = s;
  applyView();
}

function zoomCentre(factor) {
  const g = $("graph");
  zoomAt(factor, g.clientWidth / 2, g.clientHeight / 2);
}

// Scale s with the graph centred across and its top (the outputs: edges point up) in view.
function place(s) {
  const g = $("graph");
  view.scale = s;
  view.x = (g.clientWidth - view.w * s) / 2;
  view.y = view.h * s <= g.clientHeight ? (g.clientHeight - view.h * s) / 2 : 0;
  applyView();
}

const fitScale = () => Math.min(1, $("graph").clientWidth / view.w, $("graph").clientHeight / view.h);

// A new drawing starts whole when that keeps labels readable (60% or more), else at 60% with
// the graph's root (printed last, drawn on top) at the top centre.
function startView(svg) {
  view.svg = svg;
  $("zoombar").style.visibility = svg ? "visible" : "hidden";
  if (!svg) return;
  view.w = svg.width.baseVal.value;
  view.h = svg.height.baseVal.value;
  const fit = fitScale();
  place(Math.max(fit, 0.6));
  const titles = [...svg.querySelectorAll("g.node > title")];
  const root = titles.reduce((a, t) => (a === null || Number(t.textContent) > Number(a.textContent) ? t : a), null);
  if (fit >= 0.6 || !root) return;
  const g = $("graph").getBoundingClientRect(), r = root.parentNode.getBoundingClientRect();
  view.x += g.left + g.width / 2 - (r.left + r.width / 2);
  view.y += g.top + 16 - r.top;
  applyView();
}

function centerOn(node) {
  const g = $("graph").getBoundingClientRect(), r = node.getBoundingClientRect();
  view.x += g.left + g.width / 2 - (r.left + r.width / 2);
  view.y += g.top + g.height / 2 - (r.top + r.height / 2);
  applyView();
}

function buildPanZoom() {
  for (const [what, colour] of data.legend) $("colours").append(el("span", { style: `--c: ${colour}` }, what));
  const g = $("graph");
  // The browser may scroll the clipped box itself (find in page, focus): make that a pan instead.
  g.addEventListener("scroll", () => {
    if (!view.svg) return;
    view.x -= g.scrollLeft;
    view.y -= g.scrollTop;
    g.scrollTo(0, 0);
    applyView();
  });
  g.addEventListener("wheel", (e) => {
    if (!view.svg) return;
    e.preventDefault();
    const r = g.getBoundingClientRect();
    zoomAt(Math.exp(-e.deltaY * 0.002), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  g.addEventListener("pointerdown", (e) => {
    if (!view.svg || e.button !== 0) return;
    view.drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y };
    view.dragged = false;
  });
  window.addEventListener("pointermove", (e) => {
    if (!view.drag) return;
    const dx = e.clientX - view.drag.x, dy = e.clientY - view.drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) view.dragged = true;
    if (!view.dragged) return;
    g.classList.add("dragging");
    view.x = view.drag.vx + dx;
    view.y = view.drag.vy + dy;
    applyView();
  });
  window.addEventListener("pointerup", () => {
    view.drag = null;
    g.classList.remove("dragging");
  });
  document.addEventListener("keydown", (e) => {
    if (!view.svg || e.target.tagName === "SELECT" || e.ctrlKey || e.metaKey) return;
    if (e.key === "+" || e.key === "=") zoomCentre(1.25);
    else if (e.key === "-" || e.key === "_") zoomCentre(0.8);
    else if (e.key === "0") place(fitScale());
    else if (e.key === "1") place(1);
  });
  $("zoom-in").addEventListener("click", () => zoomCentre(1.25));
  $("zoom-out").addEventListener("click", () => zoomCentre(0.8));
  $("zoom-fit").addEventListener("click", () => place(fitScale()));
  $("zoom-100").addEventListener("click", () => place(1));
}

function showFirings(s, i) {
  const f = $("firings");
  f.replaceChildren();
  if (i === 0) { f.append(el("p", {}, "the input graph: no pass has run yet")); return; }
  if (!s.firings.length) { f.append(el("p", { class: "note" }, "no rule fired on this graph: the pass leaves it as it is")); return; }
  for (const r of s.firings) {
    const d = el("div", { class: "rule" }, el("b", {}, r.rule), el("span", { class: "count" }, ` ×${r.count}`));
    for (const [before, after] of r.examples) d.append(el("pre", {}, `${before}\n  -> ${after}`));
    if (r.count > r.examples.length) d.append(el("span", { class: "count" }, `… and ${r.count - r.examples.length} more`));
    f.append(d);
  }
}

// ---- host loops: each written buffer after every iteration, as heat maps ----
function colour(t) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const x = Math.min(Math.max(t, 0), 1) * (stops.length - 1), k = Math.min(Math.floor(x), stops.length - 2), f = x - k;
  const c = stops[k].map((a, j) => Math.round(a + (stops[k + 1][j] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function drawFrame(canvas, series, cells, lo, hi) {
  const px = Math.max(2, Math.floor(160 / Math.max(series.cellRows, series.cellCols)));
  canvas.width = series.cellCols * px;
  canvas.height = series.cellRows * px;
  const ctx = canvas.getContext("2d");
  cells.forEach((v, i) => {
    ctx.fillStyle = v === null ? "#e4e4e4" : colour(hi > lo ? (v - lo) / (hi - lo) : 0.5);
    ctx.fillRect((i % series.cellCols) * px, Math.floor(i / series.cellCols) * px, px, px);
  });
}

function buildTimeline() {
  const t = $("timeline");
  if (!data.timeline.length) { t.append(el("p", { class: "note" }, "no kernel writes a named buffer inside a host loop (no OUTER range, or only temporaries)")); return; }
  for (const s of data.timeline) {
    let lo = Infinity, hi = -Infinity;
    for (const f of s.frames) for (const v of f.cells) if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    if (lo > hi) { lo = 0; hi = 1; }
    const box = el("div", { class: "series", "data-buffer": s.buffer });
    box.append(el("h3", {}, `${s.buffer} (${s.rows} x ${s.cols}, shown as ${s.cellRows} x ${s.cellCols} cells) — ${s.launches} launch(es), ${s.frames.length} shown`),
      el("div", { class: "legend" }, `colour: ${lo.toPrecision(4)} (dark) to ${hi.toPrecision(4)} (yellow); grey: not yet written`));
    const frames = el("div", { class: "frames" });
    for (const f of s.frames) {
      const c = el("canvas", { title: f.label });
      drawFrame(c, s, f.cells, lo, hi);
      frames.append(el("div", { class: "frame", "data-label": f.label }, c, el("span", {}, f.label)));
    }
    box.append(frames);
    t.append(box);
  }
}

// ---- the lowered program: host schedule, C per kernel with its check verdict ----
function buildProgram() {
  $("host").textContent = data.host;
  $("check").textContent = `${data.run}; check (interpreter vs tcc, kernel by kernel): ${data.check}`;
  const k = $("kernels");
  for (const kern of data.kernels) {
    const badge = el("span", { class: "badge " + (kern.ok ? "ok" : "bad") }, kern.ok ? "check OK" : "check FAILED");
    k.append(el("details", { class: "kernel", open: "" }, el("summary", {}, kern.name, badge, el("span", { class: "legend" }, " " + kern.check)), el("pre", {}, kern.source)));
  }
  k.append(el("details", { class: "kernel" }, el("summary", {}, "prelude shared by all kernels"), el("pre", {}, data.prelude)));
}

// A pass that changed nothing shares the drawing and values of the stage it left as it was.
for (const s of data.stages)
  if (s.sameAs >= 0) Object.assign(s, { svg: data.stages[s.sameAs].svg, note: data.stages[s.sameAs].note, values: data.stages[s.sameAs].values });
$("subtitle").textContent = `${data.stages.length - 1} lowering passes, ${data.kernels.length} kernel(s); report built in ${data.seconds.toFixed(2)} s` +
  (data.random_inputs ? `; ${data.random_inputs}` : "");
buildPassBar();
buildPanZoom();
buildTimeline();
buildProgram();
showStage(0);
)JS";

inline std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// The whole page; `json` must not contain "</" (tools/cmd_report.cpp escapes '<').
inline std::string report_page(const std::string& title, const std::string& json) {
  std::string t = html_escape(title);
  return std::string("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ow report: ") + t + "</title>\n<style>" + kReportCss +
         "</style></head>\n<body>\n<header><h1>ow report: " + t + "</h1><div class=\"sub\" id=\"subtitle\"></div></header>\n" +
         R"HTML(<nav id="passbar"><button id="prev" title="previous pass (left arrow)">&larr;</button><span id="pass-name"></span><span id="pass-index"></span><button id="next" title="next pass (right arrow)">&rarr;</button><span id="pass-buttons"></span><span id="pass-hint">&larr; / &rarr; keys move between passes, &uarr; / &darr; between the rewrites of a pass</span></nav>
<main><section id="graph-pane"><div id="pass-what"></div><div id="verdict" class="verdict"></div><div id="stepbar"><button id="step-prev" title="previous rewrite (up arrow)">&uarr;</button><button id="step-next" title="next rewrite (down arrow)">&darr;</button><pre id="step-text"></pre></div><div id="zoombar"><button id="zoom-out" title="zoom out (- key)">&minus;</button><span id="zoom-level">100%</span><button id="zoom-in" title="zoom in (+ key)">+</button><button id="zoom-fit" title="the whole graph (0 key)">fit</button><button id="zoom-100" title="actual size (1 key)">100%</button><span class="legend">wheel: zoom at the pointer &middot; drag: pan &middot; keys + &minus; 0 1</span></div><div id="colours" title="fill colours of the boxes; constants and index arithmetic are written into their users' labels, a dashed edge from each range they read"></div><div id="graph"></div></section>
<aside id="side"><h3>Node</h3><pre id="node-line"></pre><div id="node-values"></div><h3>Rules fired in this pass</h3><div id="firings"></div></aside></main>
<section><h2>Host loops: buffers after each iteration</h2><div id="timeline"></div></section>
<section><h2>Host schedule</h2><pre id="host"></pre><p id="check"></p><h2>Kernels (generated C)</h2><div id="kernels"></div></section>
<script type="application/json" id="ow-data">)HTML" +
         json + "</script>\n<script>" + kReportJs + "</script>\n</body></html>\n";
}

}  // namespace ow::cli
