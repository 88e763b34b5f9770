// Why it works: acceptance per depth over passes 1..k -- of the passes whose tree reached depth d, the share
// whose accepted path reached it (that count above each bar: a bar of few passes says little). The bars up to
// the accepted depth of the pass on screen are dark.
(function () {
  'use strict';
  const SV = window.SV, C = SV.COLORS;

  SV.views.depth = function (S, k, o) {
    const R = SV.main(S);
    const st = R && SV.drafted(R) ? SV.depthStats(R, k).slice(0, 16) : [];
    const tp = SV.treePass(R, k);
    const cur = SV.hasTree(tp.p) ? tp.p.tree.depth : 0;
    const data = [{
      type: 'bar', name: 'acceptance', x: st.map((s) => s[0]), y: st.map((s) => s[1]),
      marker: {color: st.map((s) => (s[0] <= cur ? C.draft : '#a8dcb9'))},
      text: st.map((s) => String(s[2])), textposition: 'outside', cliponaxis: false,
      textfont: {size: 9, color: '#666'},
      hovertext: st.map((s) => 'depth ' + s[0] + ': ' + Math.round(s[1] * 100) + '% of ' + s[2] +
                                ' passes whose tree reached it accepted it'),
      hoverinfo: 'text',
    }];
    const layout = SV.layout({width: o.width || 300, height: o.height || 120}, {
      margin: {l: 40, r: 8, t: 10, b: 28}, bargap: 0.25,
      xaxis: {range: [0.4, Math.max(st.length, 4) + 0.6], dtick: 1, fixedrange: true, title: {text: 'depth', standoff: 2},
              tickfont: {size: 10}},
      yaxis: {range: [0, 1.05], tickformat: '.0%', fixedrange: true, tickvals: [0, 0.5, 1], tickfont: {size: 10},
              showgrid: st.length > 0,   // (no bars: the note alone, not struck through by the 50% line)
              title: {text: 'accepted', standoff: 2, font: {size: 10}}},
      annotations: st.length ? [] : [SV.note(!(R && SV.drafted(R)) ? 'the standard decoder drafts nothing'
        : k < 1 ? 'before pass 1: nothing verified yet'
        : R.passes.some(SV.hasTree) ? 'no tree verified by pass ' + k + ' yet'
          : R.done ? 'no tree verified in this run' : 'no tree verified yet', 0.6)],
    });
    return {data: data, layout: layout};
  };
})();
