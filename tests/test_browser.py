"""The app in headless Chromium (Debian's /usr/bin/chromium driven by Playwright), on a local port.

Type a prompt, run, see the canvas fill; the players hold one frame per pass; Play advances the slider to the
last frame; a shipped trace replays; Stop ends a run; trace labels render as text. Writes docs/screenshot.png.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from helpers import SlowTarget, free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("SPOTVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
ROOT = Path(__file__).resolve().parent.parent
SCREENSHOT = ROOT / "docs" / "screenshot.png"
TINY, SLOW = "tiny-block", "tiny-slow"

if not (shutil.which(CHROMIUM) or Path(CHROMIUM).is_file()):
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory, tiny_block_target, tiny_prompt):
    """The shipped example traces if there are any, else one made here with the engine."""
    from spotviz.engine import decode
    from spotviz.samplers.common import DecodeConfig
    from spotviz.ui.examples import TRACE_DIR, list_examples

    if list_examples(TRACE_DIR):
        return TRACE_DIR
    import json

    d = tmp_path_factory.mktemp("traces")
    drafter = "training-free"
    decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=32, seed=2, drafter=drafter, budget=8)).save(
        d / "ex-main.json")
    entry = {"title": "tiny example", "main": "ex-main.json", "baseline": None}
    if drafter != "none":
        decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=32, seed=2)).save(d / "ex-standard.json")
        entry["baseline"] = "ex-standard.json"
    (d / "index.json").write_text(json.dumps({"examples": [entry]}))
    return d


@pytest.fixture(scope="module")
def app_url(tiny_block_target, trace_dir):
    from spotviz.registry import ModelLoadError
    from spotviz.ui.app import build_app, launch

    slow = SlowTarget(tiny_block_target, 0.15)

    def loader(name):
        if name == TINY:
            return tiny_block_target
        if name == SLOW:
            return slow
        raise ModelLoadError(f"unknown test model {name!r}")

    demo = build_app(loader=loader, models=[TINY, SLOW], default_model=TINY, trace_dir=trace_dir, gpu=False)
    _, url, _ = launch(demo, server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, app_url):
    pg = browser.new_page(viewport={"width": 1400, "height": 1600})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(app_url)
    pg.wait_for_selector("#sv-run", timeout=60_000)
    pg.wait_for_function("() => window.Plotly !== undefined", timeout=60_000)
    yield pg
    pg.close()
    assert not errors, f"page errors: {errors}"


# ------------------------------------------------------------------------------------------------- helpers
def select(pg, elem_id: str, value: str) -> None:
    pg.click(f"#{elem_id} input")
    pg.click(f'#{elem_id} li[aria-label="{value}"]')
    pg.wait_for_function(f"() => document.querySelector('#{elem_id} input').value === {value!r}")


def set_number(pg, elem_id: str, value) -> None:
    box = pg.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")
    box.blur()


def player(pg, pid: str) -> dict:
    return pg.evaluate(f"""() => {{
        const r = document.querySelector('#{pid} .svp');
        const gd = document.querySelector('#{pid} .svp-plot');
        const frames = (gd._transitionData && gd._transitionData._frames) ? gd._transitionData._frames.length : 0;
        const slider = gd._fullLayout && gd._fullLayout.sliders && gd._fullLayout.sliders[0];
        return {{nframes: +r.dataset.nframes, frame: +r.dataset.frame, ready: r.dataset.ready,
                 playing: r.dataset.playing, frames: frames, active: slider ? slider.active : null}};
    }}""")


def status(pg) -> str:
    return pg.inner_text("#sv-status")


def wait_status(pg, *words, timeout=60_000) -> str:
    cond = " || ".join(f"t.includes({w!r})" for w in words)
    pg.wait_for_function(f"() => {{ const t = document.querySelector('#sv-status').innerText; return {cond}; }}",
                         timeout=timeout)
    return status(pg)


def masked(pg, canvas="#sv-canvas-main") -> int:
    return pg.evaluate(f"() => document.querySelectorAll('{canvas} .sv-mask:not(.sv-unused)').length")


def watch_masks(pg, canvas="#sv-canvas-main") -> None:
    pg.evaluate(f"""() => {{
        window.__masks = [];
        const el = document.querySelector('{canvas}');
        new MutationObserver(() => window.__masks.push(
            el.querySelectorAll('.sv-mask:not(.sv-unused)').length)).observe(
            el, {{subtree: true, childList: true, characterData: true}});
    }}""")


def passes_in_status(text: str) -> int:
    m = re.search(r"in (\d+) target passes", text)
    assert m, text
    return int(m.group(1))


def play_and_wait(pg, pid: str, timeout=30_000) -> list:
    """Press the figure's ▶ Play button; return the frames shown while it played (their names = pass index)."""
    pg.evaluate(f"""() => {{
        const gd = document.querySelector('#{pid} .svp-plot');
        window.__seen = window.__seen || {{}};
        window.__seen['{pid}'] = [];
        gd.on('plotly_animatingframe', (e) => window.__seen['{pid}'].push(+e.name));
    }}""")
    pg.locator(f"#{pid} .updatemenu-button").first.click()
    pg.wait_for_function(f"""() => {{
        const r = document.querySelector('#{pid} .svp');
        return window.__seen['{pid}'].length > 0 && r.dataset.playing === '0'
               && +r.dataset.frame === +r.dataset.nframes - 1;
    }}""", timeout=timeout)
    return pg.evaluate(f"() => window.__seen['{pid}']")


# --------------------------------------------------------------------------------------------------- tests
def test_run_fills_canvas_players_and_play(page, tiny_block_target, tiny_prompt):
    pg = page
    drafter = "training-free"
    pg.fill("#sv-prompt textarea", tiny_prompt)
    select(pg, "sv-model", SLOW)  # slow passes, so the canvas visibly fills pass by pass
    select(pg, "sv-drafter", drafter)
    set_number(pg, "sv-gen-length", 16)
    watch_masks(pg)
    pg.click("#sv-run")
    text = wait_status(pg, "Done", "Cannot", timeout=120_000)
    assert "Done" in text, text
    seen = pg.evaluate("() => window.__masks")
    positive = [m for m in seen if m > 0]
    assert positive and max(positive) >= 8, f"masked positions were never visible: {seen}"
    assert len(set(positive)) >= 2, f"the canvas did not fill pass by pass: {seen}"
    assert masked(pg) == 0
    n = passes_in_status(text)
    pg.wait_for_function("() => ['sv-order', 'sv-tree'].every(id => "
                         f"+document.querySelector('#' + id + ' .svp').dataset.nframes === {n})", timeout=30_000)
    for pid in ("sv-order", "sv-tree"):
        st = player(pg, pid)
        assert st["nframes"] == st["frames"] == n, (pid, st)
        assert st["frame"] == n - 1 and st["active"] == n - 1
    # previous / next step buttons move the slider
    pg.click("#sv-order .svp-prev")
    pg.wait_for_function("() => +document.querySelector('#sv-order .svp').dataset.frame === "
                         f"{n - 2}")
    assert player(pg, "sv-order")["active"] == n - 2
    pg.click("#sv-order .svp-next")
    pg.wait_for_function(f"() => +document.querySelector('#sv-order .svp').dataset.frame === {n - 1}")
    # Play (from the last frame it starts over) advances the slider through every frame to the last
    for pid in ("sv-order", "sv-tree"):
        seen = play_and_wait(pg, pid)
        assert seen[-1] == n - 1 and len(seen) >= n - 1, (pid, seen)
        assert seen == sorted(seen), (pid, seen)
        assert player(pg, pid)["active"] == n - 1
    if drafter != "none":  # the views can show the standard run instead
        m = re.search(r"standard decoder: (\d+) passes", text)
        assert m, text
        pg.click("#sv-view-sel label:has-text('standard run')")
        pg.wait_for_function("() => +document.querySelector('#sv-order .svp').dataset.nframes === "
                             f"{int(m.group(1))}", timeout=30_000)


def test_stop_ends_a_run(page, tiny_prompt):
    pg = page
    pg.fill("#sv-prompt textarea", tiny_prompt)
    select(pg, "sv-model", SLOW)
    select(pg, "sv-drafter", "none")
    set_number(pg, "sv-gen-length", 40)
    pg.click("#sv-run")
    pg.wait_for_function("() => { const n = document.querySelectorAll('#sv-canvas-main .sv-tok').length;"
                         " const m = document.querySelectorAll('#sv-canvas-main .sv-mask').length;"
                         " return m > 0 && n - m >= 2; }", timeout=60_000)  # a few passes done
    pg.click("#sv-stop")
    wait_status(pg, "Stopped", timeout=10_000)
    pg.wait_for_timeout(400)
    before = pg.inner_html("#sv-canvas-main")
    left = masked(pg)
    pg.wait_for_timeout(1500)  # 10 more passes would have happened by now
    assert pg.inner_html("#sv-canvas-main") == before, "the run went on after Stop"
    assert left > 0 and "Done" not in status(pg)
    # the app is still usable
    select(pg, "sv-model", TINY)
    set_number(pg, "sv-gen-length", 8)
    pg.click("#sv-run")
    assert "Done" in wait_status(pg, "Done", "Cannot", timeout=60_000)


def test_shipped_trace_replays_and_screenshot(page, trace_dir):
    from spotviz.trace import Trace
    from spotviz.ui.examples import list_examples

    pg = page
    examples = list_examples(trace_dir)
    first = examples[0]
    main = Trace.load(first["main"])
    n = len(main.passes)
    # the first example loads with the page
    wait_status(pg, "Example trace", timeout=30_000)
    pg.wait_for_function(f"() => +document.querySelector('#sv-tree .svp').dataset.nframes === {n}", timeout=30_000)
    assert player(pg, "sv-order")["nframes"] == n
    # upload it as a file: replayed with no model
    pg.set_input_files("#sv-upload input[type=file]", [first["main"]] + ([first["baseline"]] if first["baseline"]
                                                                         else []))
    text = wait_status(pg, "Replaying", "Cannot", timeout=30_000)
    assert "Replaying" in text, text
    pg.wait_for_function(f"() => +document.querySelector('#sv-order .svp').dataset.nframes === {n}")
    # the Load example button
    pg.click("#sv-load-example")
    wait_status(pg, "Example trace", timeout=30_000)
    seen = play_and_wait(pg, "sv-tree")
    assert seen[-1] == n - 1
    canvas_text = pg.inner_text("#sv-canvas-main")
    assert main.meta.prompt.strip().splitlines()[0] in canvas_text
    SCREENSHOT.parent.mkdir(exist_ok=True)
    pg.evaluate("() => window.scrollTo(0, 0)")
    pg.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 10_000


def test_bad_trace_and_labels_render_as_text(page, tmp_path):
    import test_views  # tests/ is on sys.path (pytest rootdir-relative import)

    pg = page
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "spotviz-trace", "version": 99}')
    pg.set_input_files("#sv-upload input[type=file]", [str(bad)])
    assert "unsupported trace version" in wait_status(pg, "Cannot", timeout=30_000)
    trace = test_views._tree_trace()
    trace.token_text["21"] = '<img src=x onerror="window.__xss=1">'
    trace.token_text["22"] = "<script>window.__xss=2</script>"
    evil = tmp_path / "evil.json"
    trace.save(evil)
    pg.set_input_files("#sv-upload input[type=file]", [str(evil)])
    assert "Replaying" in wait_status(pg, "Replaying", timeout=30_000)
    pg.wait_for_function("() => +document.querySelector('#sv-tree .svp').dataset.nframes === 3")
    pg.wait_for_timeout(300)
    assert pg.evaluate("() => window.__xss") is None
    assert pg.evaluate("() => document.querySelectorAll('#sv-canvas-main img, #sv-canvas-main script').length") == 0
    text = pg.inner_text("#sv-canvas-main")
    assert '<img src=x onerror="window.__xss=1">' in text and "<script>window.__xss=2</script>" in text
    pg.click("#sv-tree .svp-prev")  # the pass with the tree
    pg.wait_for_function("() => +document.querySelector('#sv-tree .svp').dataset.frame === 1")
    svg_text = pg.evaluate("() => document.querySelector('#sv-tree .svp-plot').textContent")
    assert "<img" in svg_text or "<script>" in svg_text
