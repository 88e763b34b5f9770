"""A Plotly player for Gradio: plays a figure's `frames` in the browser.

gr.Plot calls `Plotly.react(div, data, layout, config)` without the frames (gradio >= 4.37), so Play does
nothing. This gr.HTML subclass loads plotly.js from the installed plotly package (served as a static file,
no CDN), calls `Plotly.newPlot` with the data, the layout (with its updatemenus/sliders) and the frames, and
adds previous/next step buttons. Its value is a Plotly figure dict (or None).

For tests and scripts the root element carries `data-nframes` (frames of the figure), `data-frame` (the
frame shown), `data-playing` ("1" while animating) and `data-ready` ("1" once plotted).
"""
from __future__ import annotations

from pathlib import Path

import gradio as gr


def plotly_js_path() -> Path:
    import plotly

    p = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
    if not p.is_file():
        raise FileNotFoundError(f"plotly.js is missing from the installed plotly package ({p})")
    return p


def plotly_js_url() -> str:
    # relative URL: works at the server root and behind a path prefix
    return f"gradio_api/file={plotly_js_path().as_posix()}"


TEMPLATE = """
<div class="svp" data-nframes="0" data-frame="-1" data-playing="0" data-ready="0">
  <div class="svp-bar">
    <button type="button" class="svp-btn svp-prev" title="previous step">◀ prev</button>
    <button type="button" class="svp-btn svp-next" title="next step">next ▶</button>
    <span class="svp-pos"></span>
  </div>
  <div class="svp-plot"></div>
  <div class="svp-msg"></div>
</div>
"""

CSS = """
.svp { width: 100%; }
.svp-bar { display: flex; gap: 6px; align-items: center; margin: 2px 0 4px; font-size: 12px; }
.svp-btn { border: 1px solid var(--border-color-primary, #ccc); border-radius: 6px; padding: 2px 10px;
  background: var(--button-secondary-background-fill, #f3f3f3); color: var(--body-text-color, #222); cursor: pointer; font-size: 12px; }
.svp-btn:disabled { opacity: 0.4; cursor: default; }
.svp-pos { color: var(--body-text-color-subdued, #777); margin-left: 6px; }
.svp-plot { width: 100%; }
.svp-msg { color: var(--body-text-color-subdued, #888); font-size: 13px; padding: 6px 2px; }
.svp-msg:empty { display: none; }
"""

JS = r"""
const root = element.querySelector('.svp');
const plotDiv = element.querySelector('.svp-plot');
const msg = element.querySelector('.svp-msg');
const pos = element.querySelector('.svp-pos');
const prevBtn = element.querySelector('.svp-prev');
const nextBtn = element.querySelector('.svp-next');
let names = [];
let cur = -1;
let drawing = Promise.resolve();

function setCur(i) {
  cur = i;
  root.dataset.frame = String(i);
  pos.textContent = names.length ? ('step ' + (i + 1) + ' / ' + names.length) : '';
  prevBtn.disabled = !names.length || i <= 0;
  nextBtn.disabled = !names.length || i >= names.length - 1;
}

function go(i) {
  if (!names.length || !window.Plotly) return;
  i = Math.max(0, Math.min(names.length - 1, i));
  setCur(i);
  window.Plotly.animate(plotDiv, [names[i]], {mode: 'immediate', frame: {duration: 0, redraw: true},
                                               transition: {duration: 0}});
}
prevBtn.addEventListener('click', () => go(cur - 1));
nextBtn.addEventListener('click', () => go(cur + 1));

async function draw() {
  const fig = props.value;
  root.dataset.ready = '0';
  if (!window.Plotly) {
    msg.textContent = 'plotly.js did not load, so this view cannot be drawn.';
    return;
  }
  if (!fig || !Array.isArray(fig.data)) {
    window.Plotly.purge(plotDiv);
    names = [];
    root.dataset.nframes = '0';
    setCur(-1);
    msg.textContent = props.placeholder || '';
    root.dataset.ready = '1';
    return;
  }
  msg.textContent = '';
  const frames = Array.isArray(fig.frames) ? fig.frames : [];
  names = frames.map((f) => String(f.name));
  const layout = Object.assign({autosize: true}, fig.layout || {});
  const active = (layout.sliders && layout.sliders.length && layout.sliders[0].active != null)
    ? layout.sliders[0].active : names.length - 1;
  await window.Plotly.newPlot(plotDiv, {
    data: fig.data, layout: layout, frames: frames,
    config: {responsive: true, displaylogo: false, scrollZoom: false,
             modeBarButtonsToRemove: ['select2d', 'lasso2d', 'autoScale2d']},
  });
  root.dataset.nframes = String(names.length);
  setCur(names.length ? active : -1);
  plotDiv.on('plotly_animatingframe', (e) => {
    const i = names.indexOf(String(e.name));
    if (i >= 0) setCur(i);
  });
  plotDiv.on('plotly_sliderchange', (e) => {
    if (e && e.slider && e.slider.active != null) setCur(e.slider.active);
  });
  plotDiv.on('plotly_animating', () => { root.dataset.playing = '1'; });
  plotDiv.on('plotly_animated', () => { root.dataset.playing = '0'; });
  plotDiv.on('plotly_animationinterrupted', () => { root.dataset.playing = '0'; });
  root.dataset.ready = '1';
}

function redraw() {
  drawing = drawing.then(draw).catch((err) => {
    console.error('spotviz player:', err);
    msg.textContent = 'could not draw this view: ' + err;
    root.dataset.ready = '1';
  });
}

if (window.ResizeObserver) {
  let last = 0;
  new ResizeObserver(() => {
    const w = plotDiv.clientWidth;
    if (w && w !== last && window.Plotly && plotDiv.data) { last = w; window.Plotly.Plots.resize(plotDiv); }
  }).observe(plotDiv);
}
watch('value', redraw);
redraw();
"""

from gradio.events import Dependency

class PlotlyPlayer(gr.HTML):
    """Plays a Plotly figure dict with frames (play/pause, step slider, previous/next buttons)."""

    def __init__(self, value: dict | None = None, *, placeholder: str = "", **kwargs):
        gr.set_static_paths([str(plotly_js_path())])
        super().__init__(
            value=value,
            html_template=TEMPLATE,
            css_template=CSS,
            js_on_load=JS,
            head=f'<script src="{plotly_js_url()}"></script>',
            placeholder=placeholder,
            **kwargs,
        )

    def preprocess(self, payload):
        return json.loads(payload) if isinstance(payload, str) and payload else payload

    def postprocess(self, value):
        if value is None or isinstance(value, str):
            return value
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except ValueError:  # NaN / inf are not JSON: send them as null
            return json.dumps(_finite(value), separators=(",", ":"), ensure_ascii=False)

    def api_info(self):
        return {"type": "string", "description": "a Plotly figure (data, layout, frames) as JSON, or null"}

    def example_payload(self):
        return None

    def example_value(self):
        return None
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component