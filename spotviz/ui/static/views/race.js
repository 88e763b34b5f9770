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
      if (R.meta) {
        ymax = Math.max(ymax, R.meta.gen);
        xmax = Math.max(xmax, R.passes.length, live ? (R.meta.mode === 'exact' ? R.meta.gen : 8) : 1);
      }
    }
    for (const role of S.order) {
      const R = S.runs.get(role);
      const col = SV.runColor(R.meta), name = R.meta ? SV.runTitle(S, R)[0] : role;
      const xs = R.pts.map((_, i) => i), kk = Math.min(k, R.pts.length - 1);
      const hover = SV.esc(name) + ': %{y} slots after %{x} passes<extra></extra>';
      data.push({type: 'scatter', mode: 'lines', name: name + ' (whole run)', x: xs, y: R.pts, hoverinfo: 'skip',
                 line: {color: col, width: 1.5, shape: 'hv'}, opacity: 0.25, showlegend: false});
      data.push({type: 'scatter', mode: 'lines', name: SV.esc(name) + (R.done ? ' · ' + R.passes.length + ' passes' : ''),
                 x: xs.slice(0, kk + 1), y: R.pts.slice(0, kk + 1), hovertemplate: hover,
                 line: {color: col, width: 2.4, shape: 'hv'}, showlegend: !!R.meta});
      data.push({type: 'scatter', mode: 'markers', name: name + ' now', x: R.meta ? [kk] : [], y: R.meta ? [R.pts[kk]] : [],
                 hovertemplate: hover, marker: {color: col, size: 7}, showlegend: false});
    }
    data.push({type: 'scatter', mode: 'lines', name: 'pass on screen', x: [k, k], y: [0, ymax], hoverinfo: 'skip',
               line: {color: C.mark, width: 1, dash: 'dot'}, showlegend: false});
    // a race of several lanes on a narrow screen: the legend goes under the plot (inside it would cover where the
    // drafters finish); otherwise at the top, a little right of the y axis: above the standard decoder's slow line,
    // right of the drafters' steep ones
    const lanes = data.filter((d) => d.showlegend).length, below = (o.width || 300) < 480 && lanes > 2;
    const extra = below ? 16 * Math.ceil(lanes / 2) + 8 : 0;   // (two legend entries a row)
    const layout = SV.layout({width: o.width || 300, height: (o.height || 190) + extra}, {
      margin: {l: 40, r: 8, t: 4, b: 30 + extra}, showlegend: true,
      legend: below ? {orientation: 'h', x: 0, y: -0.22, xanchor: 'left', yanchor: 'top', font: {size: 10}}
                    : {x: 0.2, y: 0.99, xanchor: 'left', yanchor: 'top', bgcolor: 'rgba(255,255,255,0.8)', font: {size: 10}},
      xaxis: {range: [0, xmax + 0.5], fixedrange: true, zeroline: false, title: {text: 'target passes', standoff: 2},
              tickfont: {size: 10}},
      yaxis: {range: [0, ymax * 1.04], fixedrange: true, zeroline: false, title: {text: 'slots', standoff: 2},
              tickfont: {size: 10}},
    });
    return {data: data, layout: layout};
  };
})();
