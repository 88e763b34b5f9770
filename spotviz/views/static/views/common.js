// spotviz views: shared figure pieces. Each view (one file each) is a pure function (session, pass k, options)
// -> {data, layout} for Plotly, with a fixed list of traces for the session: every call sets every trace, so
// pass k never shows anything of another pass, live, when scrubbing, and in the downloaded page alike.
(function () {
  'use strict';
  const SV = window.SV = window.SV || {};
  SV.views = SV.views || {};
  SV.FONT = {family: 'Inter, Helvetica, Arial, sans-serif', size: 11, color: '#333'};
  SV.MONO = {family: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace', size: 11};
  SV.PLOT_CONFIG = {displayModeBar: false, responsive: false, scrollZoom: false, doubleClick: false};
  SV.layout = (o, extra) => Object.assign({
    width: o.width, height: o.height, font: SV.FONT, margin: {l: 40, r: 10, t: 6, b: 30},
    paper_bgcolor: 'rgba(0,0,0,0)', plot_bgcolor: 'rgba(0,0,0,0)', showlegend: false, hovermode: 'closest',
    dragmode: false,   // (no layout.transition: Plotly.react with one, even of 0 ms, kept a changed note's old text
    // and, when a figure's height changed (the race's legend rows), its axis where the old layout had it)
  }, extra);
  SV.note = (text, y) => ({text: SV.esc(text), xref: 'paper', yref: 'paper', x: 0, y: y == null ? 0.5 : y,
    xanchor: 'left', yanchor: 'middle', showarrow: false, align: 'left', font: {size: 12, color: '#555'}});
  SV.clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);
  // Escaped text in lines of at most about `width` characters (Plotly's <br>): a hover label stays narrow enough
  // to show whole near the edge of a box that scrolls
  SV.wrap = (s, width) => {
    const lines = [];
    let line = '';
    for (const word of String(s).split(' ')) {
      if (line && line.length + 1 + word.length > width) { lines.push(line); line = word; } else line = line ? line + ' ' + word : word;
    }
    if (line) lines.push(line);
    return lines.map(SV.esc).join('<br>');
  };
})();
