"""The explainer: one Gradio component that draws every view of a run from its timeline (spotviz.views.timeline)
with a single pass scrubber.

Its value is the timeline text, JSON lines that only grow while a run streams. Gradio sends a growing string as
an "append" edit, so each streamed update carries the new passes only; the browser parses just the new lines
and, at most once per animation frame (and no more often than MIN_PAINT_MS), changes what the new passes change:
a few token slots, a few commit-order cells, two chart points, and the tree of the pass on screen. Nothing is
redrawn whole while streaming, and nothing registers listeners per update (no plotting library: plain SVG).

One timeline: the scrubber counts target passes 1..N (the longer of the two runs); at pass k every view shows
the state after pass k: both token canvases (fixed token slots: a finished run reserves each slot's final
text, so nothing reflows while scrubbing), the commit order (pass k outlined), pass k's draft tree, the
speed-up chart (marked at k) and the acceptance per depth (pass k's depth marked). One colour means one thing
everywhere: blue = the target's own decision, green = a drafted token the pass accepted, grey = rejected or
masked, purple dots = masked slots whose stale prediction is already the final token, dashed = the drafter's
expected next commits.

For tests the root element carries data-state (idle / starting / live / done / stopped / error), data-pass (k,
0 before the first pass), data-npasses, data-playing ("1" while playing), data-session and data-renders (paints
so far).
"""
from __future__ import annotations

import gradio as gr

MIN_PAINT_MS = 120  # paints while streaming are at least this far apart (the page stays responsive)

TEMPLATE = """
<div class="sve" tabindex="-1" data-state="idle" data-pass="0" data-npasses="0" data-playing="0" data-session=""
     data-renders="0">
  <div class="sve-headline"></div>
  <div class="sve-bar">
    <button type="button" class="sve-btn sve-play" title="play / pause (space)">▶ Play</button>
    <button type="button" class="sve-btn sve-prev" title="previous pass (←)">◀</button>
    <button type="button" class="sve-btn sve-next" title="next pass (→)">▶</button>
    <input type="range" class="sve-scrub" min="0" max="0" value="0" step="1" aria-label="target pass">
    <span class="sve-pos">pass 0 / 0</span>
    <label class="sve-speed-l">speed <select class="sve-speed">
      <option value="0.5">½×</option><option value="1" selected>1×</option><option value="2">2×</option>
      <option value="4">4×</option></select></label>
  </div>
  <div class="sve-canvases">
    <div class="sve-run" data-role="main"><div class="sve-head"></div><div class="sve-text"></div>
      <div class="sve-foot"></div></div>
    <div class="sve-run" data-role="base"><div class="sve-head"></div><div class="sve-text"></div>
      <div class="sve-foot"></div></div>
  </div>
  <div class="sve-guide" hidden>
    <b>How to read this</b> <small>(the example plays by itself; ❚❚ pauses it)</small>
    <ol>
      <li><b>Slots fill in pass by pass.</b> Each <i>target pass</i> is one call of the diffusion model; grey slots
        are still masked.</li>
      <li><b><span class="sve-k-target">Blue</span> = the model's own decision</b> (the standard decoder has only
        these). <b><span class="sve-k-draft">Green</span> = tokens the drafter guessed</b> and the same pass
        verified, for free.</li>
      <li><b>The tree</b> is everything one pass checked at once; the green path was accepted. Drag the pass
        slider (or use ← →) and every view follows.</li>
    </ol>
    <button type="button" class="sve-guide-close" title="hide">×</button>
  </div>
  <div class="sve-key">
    <span><i class="sve-sw sve-sw-target"></i>the model's own decision</span>
    <span><i class="sve-sw sve-sw-draft"></i>drafted, accepted</span>
    <span><i class="sve-sw sve-sw-mask"></i>masked</span>
    <span><i class="sve-sw sve-sw-now"></i>committed in this pass</span>
    <span><i class="sve-sw sve-sw-expect"></i>drafter expects next</span>
    <span><i class="sve-sw sve-sw-stale"></i>stale prediction already right</span>
  </div>
  <div class="sve-views">
    <div class="sve-panel sve-tree-panel">
      <div class="sve-cap sve-tree-cap">Draft tree</div>
      <div class="sve-tree-box"><svg class="sve-tree" xmlns="http://www.w3.org/2000/svg"></svg></div>
    </div>
    <div class="sve-side">
      <div class="sve-panel"><div class="sve-cap">Why it works — acceptance per depth</div>
        <svg class="sve-depth" viewBox="0 0 300 110" preserveAspectRatio="xMinYMin meet"></svg>
        <div class="sve-why"></div></div>
      <div class="sve-panel"><div class="sve-cap">Speed-up — slots committed after each target pass</div>
        <svg class="sve-speed-chart" viewBox="0 0 300 170" preserveAspectRatio="xMinYMin meet"></svg></div>
      <div class="sve-panel"><div class="sve-cap">Commit order — when each slot was committed</div>
        <svg class="sve-order" viewBox="0 0 300 150" preserveAspectRatio="xMinYMin meet"></svg></div>
    </div>
  </div>
  <details class="sve-details"><summary>All counters, in plain words</summary><div class="sve-table"></div>
  </details>
</div>
"""

CSS = """
.sve { font-family: var(--font, Inter, Helvetica, Arial, sans-serif); font-size: 13px; outline: none;
  color: var(--body-text-color, #222); }
.sve-status { font-size: 13px; padding: 5px 10px; border-radius: 8px; margin-bottom: 6px; }
.sve-status.sve-ok { background: #eef7ee; color: #1b5e20; }
.sve-status.sve-err { background: #fdecea; color: #8e1b10; }
.sve-status.sve-info { background: #eef3fb; color: #1a3d6d; }
.sve-headline { display: flex; flex-wrap: wrap; gap: 6px 22px; align-items: baseline; margin: 2px 0 6px; }
.sve-headline:empty { display: none; }
.sve-kpi b { font-size: 18px; font-weight: 650; }
.sve-kpi span { color: var(--body-text-color-subdued, #666); margin-left: 4px; }
.sve-kpi .sve-good { color: #1a7f37; }
.sve-kpi .sve-bad { color: #c62828; }
.sve-hint { flex-basis: 100%; color: var(--body-text-color-subdued, #666); font-size: 12px; }
.sve-guide { position: relative; background: #fffbe6; border: 1px solid #f0e2a8; border-radius: 8px;
  padding: 5px 30px 5px 10px; margin: 6px 0; font-size: 12.5px; }
.sve-guide[hidden] { display: none; }
.sve-guide ol { margin: 2px 0 0 0; padding: 0; list-style: none; counter-reset: g; display: grid;
  grid-template-columns: repeat(3, 1fr); gap: 4px 14px; }
.sve-guide li { counter-increment: g; }
.sve-guide li::before { content: counter(g) ". "; font-weight: 700; }
.sve-guide-close { position: absolute; right: 6px; top: 4px; border: 0; background: transparent; font-size: 16px;
  cursor: pointer; color: #777; }
.sve-k-target { color: #2c6fbb; } .sve-k-draft { color: #1a8a4a; }
.sve-bar { display: flex; align-items: center; gap: 6px; margin: 4px 0 6px; flex-wrap: wrap; }
.sve-btn { border: 1px solid var(--border-color-primary, #ccc); border-radius: 6px; padding: 3px 10px;
  background: var(--button-secondary-background-fill, #f3f3f3); color: var(--body-text-color, #222);
  cursor: pointer; font-size: 13px; min-width: 34px; }
.sve-btn:disabled { opacity: 0.4; cursor: default; }
.sve-play { min-width: 78px; }
.sve-scrub { flex: 1 1 160px; min-width: 120px; accent-color: #2c6fbb; }
.sve-pos { min-width: 96px; font-variant-numeric: tabular-nums; color: var(--body-text-color-subdued, #555); }
.sve-speed-l { color: var(--body-text-color-subdued, #555); font-size: 12px; }
.sve-speed { font-size: 12px; padding: 1px 4px; border: 1px solid var(--border-color-primary, #ccc); border-radius: 5px;
  background: var(--block-background-fill, #fff); color: var(--body-text-color, #222); width: auto; }
.sve-canvases { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.sve-canvases.sve-one { grid-template-columns: 1fr; }
.sve-run { border: 1px solid var(--border-color-primary, #ddd); border-radius: 8px; padding: 6px 8px;
  background: var(--block-background-fill, #fff); min-width: 0; }
.sve-run[hidden] { display: none; }
.sve-head { font-size: 12px; color: var(--body-text-color-subdued, #555); margin-bottom: 3px; }
.sve-head b { color: var(--body-text-color, #222); }
.sve-text { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace;
  font-size: 13px; line-height: 1.75; white-space: pre-wrap; overflow-wrap: anywhere; tab-size: 4;
  max-height: 330px; overflow-y: auto; }
.sve-prompt { color: var(--body-text-color-subdued, #777); }
.sve-s { border-radius: 3px; }
.sve-s.m { background: #e6e6e6; color: transparent; }
.sve-s.m.g { color: #b0b0b0; }
.sve-s.t { background: #d6e6f8; color: #0d2f57; }
.sve-s.d { background: #d3f0dc; color: #0b4a24; }
.sve-s.now { box-shadow: inset 0 -3px 0 #222; font-weight: 600; }
.sve-s.x { box-shadow: 0 0 0 1.5px #1a8a4a inset; background-image: repeating-linear-gradient(45deg,
  transparent 0 3px, rgba(26,138,74,.18) 3px 5px); }
.sve-s.st { text-decoration: underline dotted #7b3fa0 3px; text-underline-offset: 3px; }
.sve-s.m.st { background: #ecdff5; }
.sve-s.after { opacity: 0.4; }
.sve-s.hl { outline: 2px solid #e8a400; }
.sve-foot { font-size: 12px; color: var(--body-text-color-subdued, #666); margin-top: 3px; }
.sve-key { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; margin: 5px 0;
  color: var(--body-text-color-subdued, #555); }
.sve-sw { display: inline-block; width: 12px; height: 12px; border-radius: 3px; vertical-align: -2px;
  margin-right: 4px; }
.sve-sw-target { background: #d6e6f8; border: 1px solid #2c6fbb; }
.sve-sw-draft { background: #d3f0dc; border: 1px solid #1a8a4a; }
.sve-sw-mask { background: #e6e6e6; }
.sve-sw-now { background: #fff; box-shadow: inset 0 -3px 0 #222; border: 1px solid #ccc; }
.sve-sw-expect { border: 1.5px solid #1a8a4a; background: repeating-linear-gradient(45deg, transparent 0 3px,
  rgba(26,138,74,.25) 3px 5px); }
.sve-sw-stale { background: #ecdff5; border-bottom: 3px dotted #7b3fa0; }
.sve-views { display: grid; grid-template-columns: minmax(0, 1.35fr) minmax(0, 1fr); gap: 8px; align-items: start; }
.sve-panel { border: 1px solid var(--border-color-primary, #e3e3e3); border-radius: 8px; padding: 5px 8px;
  background: var(--block-background-fill, #fff); margin-bottom: 8px; min-width: 0; }
.sve-cap { font-size: 12.5px; font-weight: 600; margin-bottom: 3px; }
.sve-cap small { font-weight: 400; color: var(--body-text-color-subdued, #666); }
.sve-tree-box { overflow: auto; max-height: 560px; }
.sve-tree { display: block; }
.sve-tree text { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace;
  font-size: 12px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.sve-tree .acc text { fill: #0b4a24; font-weight: 700; }
.sve-tree .rej text { fill: #555; }
.sve-tree .bon text { fill: #1d4f8c; font-weight: 700; }
.sve-tree .note { fill: #666; font-family: var(--font, sans-serif); stroke-width: 0; }
.sve-tree g.nd { cursor: default; }
.sve-tree g.nd:hover text { text-decoration: underline; }
.sve-depth text, .sve-speed-chart text, .sve-order text { font-size: 10px; fill: #555; }
.sve-why { font-size: 12px; color: var(--body-text-color-subdued, #555); }
.sve-details { margin-top: 4px; }
.sve-details summary { cursor: pointer; font-size: 12.5px; }
.sve-table table { border-collapse: collapse; width: 100%; font-size: 12.5px; }
.sve-table th, .sve-table td { padding: 3px 6px; border-bottom: 1px solid var(--border-color-primary, #e3e3e3);
  text-align: right; vertical-align: top; }
.sve-table th:first-child, .sve-table td:first-child { text-align: left; }
.sve-table td small { color: var(--body-text-color-subdued, #777); }
@media (max-width: 760px) {
  .sve-canvases, .sve-views { grid-template-columns: 1fr; }
  .sve-text { max-height: 240px; font-size: 12.5px; }
  .sve-kpi b { font-size: 16px; }
  .sve-guide ol { grid-template-columns: 1fr; }
  .sve-hint { display: none; }
}
"""

JS = r"""
const root = element.querySelector('.sve');
const $ = (s) => root.querySelector(s);
const SVG = 'http://www.w3.org/2000/svg';
const MIN_PAINT_MS = __MIN_PAINT_MS__;
const headEl = $('.sve-headline'), guide = $('.sve-guide');
const playBtn = $('.sve-play'), prevBtn = $('.sve-prev'), nextBtn = $('.sve-next');
const scrub = $('.sve-scrub'), posEl = $('.sve-pos'), speedSel = $('.sve-speed');
const treeSvg = $('.sve-tree'), treeCap = $('.sve-tree-cap'), depthSvg = $('.sve-depth'), whyEl = $('.sve-why');
const speedSvg = $('.sve-speed-chart'), orderSvg = $('.sve-order'), tableEl = $('.sve-table');
const canvasesEl = $('.sve-canvases');

let S = null;          // the session on screen
let consumed = 0;      // characters of the value parsed so far
let head = '';         // the value's first line (a new first line = a new session)
let K = 0;             // timeline position: passes shown (0 = before the first pass)
let follow = true;     // while streaming, K follows the newest pass
let playing = false, playTimer = null, paintQueued = false, lastPaint = 0, paintTimer = null;
let ignoreId = null;   // a stopped session: later lines are ignored

function el(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text != null) e.textContent = text;
  return e;
}
function div(cls, text) { const d = document.createElement('span'); d.className = cls; if (text != null) d.textContent = text; return d; }
function setStatus(text, kind) {   // the app's status line (#sv-status) belongs to Gradio: written only on Stop
  const st = document.querySelector('#sv-status .sv-status');
  if (st) { st.textContent = text; st.className = 'sv-status ' + (kind || 'info'); }
}
function newRun() { return {meta: null, passes: [], cells: new Map(), final: null, end: null, why: [], counters: null,
                            slots: [], shownK: 0, overlay: [], orderRects: [], pts: [0], done: false}; }
function newSession(line) {
  stopPlay();
  S = {id: line.id, source: line.source, play: line.play, runs: {main: newRun(), base: newRun()}, sum: null,
       status: null, state: line.source === 'live' ? 'live' : 'done'};
  K = 0; follow = true;
  root.dataset.session = line.id || '';
  headEl.textContent = '';
  guide.hidden = !(line.source === 'example' && !window.__svGuideClosed);
  for (const role of ['main', 'base']) {
    const box = root.querySelector('.sve-run[data-role=' + role + ']');
    box.querySelector('.sve-head').textContent = ''; box.querySelector('.sve-text').textContent = '';
    box.querySelector('.sve-foot').textContent = ''; box.hidden = true;
  }
  while (orderSvg.firstChild) orderSvg.removeChild(orderSvg.firstChild);
  while (speedSvg.firstChild) speedSvg.removeChild(speedSvg.firstChild);
  while (depthSvg.firstChild) depthSvg.removeChild(depthSvg.firstChild);
  while (treeSvg.firstChild) treeSvg.removeChild(treeSvg.firstChild);
  tableEl.textContent = ''; whyEl.textContent = '';
  S.chart = null; S.order = null;
}

// ------------------------------------------------------------------------------------------- lines in
function ingest(line) {
  if (line.t === 'session') { newSession(line); return; }
  if (!S || (ignoreId !== null && S.id === ignoreId)) return;
  const R = line.r ? S.runs[line.r] : null;
  if (line.t === 'run') {
    R.meta = line.meta; buildCanvas(line.r);
  } else if (line.t === 'pass') {
    line.idx = R.passes.length;
    R.passes.push(line);
    for (const c of line.c) R.cells.set(c[0], {text: c[1], k: line.idx, step: c[2], d: c[3], conf: c[4]});
    R.pts.push(line.n);
  } else if (line.t === 'end') {
    R.final = line.final; R.end = line.end; R.why = line.why; R.counters = line.counters; R.done = true;
    fixSlots(line.r);
  } else if (line.t === 'sum') {
    S.sum = line;
  } else if (line.t === 'status') {
    S.status = line;
    if (line.final) S.state = line.kind === 'err' && !S.runs.main.passes.length ? 'error' : 'done';
  }
}

function onValue() {
  let v = props.value;
  if (typeof v !== 'string') v = v == null ? '' : String(v);
  const nl = v.indexOf('\n');
  const first = nl >= 0 ? v.slice(0, nl) : '';
  if (first !== head || v.length < consumed) { head = first; consumed = 0; }
  const end = v.lastIndexOf('\n') + 1;
  if (end <= consumed) return;
  const chunk = v.slice(consumed, end);
  consumed = end;
  for (const s of chunk.split('\n')) {
    if (!s) continue;
    try { ingest(JSON.parse(s)); } catch (err) { console.warn('spotviz: bad timeline line', err); }
  }
  if (!S) return;
  if (S.state === 'live' && follow) K = total();
  if (S.play && S.source !== 'live' && !S.autoplayed) { S.autoplayed = true; K = Math.min(1, total()); startPlay(); }
  else if (S.source !== 'live' && !S.autoplayed) { S.autoplayed = true; K = total(); }
  schedule();
}

// ------------------------------------------------------------------------------------------- timeline
function total() { return S ? Math.max(S.runs.main.passes.length, S.runs.base.passes.length) : 0; }
function schedule() {
  if (paintQueued) return;
  paintQueued = true;
  const wait = Math.max(0, MIN_PAINT_MS - (performance.now() - lastPaint));
  const go = () => requestAnimationFrame(() => { paintQueued = false; lastPaint = performance.now(); paint(); });
  if (S && S.state === 'live' && wait > 0) paintTimer = setTimeout(go, wait); else go();
}
function setK(k, user) {
  const n = total();
  K = Math.max(0, Math.min(n, k));
  if (user) follow = (K === n);
  schedule();
}
function speed() { return +speedSel.value || 1; }
function stepDelay() {
  const m = S ? S.runs.main.passes.length : 0;
  const both = S && S.runs.base.passes.length && S.runs.main.meta && S.runs.main.meta.drafter !== 'none';
  return ((both && K >= m) ? 160 : 650) / speed();   // slower while the tree changes, faster for the tail
}
function startPlay() {
  if (!S || !total()) return;
  if (K >= total()) K = 0;
  playing = true; root.dataset.playing = '1'; playBtn.textContent = '❚❚ Pause';
  const tick = () => {
    if (!playing) return;
    if (K >= total()) { stopPlay(); return; }
    setK(K + 1, false);
    playTimer = setTimeout(tick, stepDelay());
  };
  clearTimeout(playTimer);
  playTimer = setTimeout(tick, K === 0 ? 50 : stepDelay());
  schedule();
}
function stopPlay() {
  playing = false; clearTimeout(playTimer); playTimer = null;
  root.dataset.playing = '0'; playBtn.textContent = '▶ Play';
}
playBtn.addEventListener('click', () => { if (playing) stopPlay(); else { follow = false; startPlay(); } });
prevBtn.addEventListener('click', () => { stopPlay(); setK(K - 1, true); });
nextBtn.addEventListener('click', () => { stopPlay(); setK(K + 1, true); });
scrub.addEventListener('input', () => { stopPlay(); setK(+scrub.value, true); });
// hovering a tree node highlights its slots on the canvas (one delegated listener pair, not one per node)
let hovered = null;
const slotsOf = (g) => (g.dataset.slots || '').split(' ').filter(Boolean).map(Number);
treeSvg.addEventListener('mouseover', (e) => {
  const g = e.target.closest && e.target.closest('g.nd');
  if (g === hovered) return;
  if (hovered) highlight(slotsOf(hovered), false);
  hovered = g; if (g) highlight(slotsOf(g), true);
});
treeSvg.addEventListener('mouseleave', () => { if (hovered) highlight(slotsOf(hovered), false); hovered = null; });
guide.querySelector('.sve-guide-close').addEventListener('click', () => { guide.hidden = true; window.__svGuideClosed = true; });
if (!window.__svKeys) {   // one document listener for the page's lifetime (never one per update)
  window.__svKeys = true;
  document.addEventListener('keydown', (e) => {
    const t = e.target, tag = t && t.tagName;
    if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || (t && t.isContentEditable)) return;
    if (window.__svKey) window.__svKey(e);
  });
}
window.__svKey = (e) => {
  if (e.key === 'ArrowLeft') { stopPlay(); setK(K - 1, true); e.preventDefault(); }
  else if (e.key === 'ArrowRight') { stopPlay(); setK(K + 1, true); e.preventDefault(); }
};

// ------------------------------------------------------------------------------------------- canvas
function runTitle(m, role) {
  const who = role === 'main' && m.drafter !== 'none' ? 'Drafter run' : 'Standard decoder';
  const how = m.drafter === 'none' ? (m.mode === 'threshold' ? 'threshold ' + m.tau : 'one decision per pass')
    : (m.drafter + ' · tree budget ' + (m.auto ? 'auto' : m.budget) + (m.prune > 0 ? ' · pruned < ' + m.prune : ''));
  return [who, how + ' · T=' + m.temperature + ' · seed ' + m.seed + ' · ' + m.model + (m.truncated ? ' · prompt truncated' : '')];
}
function buildCanvas(role) {
  const R = S.runs[role], m = R.meta;
  const box = root.querySelector('.sve-run[data-role=' + role + ']');
  box.hidden = false;
  canvasesEl.classList.toggle('sve-one', !(S.runs.main.meta && S.runs.base.meta));
  const [who, how] = runTitle(m, role);
  const h = box.querySelector('.sve-head'); h.textContent = '';
  const b = document.createElement('b'); b.textContent = who; h.appendChild(b); h.appendChild(document.createTextNode(' — ' + how));
  const text = box.querySelector('.sve-text'); text.textContent = '';
  const frag = document.createDocumentFragment();
  frag.appendChild(div('sve-prompt', m.prompt));
  R.slots = [];
  for (let i = 0; i < m.gen; i++) {
    const s = div('sve-s m g', '▯');
    s.dataset.pos = String(m.start + i);
    frag.appendChild(s); R.slots.push(s);
  }
  text.appendChild(frag);
  R.shownK = 0; R.overlay = [];
}
function fixSlots(role) {   // a finished run reserves each slot's final text: scrubbing never reflows
  const R = S.runs[role];
  if (!R.final) return;
  R.slots.forEach((s, i) => {
    const f = R.final[i];
    if (f == null) { s.classList.add('g'); return; }
    s.classList.remove('g');
    const c = R.cells.get(R.meta.start + i);
    s.textContent = f === '' ? '∅' : f;
    if (c) s.title = slotTip(R, R.meta.start + i, c);
    if (R.end != null && i >= R.end) s.classList.add('after');
  });
}
function slotTip(R, pos, c) {
  return 'slot ' + pos + ' · ' + JSON.stringify(c.text) + ' · committed in pass ' + (c.k + 1) + ' · ' +
    (c.d ? 'drafted and accepted' : "the model's own decision") + ' · confidence ' + c.conf;
}
function setSlot(R, i, k) {   // slot i as it is after k passes
  const s = R.slots[i]; if (!s) return;
  const pos = R.meta.start + i, c = R.cells.get(pos);
  const on = c && c.k < k;
  if (on) {
    s.classList.remove('m', 'g');
    s.classList.toggle('d', !!c.d); s.classList.toggle('t', !c.d);
    if (!R.final) { s.textContent = c.text === '' ? '∅' : c.text; s.title = slotTip(R, pos, c); }
  } else {
    s.classList.remove('d', 't'); s.classList.add('m');
    if (!R.final) { s.classList.add('g'); s.textContent = '▯'; s.title = 'slot ' + pos + ': masked'; }
    else if (R.final[i] == null) s.classList.add('g');
  }
  s.classList.toggle('now', !!(c && c.k === k - 1));
}
function paintCanvas(role, k) {
  const R = S.runs[role]; if (!R.meta) return;
  const kk = Math.min(k, R.passes.length);
  const lo = Math.min(kk, R.shownK), hi = Math.max(kk, R.shownK);
  // slots whose state differs between R.shownK and kk: committed in passes [lo-1, hi) (the 'now' mark included)
  const touched = new Set();
  for (let p = Math.max(0, lo - 1); p < hi; p++) for (const c of R.passes[p].c) touched.add(c[0]);
  for (const pos of touched) setSlot(R, pos - R.meta.start, kk);
  R.shownK = kk;
  for (const s of R.overlay) s.classList.remove('x', 'st');
  R.overlay = [];
  if (role === 'main' && k < R.passes.length) {    // the next pass: what the drafter expects, what is already right
    const nxt = R.passes[k];
    const mark = (pos, cls) => { const s = R.slots[pos - R.meta.start]; if (s && s.classList.contains('m')) { s.classList.add(cls); R.overlay.push(s); } };
    if (nxt.tree) for (const pos of nxt.tree.expect) mark(pos, 'x');
    if (R.why && R.why[k]) for (const pos of R.why[k]) mark(pos, 'st');
  }
  const box = root.querySelector('.sve-run[data-role=' + role + '] .sve-foot');
  const n = kk ? R.passes[kk - 1].n : 0;
  box.textContent = (R.done && k >= R.passes.length ? 'finished: ' : '') + n + ' of ' + R.meta.gen + ' slots committed after ' +
    kk + ' target pass' + (kk === 1 ? '' : 'es') + (kk ? ' (' + (n / kk).toFixed(2) + ' per pass)' : '');
}

// ------------------------------------------------------------------------------------------- tree
function truncate(s, n) { return s.length > n ? s.slice(0, n - 1) + '…' : s; }
function highlight(slots, on) {
  const R = S.runs.main;
  for (const pos of slots) { const s = R.slots[pos - R.meta.start]; if (s) s.classList.toggle('hl', on); }
}
function paintTree(k) {
  while (treeSvg.firstChild) treeSvg.removeChild(treeSvg.firstChild);
  const R = S.runs.main, panel = root.querySelector('.sve-tree-panel');
  const drafted = R.meta && R.meta.drafter !== 'none';
  panel.hidden = !drafted;
  if (!drafted) return;
  const p = k >= 1 && k <= R.passes.length ? R.passes[k - 1] : null;
  treeSvg.setAttribute('width', '10'); treeSvg.setAttribute('height', '10');
  if (!p || !p.tree) {
    let msg;
    if (k === 0) msg = 'Before pass 1: nothing verified yet. Press ▶ Play or drag the pass slider.';
    else if (!p) {
      const b = S.runs.base;
      msg = !R.done ? 'Waiting for pass ' + k + '…'
        : 'The drafter run was complete after pass ' + R.passes.length + (b.meta ? (b.done ? '; the standard decoder needed ' + b.passes.length + ' passes' : '; the standard decoder is still going') : '') +
          '. Drag the slider back to see its trees.';
    }
    else msg = 'Pass ' + k + ' verified no tree (' + p.kind + '): it committed ' + p.c.length + ' slot' + (p.c.length === 1 ? '' : 's') + ' by itself.';
    treeCap.textContent = 'Draft tree';
    const box = treeSvg.parentNode.clientWidth || 400;
    treeSvg.setAttribute('width', String(box)); treeSvg.setAttribute('height', '40');
    treeSvg.appendChild(el('text', {x: 4, y: 24, class: 'note'}, msg));
    return;
  }
  const t = p.tree, nodes = t.nodes;
  const acc = p.c.filter((c) => c[3]).length;
  treeCap.textContent = '';
  treeCap.appendChild(document.createTextNode('Draft tree of pass ' + k + ' '));
  const sm = document.createElement('small');
  const chosen = R.meta.auto ? 'budget chosen (auto): ' : 'budget chosen: ';
  sm.textContent = '— ' + chosen + p.states + ' states verified in one batched pass' +
    (p.budget && p.budget !== p.states ? ' (of ' + p.budget + ' allowed)' : '') + ' · accepted depth ' + t.depth +
    ' → ' + acc + ' drafted + ' + (t.bonus ? '1 own decision' : '0') + ' = ' + p.c.length + ' commits';
  treeCap.appendChild(sm);
  const boxW = treeSvg.parentNode.clientWidth || 500;
  const cols = t.cols + (t.bonus ? 1 : 0);
  const colW = Math.max(78, Math.min(150, Math.floor((boxW - 20) / cols)));
  const chars = Math.max(4, Math.floor((colW - 26) / 7.3));
  const rowH = 22, top = t.bonus ? 1 : 0;   // the bonus gets its own row on top: it never overlaps a node
  const X = (c) => 10 + c * colW, Y = (r) => 14 + (r + top) * rowH;
  const W = 20 + cols * colW, H = 24 + (t.rows + top) * rowH;
  treeSvg.setAttribute('width', String(W)); treeSvg.setAttribute('height', String(H));
  const at = new Map();
  for (const n of nodes) at.set(n[0], n);
  const labelEnd = (n) => X(n[2]) + 9 + 7.3 * Math.min(chars, n[4].length);
  const edges = el('g'), fronts = el('g');
  for (const n of nodes) {
    const par = at.get(n[1]);
    if (!par) continue;
    const x0 = labelEnd(par) + 3, y0 = Y(par[3]), x1 = X(n[2]) - 6, y1 = Y(n[3]);
    const onPath = n[6] && par[6];
    const mx = Math.max(x0 + 4, x1 - 14);
    edges.appendChild(el('path', {d: 'M' + x0 + ' ' + y0 + ' C ' + mx + ' ' + y0 + ', ' + mx + ' ' + y1 + ', ' + x1 + ' ' + y1,
      fill: 'none', stroke: onPath ? '#1a8a4a' : '#c4c4c4', 'stroke-width': onPath ? 3 : 1.2}));
  }
  const addNode = (x, y, cls, shape, label, hover, slots) => {
    const g = el('g', {class: 'nd ' + cls, 'data-slots': slots.join(' ')});
    g.appendChild(el('title', null, hover));
    g.appendChild(shape);
    g.appendChild(el('text', {x: x + 9, y: y + 4}, truncate(label, chars)));
    fronts.appendChild(g);
  };
  for (const n of nodes) {
    const x = X(n[2]), y = Y(n[3]), root_ = n[1] < 0;
    const shape = root_ ? el('rect', {x: x - 6, y: y - 6, width: 12, height: 12, rx: 2, fill: '#2c6fbb'})
      : el('circle', {cx: x, cy: y, r: n[6] ? 6 : 4.5, fill: n[6] ? '#1a8a4a' : '#bdbdbd', stroke: n[6] ? '#0b4a24' : '#8a8a8a'});
    addNode(x, y, n[6] ? 'acc' : 'rej', shape, n[4], n[5] + (n[0] === t.stop ? ' · the walk stopped here' : ''), n[7]);
  }
  if (t.bonus) {
    const s = at.get(t.stop), bx = X(s[2] + 1), by = Y(-1);
    edges.appendChild(el('path', {d: 'M' + (labelEnd(s) + 3) + ' ' + Y(s[3]) + ' L ' + (bx - 7) + ' ' + (by + 3),
      fill: 'none', stroke: '#2c6fbb', 'stroke-width': 2, 'stroke-dasharray': '4 3'}));
    addNode(bx, by, 'bon', el('path', {d: star(bx, by, 8), fill: '#2c6fbb'}), t.bonus[0],
      t.bonus[1], s[7].concat(t.bonus[2]));
  }
  treeSvg.appendChild(edges); treeSvg.appendChild(fronts);
}
function star(x, y, r) {
  let d = '';
  for (let i = 0; i < 10; i++) {
    const a = -Math.PI / 2 + i * Math.PI / 5, rr = i % 2 ? r * 0.45 : r;
    d += (i ? 'L' : 'M') + (x + rr * Math.cos(a)).toFixed(1) + ' ' + (y + rr * Math.sin(a)).toFixed(1) + ' ';
  }
  return d + 'Z';
}

// ------------------------------------------------------------------------------------------- charts
function depthStats() {   // acceptance at depth d: passes whose accepted path reached d, of those whose tree did
  const R = S.runs.main, reach = [], had = [];
  for (const p of R.passes) {
    if (!p.tree) continue;
    for (let d = 1; d < p.tree.cols; d++) { had[d] = (had[d] || 0) + 1; if (p.tree.depth >= d) reach[d] = (reach[d] || 0) + 1; }
  }
  const out = [];
  for (let d = 1; d < had.length; d++) if (had[d]) out.push([d, (reach[d] || 0) / had[d], had[d]]);
  return out;
}
function paintDepth(k) {
  while (depthSvg.firstChild) depthSvg.removeChild(depthSvg.firstChild);
  const R = S.runs.main;
  const panel = depthSvg.parentNode;
  panel.hidden = !(R.meta && R.meta.drafter !== 'none');
  if (panel.hidden) return;
  const st = depthStats().slice(0, 12);
  const p = k >= 1 && k <= R.passes.length ? R.passes[k - 1] : null;
  const cur = p && p.tree ? p.tree.depth : -1;
  const x0 = 30, w = 260, h = 80, bw = st.length ? Math.min(28, w / st.length - 4) : 20;
  depthSvg.appendChild(el('line', {x1: x0, y1: 10 + h, x2: x0 + w, y2: 10 + h, stroke: '#999'}));
  depthSvg.appendChild(el('text', {x: 0, y: 14}, '100%'));
  depthSvg.appendChild(el('text', {x: 8, y: 10 + h}, '0'));
  st.forEach(([d, a, n], i) => {
    const x = x0 + 4 + i * (bw + 4), bh = Math.max(1, a * h);
    const r = el('rect', {x: x, y: 10 + h - bh, width: bw, height: bh, rx: 2, fill: d <= cur ? '#1a8a4a' : '#9fd3b1'});
    r.appendChild(el('title', null, 'depth ' + d + ': ' + Math.round(a * 100) + '% of ' + n + ' passes whose tree reached it accepted it'));
    depthSvg.appendChild(r);
    depthSvg.appendChild(el('text', {x: x + bw / 2 - 3, y: 10 + h + 11}, String(d)));
  });
  if (!st.length) depthSvg.appendChild(el('text', {x: x0 + 8, y: 50}, 'no tree verified yet'));
  const why = [];
  const nxt = k < R.passes.length ? R.passes[k] : null;
  if (p && p.tree) why.push('Pass ' + k + ' accepted ' + p.tree.depth + ' drafted decision' + (p.tree.depth === 1 ? '' : 's') + ' (dark bars).');
  const slots = (n) => n + (n === 1 ? ' slot' : ' slots');
  if (nxt && nxt.tree) {
    const right = R.why && R.why[k] ? R.why[k].length : null;
    why.push('Next pass: the drafter expects ' + slots(nxt.tree.expect.length) + ' (dashed)' + (right === null ? '.'
      : right ? '; ' + slots(right) + ' still masked already hold their final token in the previous pass\'s predictions (purple) — that is why guessing works.'
      : '; none of its drafts holds a final token yet.'));
  }
  whyEl.textContent = why.join(' ');
}
function chartInit() {
  const m = S.runs.main.meta || S.runs.base.meta;
  const nb = S.runs.base.done ? S.runs.base.passes.length : 0, nm = S.runs.main.done ? S.runs.main.passes.length : 0;
  const live = [S.runs.main, S.runs.base].some((R) => R.meta && !R.done);   // axes fixed while streaming
  const xmax = Math.max(nb, nm, S.runs.base.passes.length, S.runs.main.passes.length,
                        live ? ((m && m.mode === 'exact') ? m.gen : 8) : 1, 1);
  const key = xmax + ':' + (m ? m.gen : 0);
  if (S.chart && S.chart.key === key) return S.chart;
  while (speedSvg.firstChild) speedSvg.removeChild(speedSvg.firstChild);
  const c = {key: key, x0: 34, y0: 140, w: 255, h: 125, xmax: xmax, ymax: m ? m.gen : 1};
  c.X = (v) => c.x0 + v / c.xmax * c.w; c.Y = (v) => c.y0 - v / c.ymax * c.h;
  speedSvg.appendChild(el('line', {x1: c.x0, y1: c.y0, x2: c.x0 + c.w, y2: c.y0, stroke: '#999'}));
  speedSvg.appendChild(el('line', {x1: c.x0, y1: c.y0, x2: c.x0, y2: c.y0 - c.h, stroke: '#999'}));
  speedSvg.appendChild(el('text', {x: c.x0 + c.w - 60, y: c.y0 + 22}, 'target passes'));
  speedSvg.appendChild(el('text', {x: 2, y: c.Y(c.ymax) + 4}, String(c.ymax)));
  speedSvg.appendChild(el('text', {x: c.X(c.xmax) - 8, y: c.y0 + 11}, String(c.xmax)));
  speedSvg.appendChild(el('text', {x: c.x0 - 10, y: c.y0 + 11}, '0'));
  c.mark = el('line', {x1: 0, y1: c.y0, x2: 0, y2: c.y0 - c.h, stroke: '#222', 'stroke-dasharray': '3 3'});
  speedSvg.appendChild(c.mark);
  c.lines = {};
  for (const [role, col] of [['base', '#2c6fbb'], ['main', '#1a8a4a']]) {
    // the whole run faint, the passes up to the scrubber solid
    const all = el('polyline', {fill: 'none', stroke: col, 'stroke-width': 1.5, opacity: 0.25, points: ''});
    const pl = el('polyline', {fill: 'none', stroke: col, 'stroke-width': 2.4, points: ''});
    const dot = el('circle', {r: 3.5, fill: col, cx: -10, cy: -10});
    speedSvg.appendChild(all); speedSvg.appendChild(pl); speedSvg.appendChild(dot);
    c.lines[role] = {all: all, pl: pl, dot: dot, n: 0, pts: [], k: -1};
  }
  c.legend = el('text', {x: c.x0 + 6, y: 14}, '');
  speedSvg.appendChild(c.legend);
  S.chart = c;
  return c;
}
function paintSpeed(k) {
  const c = chartInit();
  for (const role of ['main', 'base']) {
    const R = S.runs[role], L = c.lines[role];
    if (!R.meta) continue;
    if (L.n !== R.pts.length) {   // extend the line with the new passes only
      for (let i = L.n; i < R.pts.length; i++) L.pts.push(c.X(i).toFixed(1) + ',' + c.Y(R.pts[i]).toFixed(1));
      L.all.setAttribute('points', L.pts.join(' '));
      L.n = R.pts.length; L.k = -1;
    }
    const kk = Math.min(k, R.pts.length - 1);
    if (L.k !== kk) { L.pl.setAttribute('points', L.pts.slice(0, kk + 1).join(' ')); L.k = kk; }
    L.dot.setAttribute('cx', c.X(kk).toFixed(1)); L.dot.setAttribute('cy', c.Y(R.pts[kk]).toFixed(1));
  }
  c.mark.setAttribute('x1', c.X(k).toFixed(1)); c.mark.setAttribute('x2', c.X(k).toFixed(1));
  const m = S.runs.main, b = S.runs.base;
  const pm = Math.min(k, m.pts.length - 1), pb = Math.min(k, b.pts.length - 1);
  c.legend.textContent = 'after ' + k + ' passes: ' + (m.meta && m.meta.drafter !== 'none' ? 'drafter ' + m.pts[pm] + ' (green)' : '') +
    (b.meta ? (m.meta && m.meta.drafter !== 'none' ? ' · ' : '') + 'standard ' + b.pts[pb] + ' (blue)' : (m.meta && m.meta.drafter === 'none' ? 'standard ' + m.pts[pm] : ''));
}
function paintOrder(k) {
  const R = S.runs.main.meta ? S.runs.main : S.runs.base;   // the standard run alone if the drafter failed
  if (!R.meta) return;
  const rows = R.done ? Math.max(R.passes.length, 1) : Math.max(R.passes.length, R.meta.mode === 'exact' ? R.meta.gen : 16);
  if (!S.order || S.order.rows !== rows) {   // (re)build only when the axes change: once while live, once at the end
    while (orderSvg.firstChild) orderSvg.removeChild(orderSvg.firstChild);
    const o = {rows: rows, x0: 30, y0: 8, w: 262, h: 124, n: 0};
    o.cw = o.w / R.meta.gen; o.rh = o.h / rows;
    orderSvg.appendChild(el('rect', {x: o.x0, y: o.y0, width: o.w, height: o.h, fill: '#f6f6f6'}));
    orderSvg.appendChild(el('text', {x: o.x0, y: o.y0 + o.h + 12}, 'slot →'));
    orderSvg.appendChild(el('text', {x: 0, y: o.y0 + 8}, 'pass'));
    orderSvg.appendChild(el('text', {x: 4, y: o.y0 + o.h}, String(rows)));
    o.cells = el('g'); orderSvg.appendChild(o.cells);
    o.band = el('rect', {x: o.x0 - 2, width: o.w + 4, height: Math.max(o.rh, 1.5), fill: 'none', stroke: '#222', 'stroke-width': 1.2});
    orderSvg.appendChild(o.band);
    R.orderRects = [];
    S.order = o;
  }
  const o = S.order;
  for (let i = R.orderRects.length; i < R.passes.length; i++) {   // new passes only
    const p = R.passes[i], g = el('g');
    for (const c of p.c) {
      const r = el('rect', {x: o.x0 + (c[0] - R.meta.start) * o.cw, y: o.y0 + i * o.rh, width: Math.max(o.cw - 0.3, 0.8),
        height: Math.max(o.rh - 0.2, 0.8), fill: c[3] ? '#1a8a4a' : '#2c6fbb'});
      r.appendChild(el('title', null, 'slot ' + c[0] + ' · ' + JSON.stringify(c[1]) + ' · pass ' + (i + 1) + ' · ' + (c[3] ? 'drafted, accepted' : "the model's own decision")));
      g.appendChild(r);
    }
    o.cells.appendChild(g); R.orderRects.push(g);
  }
  const kk = Math.min(k, R.passes.length);
  R.orderRects.forEach((g, i) => { const want = i < kk ? '' : 'none'; if (g.style.display !== want) g.style.display = want; });
  o.band.setAttribute('y', String(o.y0 + Math.max(kk - 1, 0) * o.rh));
  o.band.style.display = kk ? '' : 'none';
}

// ------------------------------------------------------------------------------------------- headline
function kpi(big, small, cls) {
  const d = document.createElement('div'); d.className = 'sve-kpi';
  const b = document.createElement('b'); b.textContent = big; if (cls) b.className = cls;
  const s = document.createElement('span'); s.textContent = small;
  d.appendChild(b); d.appendChild(s); return d;
}
function paintHeadline() {
  headEl.textContent = '';
  const m = S.runs.main, b = S.runs.base, sum = S.sum;
  if (sum && sum.saved != null) {
    headEl.appendChild(kpi(sum.saved + ' target passes saved', sum.passes + ' instead of ' + sum.base_passes + ' (' + sum.ratio.toFixed(2) + '× fewer)', 'sve-good'));
    if (sum.wall_ratio != null) headEl.appendChild(kpi(sum.wall_ratio.toFixed(2) + '× wall-clock', sum.wall.toFixed(2) + ' s vs ' + sum.base_wall.toFixed(2) + ' s', sum.wall_ratio >= 1 ? 'sve-good' : ''));
    if (sum.identical != null) headEl.appendChild(kpi(sum.identical ? '✓ identical output' : '✗ output differs',
      sum.guaranteed === false ? (sum.identical ? 'the same tokens this time; ' : '') +
        "this model's batched passes are not bit-exact, so identity is not guaranteed"
        : (sum.identical ? 'lossless: the same tokens as the standard decoder' : 'not the standard decoder\'s tokens'),
      sum.identical ? 'sve-good' : 'sve-bad'));
    const hint = document.createElement('div'); hint.className = 'sve-hint';
    hint.textContent = (sum.device || 'cpu').startsWith('cuda')
      ? 'A GPU checks the whole tree in one batch for about the cost of one pass, so passes saved become time saved.'
      : 'Why less wall-clock than passes: on this small CPU model, checking a tree of ' + (m.meta && !m.meta.auto ? m.meta.budget + ' ' : 'many ') + 'states costs several plain passes (a CPU works through the batch nearly state by state); on a GPU the batch costs about one pass, so passes saved become time saved.';
    headEl.appendChild(hint);
  } else if (S.state === 'live' && (m.passes.length || b.passes.length)) {
    const R = b.passes.length ? b : m, role = R === b ? 'Standard decoder' : (m.meta && m.meta.drafter !== 'none' ? 'Drafter run' : 'Standard decoder');
    const n = R.pts[R.pts.length - 1];
    headEl.appendChild(kpi(role + ': pass ' + R.passes.length, n + ' of ' + R.meta.gen + ' slots committed (' + (n / R.passes.length).toFixed(2) + ' per pass)'));
  }
}
function row(name, help, vals) {
  const tr = document.createElement('tr'), td = document.createElement('td');
  td.textContent = name;
  if (help) { td.appendChild(document.createElement('br')); const s = document.createElement('small'); s.textContent = help; td.appendChild(s); }
  tr.appendChild(td);
  for (const v of vals) { const c = document.createElement('td'); c.textContent = v; tr.appendChild(c); }
  return tr;
}
function paintTable() {
  const runs = [['main', S.runs.main], ['base', S.runs.base]].filter(([, R]) => R.counters);
  tableEl.textContent = '';
  if (!runs.length) return;
  const t = document.createElement('table'), hd = document.createElement('tr');
  hd.appendChild(document.createElement('th'));
  for (const [role, R] of runs) { const th = document.createElement('th'); th.textContent = runTitle(R.meta, role)[0]; hd.appendChild(th); }
  t.appendChild(hd);
  const v = (f) => runs.map(([, R]) => f(R.counters));
  t.appendChild(row('target passes (NFE)', 'calls of the diffusion model; NFE = number of function evaluations, the cost measure of the paper', v((c) => c.passes)));
  t.appendChild(row('slots committed', 'every filled slot, also those after the end-of-text token', v((c) => c.commits)));
  t.appendChild(row('tokens of text', 'the output up to the end-of-text token', v((c) => c.tokens)));
  t.appendChild(row('commits per pass', 'the mean accepted length: 1 for the standard decoder in exact mode', v((c) => c.mal.toFixed(2))));
  t.appendChild(row('drafted states checked', 'tree nodes verified, over all passes', v((c) => c.drafted)));
  t.appendChild(row('drafts accepted', 'drafted decisions that equalled the model\'s own', v((c) => c.accepted)));
  t.appendChild(row('wall-clock (s)', null, v((c) => c.wall.toFixed(3))));
  t.appendChild(row('tokens per second', null, v((c) => c.tps.toFixed(1))));
  tableEl.appendChild(t);
}

// ------------------------------------------------------------------------------------------- paint
function paint() {
  if (!S) return;
  const n = total();
  if (K > n) K = n;
  scrub.max = String(n); scrub.value = String(K);
  posEl.textContent = 'pass ' + K + ' / ' + n;
  prevBtn.disabled = K <= 0; nextBtn.disabled = K >= n; playBtn.disabled = !n;
  for (const role of ['main', 'base']) paintCanvas(role, K);
  paintTree(K); paintDepth(K); paintSpeed(K); paintOrder(K);
  paintHeadline();
  if (S.state !== 'live' && !tableEl.firstChild) paintTable();
  root.dataset.state = S.state; root.dataset.pass = String(K); root.dataset.npasses = String(n);
  root.dataset.renders = String((+root.dataset.renders || 0) + 1);
}

// ------------------------------------------------------------------------------------------- run / stop
let before = 'idle';   // the state to go back to if the run is refused before it starts
window.__svStart = () => {
  stopPlay();
  before = S ? S.state : 'idle';
  if (S) { ignoreId = null; S.state = 'starting'; S.status = null; }
  root.dataset.state = 'starting';
  setStatus('Starting… (the first run loads the model)', 'info');
  // "Cannot run: ..." (bad input, no model) arrives without a timeline: keep the views as they were. (Polled
  // while starting: Gradio may replace the status element, which an observer would not follow.)
  clearInterval(window.__svRefused);
  window.__svRefused = setInterval(() => {
    if (root.dataset.state !== 'starting') { clearInterval(window.__svRefused); return; }
    const st = document.querySelector('#sv-status');
    if (st && st.innerText.trim().startsWith('Cannot run')) {
      clearInterval(window.__svRefused);
      if (S && S.state === 'starting') S.state = before;
      root.dataset.state = S ? S.state : before;
    }
  }, 150);
};

window.__svStop = () => {
  stopPlay();
  if (!S || S.source !== 'live' || S.state !== 'live') { if (root.dataset.state === 'starting') { root.dataset.state = 'stopped'; setStatus('Stopped.', 'info'); } return; }
  ignoreId = S.id;      // lines still on their way are dropped: the page ends in the state shown now
  S.state = 'stopped';
  const m = S.runs.main, b = S.runs.base, R = b.meta ? b : m;
  S.status = {text: 'Stopped after pass ' + R.passes.length + ' of the ' + (R === b || !m.meta || m.meta.drafter === 'none' ? 'standard decoder' : 'drafter run') +
    '. The views show the passes decoded before Stop; Run starts over.', kind: 'info'};
  clearTimeout(paintTimer); paintQueued = false;
  K = total(); paint(); setStatus(S.status.text, 'info');
};
window.__svRunning = () => !!(S && S.state === 'live');
watch('value', onValue);
onValue();
root.dataset.ready = '1';
"""


class Explainer(gr.HTML):
    """The explainer component; its value is a timeline (spotviz.views.timeline.timeline / encode)."""

    def __init__(self, value: str = "", **kwargs):
        super().__init__(value=value, html_template=TEMPLATE, css_template=CSS,
                         js_on_load=JS.replace("__MIN_PAINT_MS__", str(MIN_PAINT_MS)), **kwargs)

    def api_info(self):
        return {"type": "string", "description": "the run's timeline: one JSON object per line"}

    def example_payload(self):
        return ""

    def example_value(self):
        return ""
