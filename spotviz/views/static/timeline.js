// spotviz: the run state every view draws, built from the timeline lines (spotviz/views/timeline.py).
// Used by the app's explainer (live and replayed runs) and by the downloaded page: the same lines, the same state,
// the same views. Nothing here touches the DOM.
(function () {
  'use strict';
  const SV = window.SV = window.SV || {};
  SV.views = SV.views || {};

  // One colour means one thing everywhere (canvases, figures, headline).
  SV.COLORS = {
    target: '#2c6fbb',      // the model's own decision (the standard decoder has only these); the bonus
    draft: '#177f44',       // a drafted decision the pass accepted
    reject: '#b4b4b4',      // a drafted decision the pass rejected
    root: '#37474f',        // the state a tree grows from
    mark: '#222222',        // the pass on screen
    warn: '#9a5b00',        // amber: below 1x
  };
  // run lines: the standard decoder blue (as its decisions), each drafter its own colour
  SV.RUN_COLORS = {none: '#2c6fbb', spot: '#177f44', 'spot-sets': '#177f44', 'training-free': '#a85d10',
                   calibrated: '#c2185b'};
  // drafters of one's own (registered: docs/INSTALL.md) take a colour and a pattern in the order the page first
  // meets them, so that two of them in a race differ and each keeps its look from run to run
  SV.OTHER_COLORS = ['#6d4c41', '#5e35b1', '#00838f', '#827717'];
  SV.OTHER_DASHES = ['dot', 'longdash', 'longdashdot', 'dash'];
  const others = [];
  const other = (meta) => { const d = meta && meta.drafter;
    if (!d || d in SV.RUN_COLORS) return null;
    if (!others.includes(d)) others.push(d);
    return others.indexOf(d); };
  SV.runColor = (meta) => { const i = other(meta);
    return i === null ? SV.RUN_COLORS[meta && meta.drafter] || SV.OTHER_COLORS[0] : SV.OTHER_COLORS[i % 4]; };
  // a line pattern per drafter too, so that the race reads without telling colours apart
  SV.RUN_DASHES = {'training-free': 'dash', calibrated: 'dashdot'};
  SV.runDash = (meta) => { const i = other(meta);
    return i === null ? SV.RUN_DASHES[meta && meta.drafter] || 'solid' : SV.OTHER_DASHES[i % 4]; };
  SV.drafterName = (d) => ({none: 'standard', spot: 'SPOT', 'spot-sets': 'SPOT-Sets'})[d] || d;

  // Text for Plotly labels: Plotly reads a subset of HTML in text, so trace text is escaped first (a quote needs
  // none outside a tag, and Plotly decodes no &quot;: it showed as such)
  SV.esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  SV.plural = (n, one, many) => n + ' ' + (n === 1 ? one : (many || one + 's'));

  function newRun(role) {
    return {role: role, meta: null, passes: [], cells: new Map(), pts: [0], final: null, end: null, why: [],
            counters: null, done: false};
  }

  // A session: the runs of one value of the timeline (one Run press, one example, one replay, one page).
  SV.newSession = function (line) {
    const S = {id: line.id || '', source: line.source, play: !!line.play, runs: new Map(), order: [],
               titles: {}, sum: null, status: null, version: 0,
               state: line.source === 'live' ? 'live' : 'done'};
    for (const [role, title] of (line.runs || [])) { SV.run(S, role); S.titles[role] = title; }
    return S;
  };
  SV.run = function (S, role) {
    if (!S.runs.has(role)) { S.runs.set(role, newRun(role)); S.order.push(role); }
    return S.runs.get(role);
  };

  // Take one line; returns what it changed ('run', 'pass', 'end', 'sum', 'status').
  SV.ingest = function (S, line) {
    S.version++;
    const R = line.r ? SV.run(S, line.r) : null;
    if (line.t === 'run') {
      R.meta = line.meta;
    } else if (line.t === 'pass') {
      line.idx = R.passes.length;           // 0-based; shown as pass idx + 1
      R.passes.push(line);
      for (const c of line.c) R.cells.set(c[0], {text: c[1], k: line.idx, step: c[2], d: c[3], conf: c[4]});
      R.pts.push(line.n);
    } else if (line.t === 'end') {
      R.final = line.final; R.end = line.end; R.why = line.why; R.counters = line.counters; R.done = true;
    } else if (line.t === 'sum') {
      S.sum = line;
    } else if (line.t === 'status') {
      S.status = line;
      if (line.final) S.state = line.kind === 'err' && !SV.total(S) ? 'error' : 'done';
    }
    return line.t;
  };

  // The scrubber counts target passes 1..N, N the longest run's.
  SV.total = (S) => { let n = 0; for (const R of S.runs.values()) n = Math.max(n, R.passes.length); return n; };
  // The run whose tree, order and depth views show: the drafter run (the standard run when it is alone).
  SV.main = (S) => {
    const m = S.runs.get('main');
    if (m && m.meta) return m;
    for (const R of S.runs.values()) if (R.meta) return R;
    return m || null;
  };
  SV.drafted = (R) => !!(R && R.meta && R.meta.drafter !== 'none');
  SV.hasTree = (p) => !!(p && p.tree && p.tree.size > 1);
  // The pass whose tree is shown at scrubber position k: pass k itself, or, past the run's last pass (the run
  // finished earlier or rests at its end), its last drafted pass: a finished run never rests on an empty tree.
  SV.treePass = function (R, k) {
    if (!R || !R.passes.length || k < 1) return {p: null, k: k, rest: false};
    if (k < R.passes.length || (!R.done && k <= R.passes.length)) return {p: R.passes[k - 1] || null, k: k, rest: false};
    const last = R.passes[R.passes.length - 1];
    if (k === R.passes.length && SV.hasTree(last)) return {p: last, k: k, rest: false};
    for (let i = R.passes.length - 1; i >= 0; i--) if (SV.hasTree(R.passes[i])) return {p: R.passes[i], k: i + 1, rest: true};
    return {p: R.passes[Math.min(k, R.passes.length) - 1], k: Math.min(k, R.passes.length), rest: false};
  };
  // Acceptance per depth over passes 1..k: of the passes whose tree reached depth d, the share whose accepted
  // path reached it.
  SV.depthStats = function (R, k) {
    const reach = [], had = [];
    const n = Math.min(k, R.passes.length);
    for (let i = 0; i < n; i++) {
      const p = R.passes[i];
      if (!SV.hasTree(p)) continue;
      for (let d = 1; d < p.tree.cols; d++) { had[d] = (had[d] || 0) + 1; if (p.tree.depth >= d) reach[d] = (reach[d] || 0) + 1; }
    }
    const out = [];
    for (let d = 1; d < had.length; d++) if (had[d]) out.push([d, (reach[d] || 0) / had[d], had[d]]);
    return out;
  };
  // Slots committed after k passes (a finished run keeps its final count).
  SV.committedAt = (R, k) => R.pts[Math.min(k, R.pts.length - 1)] || 0;
  SV.runTitle = function (S, R) {
    const m = R.meta;
    if (!m) return [S.titles[R.role] || R.role, S.state === 'stopped' ? 'not run' : 'waiting for its turn…'];
    const who = R.role === 'base' || m.drafter === 'none' ? 'Standard decoder' : SV.drafterName(m.drafter);
    const how = m.drafter === 'none' ? (m.mode === 'threshold' ? 'threshold ' + m.tau : 'one decision per pass')
      : ('tree budget ' + (m.auto ? 'auto' : m.budget) + (m.mode === 'threshold' ? ' · threshold ' + m.tau : '') +
         (m.prune > 0 ? ' · pruned < ' + m.prune : '') +
         (m.coupled === false ? ' · independent draft noise (ablation)' : ''));
    return [who, how + ' · T=' + m.temperature + ' · seed ' + m.seed + ' · ' + m.model + (m.truncated ? ' · prompt truncated' : '')];
  };
})();
