"""The app in headless Chromium (Debian's /usr/bin/chromium driven by Playwright), on a local port.

Each test reproduces a defect found by trying the app as a new visitor (issue 11) and checks it is gone: the
example plays by itself and sets the controls; one scrubber drives every view (numbered 1..N everywhere); the
tree is fitted per pass, never stale, with labels that do not collide; streaming changes the page incrementally
(no full redraw per update); Stop always ends in a final, consistent state; ten runs, a Stop, a replay and
uploads in one tab raise no console error and no listener growth; the phone layout puts the output first;
drafter `none` hides the tree; trace labels render as text. Speed figures (blocked main thread, Stop latency,
time to interactive) are measured by scripts/bench_app.py, not asserted here. Screenshots go to a tmp folder
(scripts/screenshots.py refreshes the README's).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import SlowTarget, free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("SPOTVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
TINY, SLOW = "tiny-block", "tiny-slow"
EXPLAINER = "#sv-explainer .sve"

if not (shutil.which(CHROMIUM) or Path(CHROMIUM).is_file()):
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

# counts listeners added minus removed on every EventTarget of the page (a leak shows as growth per run)
LISTENER_PROBE = """
(() => {
  window.__listeners = 0; window.__adds = [];
  const add = EventTarget.prototype.addEventListener, rm = EventTarget.prototype.removeEventListener;
  EventTarget.prototype.addEventListener = function (...a) {
    window.__listeners++;
    if (window.__trace) window.__adds.push((this.nodeName || this.constructor.name) + ':' + a[0] + ':' + (this.className && this.className.baseVal === undefined ? this.className : ''));
    return add.apply(this, a); };
  EventTarget.prototype.removeEventListener = function (...a) { window.__listeners--; return rm.apply(this, a); };
})();
"""


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory, tiny_block_target, tiny_prompt):
    """The shipped example traces if there are any, else one made here with the engine."""
    from spotviz.engine import decode
    from spotviz.samplers.common import DecodeConfig
    from spotviz.ui.examples import TRACE_DIR, list_examples

    if list_examples(TRACE_DIR):
        return TRACE_DIR
    d = tmp_path_factory.mktemp("traces")
    decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=32, seed=2, drafter="training-free",
                                                        budget=8)).save(d / "ex-main.json")
    decode(tiny_block_target, tiny_prompt, DecodeConfig(gen_length=32, seed=2)).save(d / "ex-standard.json")
    (d / "index.json").write_text(json.dumps({"examples": [{"title": "tiny example", "main": "ex-main.json",
                                                            "baseline": "ex-standard.json"}]}))
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


def open_page(browser, url, width=1400, height=1000):
    pg = browser.new_page(viewport={"width": width, "height": height})
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(f"pageerror: {e}"))
    pg.on("console", lambda m: pg.errors.append(f"console: {m.text}") if m.type == "error" else None)
    pg.add_init_script(LISTENER_PROBE)
    pg.goto(url)
    pg.wait_for_selector("#sv-run", timeout=60_000)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}')?.dataset.ready === '1'", timeout=60_000)
    return pg


@pytest.fixture
def page(browser, app_url):
    pg = open_page(browser, app_url)
    yield pg
    errors = list(pg.errors)
    pg.close()
    assert not errors, f"console errors: {errors}"


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


def ex(pg) -> dict:
    return pg.evaluate(f"() => Object.assign({{}}, document.querySelector('{EXPLAINER}').dataset)")


def status(pg) -> str:
    return pg.inner_text("#sv-status")


def wait_status(pg, *words, timeout=60_000) -> str:
    cond = " || ".join(f"t.includes({w!r})" for w in words)
    pg.wait_for_function(f"() => {{ const t = document.querySelector('#sv-status').innerText; return {cond}; }}",
                         timeout=timeout)
    return status(pg)


def wait_example(pg, timeout=60_000) -> None:
    pg.wait_for_function(f"() => +document.querySelector('{EXPLAINER}').dataset.npasses > 0", timeout=timeout)


def pause(pg) -> None:
    if ex(pg)["playing"] == "1":
        pg.click(f"{EXPLAINER} .sve-play")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.playing === '0'")


def scrub_to(pg, k: int) -> None:
    pg.evaluate(f"""() => {{ const s = document.querySelector('{EXPLAINER} .sve-scrub');
        s.value = '{k}'; s.dispatchEvent(new Event('input', {{bubbles: true}})); }}""")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.pass === '{k}'")
    pg.wait_for_timeout(150)  # one paint


VIEWS_JS = f"""() => {{
  const r = document.querySelector('{EXPLAINER}');
  const q = (s) => r.querySelector(s);
  const classes = (sel) => Array.from(r.querySelectorAll(sel + ' .sve-s')).map(s => s.className).join('|');
  return {{
    canvas_main: classes('.sve-run[data-role=main]'), canvas_base: classes('.sve-run[data-role=base]'),
    tree: q('.sve-tree').innerHTML, tree_cap: q('.sve-tree-cap').textContent,
    order_band: q('.sve-order rect[stroke]') ? q('.sve-order rect[stroke]').getAttribute('y') : null,
    speed_mark: q('.sve-speed-chart line[stroke-dasharray]') ?
      q('.sve-speed-chart line[stroke-dasharray]').getAttribute('x1') : null,
    depth: q('.sve-depth').innerHTML, pos: q('.sve-pos').textContent,
  }};
}}"""


def views(pg) -> dict:
    return pg.evaluate(VIEWS_JS)


def tree_boxes(pg) -> list[dict]:
    """Bounding boxes of the tree's node groups (shape + label)."""
    return pg.evaluate(f"""() => Array.from(document.querySelectorAll('{EXPLAINER} .sve-tree g.nd text')).map(t => {{
        const b = t.getBBox(); return {{x: b.x, y: b.y, w: b.width, h: b.height, text: t.textContent}}; }})""")


def overlaps(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]


# --------------------------------------------------------------------------------------------------- tests
def test_example_plays_by_itself_sets_the_controls_and_one_scrubber_moves_every_view(page, trace_dir):
    from spotviz.trace import Trace
    from spotviz.ui.examples import list_examples

    pg = page
    entry = list_examples(trace_dir)[0]
    main = Trace.load(entry["main"])
    base = Trace.load(entry["baseline"]) if entry["baseline"] else None
    n = max(len(main.passes), len(base.passes) if base else 0)
    wait_example(pg)
    # the guided first minute: it plays by itself, with the how-to-read caption
    pg.wait_for_function(f"() => +document.querySelector('{EXPLAINER}').dataset.pass >= 2", timeout=20_000)
    assert ex(pg)["playing"] == "1" and int(ex(pg)["npasses"]) == n
    assert pg.is_visible(f"{EXPLAINER} .sve-guide") and "How to read this" in pg.inner_text(f"{EXPLAINER} .sve-guide")
    # the example set the controls: Run does what is shown
    assert pg.input_value("#sv-prompt textarea") == main.meta.prompt
    top = int(pg.get_attribute("#sv-gen-length input[type=range]", "max"))  # the context minus the prompt
    assert int(pg.input_value("#sv-gen-length input[type=number]")) == min(main.meta.gen_length, top)
    assert pg.input_value("#sv-drafter input") == main.meta.drafter
    # prompt and Run above the fold at 1400x1000, the canvases beside them
    run_box = pg.locator("#sv-run").bounding_box()
    canvas_box = pg.locator(f"{EXPLAINER} .sve-run[data-role=main]").bounding_box()
    prompt_box = pg.locator("#sv-prompt").bounding_box()
    assert run_box["y"] + run_box["height"] < 1000 and canvas_box["y"] < 1000 - 150
    assert canvas_box["x"] > prompt_box["x"] + prompt_box["width"]
    # one scrubber: every view changes together, numbered 1..N
    pause(pg)
    tree_pass = next(p.index + 1 for p in main.passes if p.tree and p.index >= 2)
    scrub_to(pg, tree_pass - 1)
    before = views(pg)
    scrub_to(pg, tree_pass)
    after = views(pg)
    changed = {k for k in before if before[k] != after[k]}
    assert changed >= {"canvas_main", "canvas_base", "tree", "order_band", "speed_mark", "pos"}, changed
    assert after["pos"] == f"pass {tree_pass} / {n}" and f"pass {tree_pass} " in after["tree_cap"]
    # the arrow keys step the same timeline
    pg.locator("body").click(position={"x": 5, "y": 5})
    pg.keyboard.press("ArrowRight")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.pass === '{tree_pass + 1}'")
    pg.keyboard.press("ArrowLeft")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.pass === '{tree_pass}'")
    # "Run this example yourself": the controls take the example's settings and the run starts live
    pg.fill("#sv-prompt textarea", "something else")
    session = ex(pg)["session"]
    pg.click("#sv-run-this")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.session !== '{session}'",
                         timeout=60_000)
    assert pg.input_value("#sv-prompt textarea") == main.meta.prompt
    text = wait_status(pg, "Done", "Cannot", timeout=120_000)
    assert "Done" in text, text


def test_tree_is_fitted_per_pass_never_stale_and_its_labels_do_not_collide(page, trace_dir):
    from spotviz.trace import Trace
    from spotviz.ui.examples import list_examples

    pg = page
    main = Trace.load(list_examples(trace_dir)[0]["main"])
    wait_example(pg)
    pause(pg)
    scrub_to(pg, 0)  # before pass 1: no tree at all (it once showed another pass's tree here)
    assert pg.locator(f"{EXPLAINER} .sve-tree g.nd").count() == 0
    assert "Before pass 1" in pg.evaluate(f"() => document.querySelector('{EXPLAINER} .sve-tree').textContent")
    heights = set()
    for p in main.passes[:12]:
        scrub_to(pg, p.index + 1)
        nodes = pg.locator(f"{EXPLAINER} .sve-tree g.nd").count()
        if not p.tree:
            assert nodes == 0
            continue
        assert nodes == len(p.tree) + any(not c.drafted for c in p.commits)  # + the own decision (bonus)
        cap = pg.inner_text(f"{EXPLAINER} .sve-tree-cap")
        assert f"pass {p.index + 1} " in cap and f"{p.states} states verified" in cap  # the budget chosen
        boxes = tree_boxes(pg)
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not overlaps(a, b), (p.index, a, b)
        heights.add(pg.evaluate(f"() => +document.querySelector('{EXPLAINER} .sve-tree').getAttribute('height')"))
        # hovering a drafted node highlights its slots on the canvas
        node = pg.locator(f"{EXPLAINER} .sve-tree g.nd.rej").first
        if node.count():
            want = sorted(int(x) for x in node.get_attribute("data-slots").split())
            node.locator("text").hover()
            lit = pg.evaluate(f"() => Array.from(document.querySelectorAll('{EXPLAINER} .sve-run[data-role=main] "
                              ".sve-s.hl')).map(s => +s.dataset.pos).sort((a, b) => a - b)")
            assert lit == want and want, (lit, want)
            pg.mouse.move(2, 2)
    assert len(heights) > 1  # fitted per pass, not sized for the largest tree


def test_streaming_is_incremental_and_stop_ends_in_a_final_consistent_state(page, tiny_prompt):
    pg = page
    wait_example(pg)
    pg.fill("#sv-prompt textarea", tiny_prompt)
    select(pg, "sv-model", SLOW)  # 0.15 s per pass
    select(pg, "sv-drafter", "none")
    set_number(pg, "sv-gen-length", 40)
    pg.click("#sv-run")
    pg.wait_for_function(f"() => {{ const r = document.querySelector('{EXPLAINER}');"
                         " return r.dataset.state === 'live' && +r.dataset.npasses >= 3; }", timeout=60_000)
    # a slot element drawn early is still the same element later: updates change slots, never redraw
    pg.evaluate(f"() => {{ window.__slot = document.querySelector('{EXPLAINER} .sve-run[data-role=main] .sve-s'); }}")
    n0 = int(ex(pg)["npasses"])
    pg.wait_for_function(f"() => +document.querySelector('{EXPLAINER}').dataset.npasses >= {n0 + 5}",
                         timeout=30_000)
    assert pg.evaluate(f"() => window.__slot.isConnected && window.__slot === document.querySelector("
                       f"'{EXPLAINER} .sve-run[data-role=main] .sve-s')")
    # the speed-up chart holds this run only (it once showed the previous run until the drafter run ended)
    assert pg.evaluate(f"() => document.querySelectorAll('{EXPLAINER} .sve-speed-chart polyline')[2]"
                       ".getAttribute('points').split(' ').length") == int(ex(pg)["npasses"]) + 1
    pg.click("#sv-stop")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'stopped'", timeout=2_000)
    assert "Stopped" in wait_status(pg, "Stopped", timeout=2_000)
    shown = ex(pg)
    canvas = pg.inner_html(f"{EXPLAINER} .sve-canvases")
    pg.wait_for_timeout(1500)  # 10 more passes would have happened by now
    assert pg.inner_html(f"{EXPLAINER} .sve-canvases") == canvas, "the views changed after Stop"
    assert ex(pg)["npasses"] == shown["npasses"] and ex(pg)["state"] == "stopped"
    assert "Stopped" in status(pg) and "Decoding" not in pg.inner_text("#sv-out")
    assert int(shown["pass"]) == int(shown["npasses"]) > 0  # the final state: the last pass decoded
    # the app is still usable
    select(pg, "sv-model", TINY)
    set_number(pg, "sv-gen-length", 8)
    pg.click("#sv-run")
    assert "Done" in wait_status(pg, "Done", "Cannot", timeout=60_000)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'done'", timeout=5_000)


def test_ten_runs_stop_replay_and_uploads_in_one_tab_without_errors_or_listener_growth(page, tiny_prompt,
                                                                                        trace_dir, tmp_path):
    from spotviz.ui.examples import list_examples

    pg = page
    wait_example(pg)
    pg.fill("#sv-prompt textarea", tiny_prompt)
    select(pg, "sv-model", TINY)
    select(pg, "sv-drafter", "training-free")
    set_number(pg, "sv-gen-length", 16)
    counts = []
    for i in range(10):
        session = ex(pg)["session"]
        pg.click("#sv-run")
        pg.wait_for_function(f"() => {{ const r = document.querySelector('{EXPLAINER}');"
                             f" return r.dataset.session !== '{session}' && r.dataset.state === 'done'; }}",
                             timeout=60_000)
        text = status(pg)
        assert "Done" in text and "identical" in text, text
        counts.append(pg.evaluate("() => window.__listeners"))
        if i == 1:
            pg.evaluate("() => { window.__trace = true; }")
    print("listeners after each run:", counts)
    assert counts[-1] - counts[1] <= 5, f"listeners grow with every run: {counts} {pg.evaluate('() => window.__adds')}"
    # a Stop between runs, a replay of a shipped trace, a garbage upload
    pg.click("#sv-stop")
    wait_status(pg, "Stopped", timeout=5_000)
    entry = list_examples(trace_dir)[0]
    pg.locator("#sv-replay").get_by_text("Examples, replay and share").click()
    pg.set_input_files("#sv-upload input[type=file]", [entry["main"]] + ([entry["baseline"]] if entry["baseline"]
                                                                         else []))
    assert "Replaying" in wait_status(pg, "Replaying", "Cannot", timeout=30_000)
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(bytes(range(128, 256)) * 8)
    pg.set_input_files("#sv-upload input[type=file]", [str(garbage)])
    text = wait_status(pg, "Cannot replay", timeout=30_000)
    assert "not a spotviz trace" in text and "codec" not in text, text
    pg.wait_for_timeout(500)
    # a refused run (empty prompt) leaves the views as they were
    pg.fill("#sv-prompt textarea", "   ")
    pg.click("#sv-run")
    assert "prompt is empty" in wait_status(pg, "Cannot run", timeout=30_000)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'done'", timeout=5_000)
    # (the page fixture fails the test on any console error or page error)


def test_phone_layout_puts_the_output_first_and_wide(browser, app_url, tmp_path):
    pg = open_page(browser, app_url, 420, 900)
    try:
        wait_example(pg)
        run_box = pg.locator("#sv-run").bounding_box()
        canvas = pg.locator(f"{EXPLAINER} .sve-run[data-role=main]").bounding_box()
        settings = pg.locator("#sv-settings").bounding_box()
        assert run_box["y"] + run_box["height"] < 450  # prompt and Run first
        assert canvas["width"] >= 340, canvas  # a real canvas, not a ~145 px column
        assert canvas["y"] < settings["y"], (canvas, settings)  # the output comes before the settings
        assert pg.evaluate("() => document.documentElement.scrollWidth") <= 420 + 1  # no sideways scrolling
        pg.screenshot(path=str(tmp_path / "phone.png"))  # screenshots of the suite stay in its tmp folder
        assert not pg.errors, pg.errors
    finally:
        pg.close()


def test_standard_only_hides_the_tree_and_labels_render_as_text(page, tmp_path):
    import test_views  # tests/ is on sys.path (pytest rootdir-relative import)

    pg = page
    wait_example(pg)
    pg.locator("#sv-replay").get_by_text("Examples, replay and share").click()
    trace = test_views._tree_trace()
    trace.token_text["21"] = '<img src=x onerror="window.__xss=1">'
    trace.token_text["22"] = "<script>window.__xss=2</script>"
    trace.token_text["23"] = "\n    return x"  # code: a newline and indentation
    evil = tmp_path / "evil.json"
    trace.save(evil)
    pg.set_input_files("#sv-upload input[type=file]", [str(evil)])
    assert "Replaying" in wait_status(pg, "Replaying", timeout=30_000)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.npasses === '3'")
    pg.wait_for_timeout(300)
    assert pg.evaluate("() => window.__xss") is None
    assert pg.evaluate(f"() => document.querySelectorAll('{EXPLAINER} img, {EXPLAINER} script').length") == 0
    text = pg.inner_text(f"{EXPLAINER} .sve-run[data-role=main] .sve-text")
    assert '<img src=x onerror="window.__xss=1">' in text and "<script>window.__xss=2</script>" in text
    assert "\n    return x" in text  # newlines and indentation kept (monospace, pre-wrap)
    scrub_to(pg, 2)  # the pass with the tree
    svg_text = pg.evaluate(f"() => document.querySelector('{EXPLAINER} .sve-tree').textContent")
    assert "<img" in svg_text or "<script>" in svg_text
    # a standard run alone: no tree view at all (it once showed 64 steps of "no draft tree")
    std = test_views._standard_trace()
    path = tmp_path / "standard.json"
    std.save(path)
    pg.set_input_files("#sv-upload input[type=file]", [str(path)])
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.npasses === '{len(std.passes)}'",
                         timeout=30_000)
    pg.wait_for_timeout(300)
    assert not pg.is_visible(f"{EXPLAINER} .sve-tree-panel")
    assert pg.input_value("#sv-drafter input") == "none"
