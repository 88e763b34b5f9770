// The draft tree of the pass on screen. Nodes are drafted decisions labelled slot:token (where and what), laid
// out by depth (x axis) and leaf order; the accepted path is green and thick, rejected branches grey, the root
// (the state the pass starts from) a dark square, and the bonus (the model's own decision where the acceptance
// walk stopped, committed without being drafted) a blue star on its own row; a dotted edge is another drafted
// order of the same commits, which reaches a state already in the tree (verified once). A pass that drafted
// nothing shows its root and bonus and says why (the caption); a finished run rests on its last drafted pass
// (SV.treePass).
(function () {
  'use strict';
  const SV = window.SV, C = SV.COLORS;
  const LABEL_CHARS = 14, COL_PX = 128, ROW_PX = 26;
  // the node's marker says how the edge into it was made (the caption names them): drafted, certain, likely, or an
  // undrafted step of the walk
  const SYMBOL = {'': 'circle', k: 'diamond', n: 'triangle-right', f: 'hexagon'};
  // a node's text is the page's own tooltip (explainer.js showTip: hovered with a mouse, tapped on a touch screen),
  // kept inside the window; Plotly's label sits inside the figure, and a scrolled tree box cut it off
  const TIP = 'none';

  function caption(R, tp, k, wide) {
    const p = tp.p;
    if (!R || !SV.drafted(R)) return '';
    if (k < 1) return 'Before pass 1: nothing verified yet. Press ▶ Play or drag the pass slider.';
    if (!p) return R.done ? '' : 'Waiting for pass ' + k + '…';
    const commits = p.c.length, acc = p.c.filter((c) => c[3]).length;
    if (!SV.hasTree(p)) {
      return 'Pass ' + tp.k + ' drafted nothing. ' + (p.note || 'It checked only the current state.') +
        ' It committed ' + SV.plural(commits, 'slot') + ' by itself.';
    }
    let s = 'Pass ' + tp.k + ': ' + SV.plural(p.states, 'state') + ' verified in one batched pass' +
      (R.meta.auto ? ' (budget auto chose ' + p.states + ')' : (p.budget && p.budget !== p.states ? ' (of ' + p.budget + ' allowed)' : ''));
    if (R.meta.mode === 'threshold') {   // a decision commits a set: count sets and slots apart
      s += ' · accepted depth ' + p.tree.depth + ' → ' + SV.plural(p.tree.depth, 'drafted set') + ' (' + SV.plural(acc, 'slot') +
        ') + ' + (p.tree.bonus ? 'the model’s own set (' + SV.plural(commits - acc, 'slot') + ')' : 'no own set') +
        ' = ' + SV.plural(commits, 'commit');
    } else {
      s += ' · accepted depth ' + p.tree.depth + ' → ' + acc + ' drafted' + (p.tree.bonus ? ' + 1 own decision' : '') +
        ' = ' + SV.plural(commits, 'commit');
    }
    if (p.stop) s += ' · the walk stopped: ' + p.stop;
    if (tp.rest) s = 'The drafter run’s last drafted pass (the run ended after pass ' + R.passes.length + '). ' + s;
    s += wide;   // (the scroll hint ends the pass's line)
    // the marks this tree has, on a line of their own (a node's shape says how the edge into it was made; hollow,
    // whether the node itself was checked)
    const marks = [];
    if (p.tree.merged) marks.push('dotted: ' + SV.plural(p.tree.merged, 'edge') + ' reaching a state by another order of the same guesses');
    if (p.tree.reused) marks.push('hollow: ' + SV.plural(p.tree.reused, 'known state') + ', computed by an earlier pass (not checked again, no budget used)');
    if (p.tree.known) marks.push('◆ ' + SV.plural(p.tree.known, 'certain edge') + ': the model’s decision, read from an earlier pass’s output');
    if (p.tree.near) marks.push('▶ ' + SV.plural(p.tree.near, 'likely edge') + ': its decision at a computed state one or two commits short');
    if (p.tree.found) marks.push('⬢ ' + SV.plural(p.tree.found, 'undrafted step') + ' the walk took anyway (the state was drafted in another order)');
    return marks.length ? s + '\n' + marks.join(' · ') : s;
  }

  function without(o, key) { const c = Object.assign({}, o); delete c[key]; return c; }

  SV.views.tree = function (S, k, o) {
    const R = SV.main(S);
    const tp = SV.treePass(R, k), p = tp.p;
    const t = p && p.tree;
    const ex = {r: [[], []], a: [[], []], m: [[], []]};
    const nodes = {r: {x: [], y: [], text: [], hovertext: [], customdata: [], symbol: []},
                   a: {x: [], y: [], text: [], hovertext: [], customdata: [], symbol: []}};
    const root = {x: [], y: [], text: [], hovertext: [], customdata: [], symbol: []};
    const bonusEdge = {x: [], y: []}, bonus = {x: [], y: [], text: [], hovertext: [], customdata: []};
    let cols = 1, rows = 1;
    if (t) {
      const at = new Map();
      for (const n of t.nodes) at.set(n[0], n);
      const top = t.bonus ? 1 : 0;   // the bonus gets its own row on top: it never overlaps a node
      for (const n of t.nodes) {
        const y = n[3] + top;
        if (n[1] < 0) { root.x.push(n[2]); root.y.push(y); root.text.push('start'); root.hovertext.push(SV.wrap(n[5], 44)); root.customdata.push(n[0]); root.symbol.push(n[10] ? 'square-open' : 'square'); continue; }
        const par = at.get(n[1]), on = n[6] && par && par[6];
        const e = on ? ex.a : ex.r;
        if (par) { e[0].push(par[2], n[2], null); e[1].push(par[3] + top, y, null); }
        for (const m of n[8] || []) {   // another drafted order reaching the same state: one node, a dotted edge
          const mp = at.get(m);
          if (mp) { ex.m[0].push(mp[2], n[2], null); ex.m[1].push(mp[3] + top, y, null); }
        }
        const tgt = n[6] ? nodes.a : nodes.r;
        tgt.x.push(n[2]); tgt.y.push(y); tgt.text.push(SV.esc(SV.clip(n[4], LABEL_CHARS)));
        tgt.symbol.push((SYMBOL[n[9] || ''] || 'circle') + (n[10] ? '-open' : ''));   // (hollow: a known state)
        tgt.hovertext.push(SV.wrap(n[5] + (n[0] === t.stop ? ' · the walk stopped here' : ''), 44)); tgt.customdata.push(n[0]);
      }
      cols = t.cols; rows = t.rows + top;
      if (t.bonus) {
        const s = at.get(t.stop), bx = s[2] + 1, by = 0;
        bonusEdge.x.push(s[2], bx); bonusEdge.y.push(s[3] + top, by);
        bonus.x.push(bx); bonus.y.push(by); bonus.text.push(SV.esc(SV.clip(t.bonus[0], LABEL_CHARS)));
        bonus.hovertext.push(SV.wrap(t.bonus[1], 44)); bonus.customdata.push('bonus');
        cols = Math.max(cols, bx + 1);
      }
    }
    // Columns as narrow as the longest label allows, so that a deep tree of short labels fits its box; wider
    // trees scroll sideways inside the box.
    let longest = 1;
    for (const g of [nodes.a, nodes.r, bonus]) for (const s of g.text) longest = Math.max(longest, s.length);
    const colPx = Math.max(24 + 7 * longest, Math.min(COL_PX, ((o.width || 400) - 40) / cols));
    const width = Math.max(o.width || 400, 40 + cols * colPx);
    const height = t ? Math.max(96, 48 + rows * ROW_PX) : 90;   // (a chain's one row gets no tall empty box)
    const text = (color, size) => ({family: SV.MONO.family, size: size || 11, color: color});
    const data = [
      {type: 'scatter', mode: 'lines', name: 'rejected edges', x: ex.r[0], y: ex.r[1], hoverinfo: 'skip',
       line: {color: '#c4c4c4', width: 1.2}},
      {type: 'scatter', mode: 'lines', name: 'same state, another order', x: ex.m[0], y: ex.m[1], hoverinfo: 'skip',
       line: {color: '#b0b0b0', width: 1, dash: 'dot'}},
      {type: 'scatter', mode: 'lines', name: 'accepted path', x: ex.a[0], y: ex.a[1], hoverinfo: 'skip',
       line: {color: C.draft, width: 3.5}},
      // (every line before the nodes: the labels' white halo, explainer.css, is drawn over the lines they cross)
      {type: 'scatter', mode: 'lines', name: 'bonus edge', x: bonusEdge.x, y: bonusEdge.y, hoverinfo: 'skip',
       line: {color: C.target, width: 2, dash: 'dot'}},
      Object.assign({type: 'scatter', mode: 'markers+text', name: 'rejected', textposition: 'top right',
       marker: {color: C.reject, size: 8, symbol: nodes.r.symbol, line: {color: C.reject, width: 2}},
       textfont: text('#666'), hoverinfo: TIP,
       cliponaxis: false}, without(nodes.r, 'symbol')),
      Object.assign({type: 'scatter', mode: 'markers+text', name: 'accepted', textposition: 'top right',
       marker: {color: C.draft, size: 11, symbol: nodes.a.symbol, line: {color: '#0b4a24', width: 1}},
       textfont: text('#0b4a24'), hoverinfo: TIP, cliponaxis: false}, without(nodes.a, 'symbol')),
      Object.assign({type: 'scatter', mode: 'markers+text', name: 'root', textposition: 'top right',
       marker: {color: C.root, size: 11, symbol: root.symbol, line: {color: C.root, width: 2}}, textfont: text(C.root),
       hoverinfo: TIP, cliponaxis: false}, without(root, 'symbol')),
      Object.assign({type: 'scatter', mode: 'markers+text', name: 'bonus', textposition: 'top right',
       marker: {color: C.target, size: 15, symbol: 'star'}, textfont: text('#1d4f8c'), hoverinfo: TIP,
       cliponaxis: false}, bonus),
    ];
    const layout = SV.layout({width: width, height: height}, {
      // (the axis is named in the panel's caption, which does not scroll with a wide tree)
      margin: {l: 14, r: 10, t: 12, b: t ? 20 : 4},
      xaxis: {range: [-0.35, cols - 0.1], dtick: 1, zeroline: false, showgrid: false, fixedrange: true,
              visible: !!t, tickfont: {size: 10}},
      yaxis: {range: [rows - 0.4, -0.6], visible: false, fixedrange: true},
      // (the reason is the caption above the figure; one short line here, which fits a phone)
      annotations: t ? [] : [SV.note(k < 1 ? 'No pass yet.' : 'No draft tree in this pass: the caption above says why.')],
    });
    // (a tree wider than its box scrolls; the caption says so, since a resting scroll bar may be hidden)
    const wide = t && width > (o.width || 400) + 1 ? ' · the tree is wider than its box: scroll it sideways' : '';
    // where the walk stopped (the bonus star, else the stop node), in pixels from the figure's left edge: a tree
    // wider than its box is scrolled to show it
    const fx = bonus.x.length ? bonus.x[0] : (t ? (t.nodes.find((n) => n[0] === t.stop) || [0, 0, 0])[2] : null);
    const colW = (width - 24) / (cols + 0.25), nodeX = (x) => 14 + (x + 0.35) * colW;   // (pixels, the figure's left edge 0)
    const focus = fx == null ? null : nodeX(fx);
    // a scroll position near px that starts just before a column's nodes (no label cut at the box's left edge) and
    // keeps the focus in a box `view` px wide: the column at or right of px (the box's furthest scroll `max` where
    // that column lies a few px past it: a label's tail ends further left), else the one left of px, else px itself
    const snap = (px, max, view) => {
      if (px <= 0) return 0;
      const shows = (x) => focus == null || (focus - x >= 60 && !(focus - x > view - 60));
      const c = (px + 10 - 14) / colW - 0.35, right = nodeX(Math.ceil(c)) - 10, left = nodeX(Math.floor(c)) - 10;
      if (right - max <= 6 && shows(Math.min(right, max))) return Math.min(right, max);
      if (shows(Math.max(0, left))) return Math.max(0, left);
      return Math.min(px, max);
    };
    return {data: data, layout: layout, caption: caption(R, tp, k, wide), shown: p ? tp.k : 0, focus: focus, snap: snap};
  };
})();
