"""A Plotly player for Gradio: plays a figure's `frames` in the browser.

gr.Plot calls `Plotly.react(div, data, layout, config)` without the frames (gradio >= 4.37), so Play does
nothing. This gr.HTML subclass loads plotly.js from the installed plotly package (served as a static file,
no CDN), calls `Plotly.newPlot` with the data, the layout (with its updatemenus/sliders) and the frames, and
adds previous/next step buttons. Its value is a Plotly figure dict (or None); it travels as a JSON string, which
Gradio passes through untouched (a large dict would be walked node by node on the server, looking for files,
and compared node by node in the browser).

For tests and scripts the root element carries `data-nframes` (frames of the figure), `data-frame` (the
frame shown), `data-playing` ("1" while animating), `data-plays` (animations started so far) and `data-ready`
("1" once plotted).
"""
from __future__ import annotations

import json
import math
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
<div class="svp" data-nframes="0" data-frame="-1" data-playing="0" data-plays="0" data-ready="0">
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
.svp { width: 100%; contain: layout paint; }
.svp-bar { display: flex; gap: 6px; align-items: center; margin: 2px 0 4px; font-size: 12px; }
.svp-btn { border: 1px solid var(--border-color-primary, #ccc); border-radius: 6px; padding: 2px 10px;
  background: var(--button-secondary-background-fill, #f3f3f3); color: var(--body-text-color, #222); cursor: pointer; font-size: 12px; }
.svp-btn:disabled { opacity: 0.4; cursor: default; }
.svp-pos { color: var(--body-text-color-subdued, #777); margin-left: 6px; }
.svp-plot { width: 100%; contain: size layout paint style; min-height: 40px; }
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

let redrawFrames = true;

function go(i) {
  if (!names.length || !window.Plotly) return;
  i = Math.max(0, Math.min(names.length - 1, i));
  setCur(i);
  window.Plotly.animate(plotDiv, [names[i]], {mode: 'immediate', frame: {duration: 0, redraw: redrawFrames},
                                               transition: {duration: 0}});
}
prevBtn.addEventListener('click', () => go(cur - 1));
nextBtn.addEventListener('click', () => go(cur + 1));

async function draw() {
  let fig = props.value;
  if (typeof fig === 'string') fig = fig ? JSON.parse(fig) : null;
  root.dataset.ready = '0';
  if (!window.Plotly) {
    msg.textContent = 'plotly.js did not load, so this view cannot be drawn.';
    return;
  }
  if (!fig || !Array.isArray(fig.data)) {
    window.Plotly.purge(plotDiv);
    plotDiv.style.height = '';
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
  plotDiv.style.height = (layout.height || 450) + 'px';  // fixed size: the plot's redraws stay inside it
  redrawFrames = !(layout.meta && layout.meta.redraw === false);
  const active = (layout.sliders && layout.sliders.length && layout.sliders[0].active != null)
    ? layout.sliders[0].active : names.length - 1;
  await window.Plotly.newPlot(plotDiv, {
    data: fig.data, layout: layout, frames: frames,
    config: {responsive: true, displaylogo: false, scrollZoom: false,
             modeBarButtonsToRemove: ['select2d', 'lasso2d', 'autoScale2d']},
  });
  sizeCells();
  root.dataset.nframes = String(names.length);
  setCur(names.length ? active : -1);
  plotDiv.on('plotly_animatingframe', (e) => {
    const i = names.indexOf(String(e.name));
    if (i >= 0) setCur(i);
  });
  plotDiv.on('plotly_sliderchange', (e) => {
    if (e && e.slider && e.slider.active != null) setCur(e.slider.active);
  });
  plotDiv.on('plotly_animating', () => {
    root.dataset.playing = '1';
    root.dataset.plays = String((+root.dataset.plays || 0) + 1);
  });
  plotDiv.on('plotly_animated', () => { root.dataset.playing = '0'; });
  plotDiv.on('plotly_animationinterrupted', () => { root.dataset.playing = '0'; });
  root.dataset.ready = '1';
}

// commit-order cells are square markers: size them to the cells of the drawn axes
function sizeCells() {
  const meta = plotDiv.layout && plotDiv.layout.meta;
  const fl = plotDiv._fullLayout;
  if (!meta || meta.cell_trace == null || !fl || !fl.xaxis || !fl.yaxis) return;
  const span = (ax) => Math.abs(ax.range[1] - ax.range[0]) || 1;
  const px = Math.min(fl.xaxis._length / span(fl.xaxis), 3 * fl.yaxis._length / span(fl.yaxis));
  const size = Math.max(2, px * 0.92);
  window.Plotly.restyle(plotDiv, {'marker.size': size}, [meta.cell_trace]);
  if (meta.cell_ring_trace != null) {
    window.Plotly.restyle(plotDiv, {'marker.size': size + 3}, [meta.cell_ring_trace]);
  }
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
    if (w && w !== last && window.Plotly && plotDiv.data) {
      last = w;
      Promise.resolve(window.Plotly.Plots.resize(plotDiv)).then(sizeCells).catch(() => {});
    }
  }).observe(plotDiv);
}
watch('value', redraw);
redraw();
"""


def _finite(v):
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


_STATIC_PATHS: set[str] = set()


def serve_plotly_js() -> None:
    """Make plotly.min.js servable, once per process. gr.set_static_paths appends to a process-wide list on
    every call, and Gradio constructs components again while handling requests: called on every construction,
    that list (which every file request and every returned file is checked against, one by one) grew with each
    request, and so did the time and memory per request."""
    path = str(plotly_js_path())
    if path not in _STATIC_PATHS:
        gr.set_static_paths([path])
        _STATIC_PATHS.add(path)


class PlotlyPlayer(gr.HTML):
    """Plays a Plotly figure dict with frames (play/pause, step slider, previous/next buttons)."""

    def __init__(self, value: dict | None = None, *, placeholder: str = "", **kwargs):
        serve_plotly_js()
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
