// Commit order: when each slot was committed. x = slot, y = target pass (pass 1 on top); a cell per commit of
// passes 1..k, blue where the model decided it itself, green where a drafted decision was accepted; the pass on
// screen is outlined. The axes stay fixed while a run streams (rows for the longest run an exact decode can take, every
// slot it may fill); a finished or stopped run's fit its passes and the slots it committed (MIN_SLOTS at least).
(function () {
  'use strict';
  const SV = window.SV, C = SV.COLORS;
  const MIN_SLOTS = 16;   // a finished or stopped run's axis spans at least this many slots (one commit: no giant cell)

  SV.views.commitOrder = function (S, k, o) {
    const R = SV.main(S);
    const cells = {t: {x: [], y: [], text: []}, d: {x: [], y: [], text: []}};
    const now = {x: [], y: []};
    let rows = 1, lo = 0, hi = 1;
    if (R && R.meta) {
      const m = R.meta;
      rows = S.state !== 'live' ? Math.max(R.passes.length, 1) : Math.max(R.passes.length, m.mode === 'exact' ? m.gen : 16);
      lo = m.start - 0.5; hi = m.start + m.gen - 0.5;
      if (S.state !== 'live') {   // (a finished text's slots, not the room it had: the cells get readable)
        let last = -1;
        for (const p of R.passes) for (const c of p.c) last = Math.max(last, c[0]);
        if (last >= m.start) hi = Math.min(hi, Math.max(last + 0.5, lo + MIN_SLOTS));
      }
      const n = Math.min(k, R.passes.length);
      for (let i = 0; i < n; i++) {
        for (const c of R.passes[i].c) {
          const tgt = c[3] ? cells.d : cells.t;
          tgt.x.push(c[0]); tgt.y.push(i + 1);
          tgt.text.push(SV.esc('slot ' + c[0] + ' · ' + JSON.stringify(c[1]) + ' · pass ' + (i + 1) + ' · ' +
                               (c[3] ? 'drafted, accepted' : "the model's own decision")));
          if (i === n - 1) { now.x.push(c[0]); now.y.push(i + 1); }
        }
      }
    }
    const width = o.width || 300, height = o.height || 170;
    const pw = Math.max(width - 50, 50), ph = Math.max(height - 40, 40);
    const size = Math.max(2, Math.min(pw / Math.max(hi - lo, 1), ph / rows, 18) * 0.9);   // (a few cells: not tiles)
    const band = k >= 1 && R && R.passes.length ? Math.min(k, R.passes.length) : null;
    const data = [
      {type: 'scatter', mode: 'markers', name: "the model's own decision", x: cells.t.x, y: cells.t.y,
       hovertext: cells.t.text, hoverinfo: 'text', marker: {symbol: 'square', size: size, color: C.target}},
      {type: 'scatter', mode: 'markers', name: 'drafted, accepted', x: cells.d.x, y: cells.d.y,
       hovertext: cells.d.text, hoverinfo: 'text', marker: {symbol: 'diamond', size: size * 1.15, color: C.draft}},
      {type: 'scatter', mode: 'lines', name: 'pass on screen', hoverinfo: 'skip', line: {color: C.mark, width: 1.2},
       x: band ? [lo, hi, hi, lo, lo] : [], y: band ? [band - 0.5, band - 0.5, band + 0.5, band + 0.5, band - 0.5] : []},
      {type: 'scatter', mode: 'markers', name: 'committed in this pass', x: now.x, y: now.y, hoverinfo: 'skip',
       marker: {symbol: 'square-open', size: size + 3, color: C.mark, line: {width: 1.5}}},
    ];
    // (the outlines are wider than a slot: at the axis' last slot Plotly cut them, and the cell, in half)
    for (const t of data) if (t.mode === 'markers') t.cliponaxis = false;
    const layout = SV.layout({width: width, height: height}, {
      margin: {l: 40, r: 8, t: 4, b: 30}, plot_bgcolor: '#f4f4f4',
      xaxis: {range: [lo, hi], zeroline: false, showgrid: false, fixedrange: true, title: {text: 'slot', standoff: 2},
              tickfont: {size: 10}},
      yaxis: {range: [rows + 0.5, 0.5], zeroline: false, showgrid: false, fixedrange: true, title: {text: 'pass', standoff: 2},
              tickfont: {size: 10}},
    });
    return {data: data, layout: layout};
  };
})();
