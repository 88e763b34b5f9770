// The race: slots committed after each target pass, one line per run (the standard decoder, each drafter), solid
// up to the pass on screen with a dot on it, the whole run faint behind; the gap along the x axis is the passes
// saved. The x axis is fixed while a run streams (to the longest run it can be); afterwards it fits the runs.
(function () {
  'use strict';
  const SV = window.SV, C = SV.COLORS;

  SV.views.race = function (S, k, o) {
    const data = [];
    let xmax = 1, ymax = 1;
    const live = S.state === 'live';   // (a stopped or failed run's axes fit what arrived)
    for (const R of S.runs.values()) {
      if (R.meta) {   // (streaming: room for every slot; afterwards the slots the texts took)
        ymax = Math.max(ymax, live ? R.meta.gen : Math.max(...R.pts));
        xmax = Math.max(xmax, R.passes.length, live ? (R.meta.mode === 'exact' ? R.meta.gen : 8) : 1);
      }
    }
    // listed first to last; drawn solid lines first (last lane to first, so the shown run lies on top of the other
    // solid ones), then the dashed ones, whose gaps show a solid line they coincide with (a baseline that takes
    // SPOT's very path was hidden under it)
    const solid = (role) => SV.runDash(S.runs.get(role).meta) === 'solid' ? 0 : 1;
    S.order.slice().reverse().sort((a, b) => solid(a) - solid(b)).forEach((role) => {
      const rank = S.order.indexOf(role);
      const R = S.runs.get(role);
      const col = SV.runColor(R.meta), name = R.meta ? SV.runTitle(S, R)[0] : role;
      const xs = R.pts.map((_, i) => i), kk = Math.min(k, R.pts.length - 1);
      const hover = SV.esc(name) + ': %{y} slots after %{x} passes<extra></extra>';
      data.push({type: 'scatter', mode: 'lines', name: name + ' (whole run)', x: xs, y: R.pts, hoverinfo: 'skip',
                 line: {color: col, width: 1.5, shape: 'hv'}, opacity: 0.25, showlegend: false});
      data.push({type: 'scatter', mode: 'lines', name: SV.esc(name) + (R.done ? ' · ' + R.passes.length + ' passes' : ''),
                 x: xs.slice(0, kk + 1), y: R.pts.slice(0, kk + 1), hovertemplate: hover,
                 // (the standard decoder, drawn first, twice as wide: where a drafter took its very path, the
                 // standard line shows as a rim around it; a tau 0.9 run that drafted nothing showed one line)
                 line: {color: col, width: R.meta && R.meta.drafter === 'none' ? 5.5 : 2.4, shape: 'hv',
                        dash: SV.runDash(R.meta)}, showlegend: !!R.meta,
                 legendrank: 1000 + rank});
      data.push({type: 'scatter', mode: 'markers', name: name + ' now', x: R.meta ? [kk] : [], y: R.meta ? [R.pts[kk]] : [],
                 hovertemplate: hover, marker: {color: col, size: 7}, showlegend: false});
    });
    data.push({type: 'scatter', mode: 'lines', name: 'pass on screen', x: [k, k], y: [0, ymax], hoverinfo: 'skip',
               line: {color: C.mark, width: 1, dash: 'dot'}, showlegend: false});
    // The legend goes above the plot (inside, it covered where the drafters finish; below, the axis title), in rows
    // laid out here for every lane of the run from its start, as Plotly draws them: an entry takes its entrywidth plus
    // 40 px of line sample and gaps and 5 px to the next, a row 25 px (10 px text). Plotly may not push the margin
    // itself (autoexpand off): when it did, while lanes joined the legend mid-run, the passes axis was left inside
    // the plot, and a row planned too few ran the legend off the figure's top.
    const lanes = S.order.length, width = o.width || 300;
    const ENTRY = 180;   // px an entry's text ("Standard decoder · 50 passes")
    const rows = Math.ceil(lanes / Math.max(1, Math.floor((width - 48 + 5) / (ENTRY + 45))));
    const extra = 25 * rows + 2;
    const layout = SV.layout({width: width, height: (o.height || 190) + extra}, {
      margin: {l: 40, r: 8, t: 4 + extra, b: 30, autoexpand: false}, showlegend: true,
      legend: {orientation: 'h', x: 0, y: 1, xanchor: 'left', yanchor: 'bottom', font: {size: 10},
               entrywidth: ENTRY, entrywidthmode: 'pixels'},
      xaxis: {range: [0, xmax + 0.5], fixedrange: true, zeroline: false, title: {text: 'target passes', standoff: 2},
              tickfont: {size: 10}},
      yaxis: {range: [0, ymax * 1.04], fixedrange: true, zeroline: false, title: {text: 'slots', standoff: 2},
              tickfont: {size: 10}},
    });
    return {data: data, layout: layout};
  };
})();
