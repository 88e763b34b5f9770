"""The app in headless Chromium (Debian's /usr/bin/chromium driven by Playwright), on a local port.

Each test reproduces a defect found by trying the app as a new visitor (issues 11 and 17) and checks it is gone:
the example plays by itself and sets the controls; one scrubber drives every view, and the views are Plotly
figures (served by the app itself: no request leaves 127.0.0.1) whose data follow the scrubber; the tree of
pass k is pass k's, its nodes labelled slot:token, and a finished run rests on its last drafted pass; streaming
changes the page incrementally; Stop ends a live run in a final state and leaves a finished run's status alone;
ten runs, a Stop, a replay and uploads in one tab raise no console error and no listener growth; the phone
layout puts the output first and keeps the scrubber on screen; the space bar plays; drafter `none` hides the
tree and draws the standard run blue; trace labels render as text; a 5,000-character prompt runs; a model
switch updates banner, prompt and menu; a clamped length is said; the downloaded page opens at pass 1 and every
frame shows its own pass. Speed figures (blocked main thread, Stop latency, time to interactive) are measured
by scripts/bench_app.py, not asserted here. Screenshots go to a tmp folder (scripts/screenshots.py refreshes the
README's).
"""
from __future__ import annotations

import itertools
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

# counts the listeners on live targets: added minus removed, on the window, the document and nodes still in the
# page (a leak shows as growth per run; Plotly's redraws replace nodes, and listeners on dropped nodes go with them)
LISTENER_PROBE = """
(() => {
  const targets = [], counts = new WeakMap();
  window.__adds = [];
  const add = EventTarget.prototype.addEventListener, rm = EventTarget.prototype.removeEventListener;
  EventTarget.prototype.addEventListener = function (...a) {
    if (!counts.has(this)) { counts.set(this, 0); targets.push(new WeakRef(this)); }
    counts.set(this, counts.get(this) + 1);
    if (window.__trace) window.__adds.push((this.nodeName || this.constructor.name) + ':' + a[0]);
    return add.apply(this, a); };
  EventTarget.prototype.removeEventListener = function (...a) {
    if (counts.has(this)) counts.set(this, counts.get(this) - 1);
    return rm.apply(this, a); };
  Object.defineProperty(window, '__listeners', {get: () => {
    let n = 0;
    for (const r of targets) { const t = r.deref(); if (t && (!(t instanceof Node) || t.isConnected)) n += counts.get(t); }
    return n; }});
})();
"""


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory, tiny_block_target, tiny_prompt):
    """The shipped example traces if there are any, else one made here with the engine."""
    from spotviz.engine import decode
    from spotviz.samplers.config import DecodeConfig
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
    pg.errors, pg.outside = [], []
    pg.on("pageerror", lambda e: pg.errors.append(f"pageerror: {e}"))
    pg.on("console", lambda m: pg.errors.append(f"console: {m.text}") if m.type == "error" else None)
    pg.on("request", lambda r: pg.outside.append(r.url) if not r.url.startswith(("http://127.0.0.1", "data:",
                                                                                   "blob:", "file:")) else None)
    pg.on("response", lambda r: pg.errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 500 else None)
    pg.add_init_script(LISTENER_PROBE)
    pg.goto(url)
    pg.wait_for_selector("#sv-run", timeout=60_000)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}')?.dataset.ready === '1'", timeout=60_000)
    return pg


def checked_page(browser, app_url, width=1400, height=1000):
    """A page of the app, closed after the test, which fails if the page logged an error or left 127.0.0.1."""
    pg = open_page(browser, app_url, width, height)
    yield pg
    errors, outside = list(pg.errors), list(pg.outside)
    pg.close()
    assert not errors, f"console errors: {errors}"
    assert not outside, f"requests left 127.0.0.1: {outside}"


@pytest.fixture
def page(browser, app_url):
    yield from checked_page(browser, app_url)


@pytest.fixture
def phone_page(browser, app_url):
    yield from checked_page(browser, app_url, 390, 844)


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
    pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
        return r.dataset.pass === '{k}' && r.dataset.drawn === r.dataset.session + ':{k}'; }}""")  # every view drawn


def fig(pg, view: str) -> list[dict] | None:
    """The traces of a Plotly view as drawn (name, x, y, text, customdata, line colour)."""
    return pg.evaluate(f"""() => {{
      const d = document.querySelector('{EXPLAINER} .sve-plot[data-view={view}]');
      if (!d || !d.data) return null;
      return d.data.map(t => ({{name: t.name, x: Array.from(t.x || []), y: Array.from(t.y || []),
        text: Array.from(t.text || []), customdata: Array.from(t.customdata || []),
        color: t.line ? t.line.color : null}}));
    }}""")


def tree_of(pg) -> dict:
    """What the tree view draws: node ids by kind, the labels, the bonus, the caption."""
    traces = {t["name"]: t for t in fig(pg, "tree")}
    return {"accepted": traces["accepted"]["customdata"], "rejected": traces["rejected"]["customdata"],
            "root": traces["root"]["customdata"], "bonus": traces["bonus"]["text"],
            "labels": traces["accepted"]["text"] + traces["rejected"]["text"],
            "caption": pg.inner_text(f"{EXPLAINER} .sve-tree-cap"), "shown": int(ex(pg)["treePass"])}


def tiny_training_free(pg, gen_length: int, prompt: str | None = None) -> None:
    """Set the controls for a live run of the tiny model with the training-free drafter (prompt: keep it if None)."""
    if prompt is not None:
        pg.fill("#sv-prompt textarea", prompt)
    select(pg, "sv-model", TINY)
    select(pg, "sv-drafter", "training-free")
    set_number(pg, "sv-gen-length", gen_length)


def expected_tree(p) -> dict:
    ids = {n.id for n in p.tree}
    root = [n.id for n in p.tree if n.parent not in ids]
    acc = [i for i in p.accepted_path if i in ids and i not in root]
    return {"accepted": sorted(acc), "rejected": sorted(ids - set(acc) - set(root)), "root": root,
            "bonus": any(not c.drafted for c in p.commits)}


def assert_tree_is_pass(pg, p) -> None:
    got, want = tree_of(pg), expected_tree(p)
    assert sorted(got["accepted"]) == want["accepted"] and sorted(got["rejected"]) == want["rejected"], (p.index, got)
    assert got["root"] == want["root"] and bool(got["bonus"]) == want["bonus"], (p.index, got)
    assert got["shown"] == p.index + 1


# --------------------------------------------------------------------------------------------------- tests
def test_example_plays_and_one_scrubber_moves_every_plotly_view_served_locally(page, trace_dir):
    from spotviz.trace import Trace
    from spotviz.ui.examples import list_examples

    pg = page
    entry = list_examples(trace_dir)[0]
    main = Trace.load(entry["main"])
    base = Trace.load(entry["baseline"]) if entry["baseline"] else None
    n = max(len(main.passes), len(base.passes) if base else 0)
    wait_example(pg)
    pg.wait_for_function(f"() => +document.querySelector('{EXPLAINER}').dataset.pass >= 2", timeout=20_000)
    assert ex(pg)["playing"] == "1" and int(ex(pg)["npasses"]) == n
    assert pg.is_visible(f"{EXPLAINER} .sve-guide") and "How to read this" in pg.inner_text(f"{EXPLAINER} .sve-guide")
    # Plotly figures, from plotly.js the app serves itself
    pg.wait_for_function(f"() => document.querySelectorAll('{EXPLAINER} .js-plotly-plot').length === 4")
    assert pg.evaluate("() => !!window.Plotly && Array.from(document.scripts).some(s => "
                       "s.src.includes('/gradio_api/file=') && s.src.endsWith('plotly-basic.min.js'))")
    # the example set the controls, but not the prompt: it is another model's example (the default model, TINY,
    # has none of its own), and Run decodes the default model's own prompt; the status says whose example it is
    assert pg.input_value("#sv-prompt textarea") != main.meta.prompt and main.meta.model != TINY
    assert f"Recorded example of another model ({main.meta.model})" in status(pg)
    assert pg.input_value("#sv-drafter input") == main.meta.drafter
    run_box = pg.locator("#sv-run").bounding_box()
    canvas_box = pg.locator(f"{EXPLAINER} .sve-run[data-role=main]").bounding_box()
    assert run_box["y"] + run_box["height"] < 1000 and canvas_box["y"] < 1000 - 150
    # Stop pauses a playing example where it is (it is what moves on the page; it changes nothing else)
    if ex(pg)["playing"] == "0":  # (it may have played to its end by now)
        pg.click(f"{EXPLAINER} .sve-play")
        pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.playing === '1'")
    status_before = status(pg)
    pg.click("#sv-stop")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.playing === '0'", timeout=2_000)
    assert int(ex(pg)["pass"]) < n  # (paused, not played to its end)
    assert status(pg) == status_before and ex(pg)["state"] != "stopped"
    # one scrubber: every view's data changes together, numbered 1..N
    pause(pg)
    k = next(p.index + 1 for p in main.passes if p.tree and len(p.tree) > 1 and p.index >= 2)
    scrub_to(pg, k - 1)
    before = {v: fig(pg, v) for v in ("tree", "race", "depth", "order")}
    canvas = pg.inner_html(f"{EXPLAINER} .sve-lanes")
    scrub_to(pg, k)
    after = {v: fig(pg, v) for v in ("tree", "race", "depth", "order")}
    assert all(before[v] != after[v] for v in before), [v for v in before if before[v] == after[v]]
    assert pg.inner_html(f"{EXPLAINER} .sve-lanes") != canvas
    assert pg.inner_text(f"{EXPLAINER} .sve-pos") == f"pass {k} / {n}" and f"Pass {k}:" in tree_of(pg)["caption"]
    order = {t["name"]: t for t in after["order"]}
    drawn = sorted(order["the model's own decision"]["y"] + order["drafted, accepted"]["y"])
    assert drawn == sorted(p.index + 1 for p in main.passes[:k] for _ in p.commits)  # passes 1..k, numbered from 1
    # the arrow keys step the same timeline; the space bar plays and pauses inside the views (its tooltip says so)
    # and scrolls the page elsewhere; keys with a modifier (Alt+arrow: the browser's Back) and keys on the page's
    # own controls are theirs
    pg.locator("body").click(position={"x": 5, "y": 5})
    pg.keyboard.press("ArrowRight")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.pass === '{k + 1}'")
    pg.keyboard.press("ArrowLeft")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.pass === '{k}'")
    for keys in ("Alt+ArrowRight", "Control+ArrowRight", "Space"):
        pg.keyboard.press(keys)
    pg.focus("#sv-run")
    pg.keyboard.press("ArrowRight")
    pg.wait_for_timeout(300)
    assert ex(pg)["pass"] == str(k) and ex(pg)["playing"] == "0"
    pg.locator(f"{EXPLAINER} .sve-pos").click()
    pg.keyboard.press("Space")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.playing === '1'")
    pg.keyboard.press("Space")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.playing === '0'")
    pg.keyboard.press("End")  # (inside the views: the last pass, then the start)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.pass === '{n}'")
    pg.keyboard.press("Home")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.pass === '0'")
    pg.wait_for_timeout(300)  # (the start: the prompt before any pass, said so rather than "pass 0")
    assert pg.inner_text(f"{EXPLAINER} .sve-pos") == f"before pass 1 / {n}"
    assert "the prompt alone" in pg.inner_text(f"{EXPLAINER} .sve-run[data-role=main]")
    # a prompt of one's own: "Run this example yourself" goes (it would put the example's prompt over it) and comes
    # back with the example
    assert pg.is_visible("#sv-status .sv-run-this-note")  # (the status line's sentence on the button)
    pg.fill("#sv-prompt textarea", "something else")
    pg.wait_for_selector("#sv-run-this", state="hidden")
    assert not pg.is_visible("#sv-status .sv-run-this-note")  # (it goes with the button)
    pg.locator("#sv-replay").get_by_text("Examples, replay and share").click()
    pg.click("#sv-load-example")
    pg.wait_for_selector("#sv-run-this", state="visible")
    pg.wait_for_selector("#sv-status .sv-run-this-note", state="visible")
    assert pg.input_value("#sv-prompt textarea") == main.meta.prompt
    # "Run this example yourself": the controls take the example's settings and the run starts live
    session = ex(pg)["session"]
    pg.click("#sv-run-this")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.session !== '{session}'",
                         timeout=60_000)
    assert pg.input_value("#sv-prompt textarea") == main.meta.prompt
    assert "Done" in wait_status(pg, "Done", "Cannot", timeout=120_000)
    # Ctrl+Enter in the prompt box runs it (Enter alone is a new line)
    session = ex(pg)["session"]
    pg.focus("#sv-prompt textarea")
    pg.keyboard.press("Control+Enter")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.session !== '{session}'",
                         timeout=60_000)
    assert pg.input_value("#sv-prompt textarea") == main.meta.prompt  # (no new line typed)
    assert "Done" in wait_status(pg, "Done", "Cannot", timeout=120_000)
    # a live run opens without the guide; ? brings it back (without the note on how an example plays)
    assert not pg.is_visible(f"{EXPLAINER} .sve-guide")
    pg.click(f"{EXPLAINER} .sve-help")
    assert pg.is_visible(f"{EXPLAINER} .sve-guide") and not pg.is_visible(f"{EXPLAINER} .sve-guide .sve-ex-only")
    assert pg.get_attribute(f"{EXPLAINER} .sve-help", "aria-expanded") == "true"
    pg.click(f"{EXPLAINER} .sve-guide-close")
    assert not pg.is_visible(f"{EXPLAINER} .sve-guide")
    assert pg.get_attribute(f"{EXPLAINER} .sve-help", "aria-expanded") == "false"


def test_tree_of_every_pass_is_that_pass_labelled_slot_token_and_a_run_rests_on_its_last_drafted_pass(page,
                                                                                                     trace_dir):
    from spotviz.trace import Trace
    from spotviz.ui.examples import list_examples

    pg = page
    main = Trace.load(list_examples(trace_dir)[0]["main"])
    wait_example(pg)
    pause(pg)
    scrub_to(pg, 0)  # before pass 1: no tree at all (it once showed another pass's tree here)
    t = tree_of(pg)
    assert t["accepted"] == t["rejected"] == t["root"] == [] and not t["bonus"] and "Before pass 1" in t["caption"]
    for p in main.passes[:14]:
        scrub_to(pg, p.index + 1)
        if not p.tree:
            assert tree_of(pg)["root"] == [] and "drafted nothing" in tree_of(pg)["caption"]
            continue
        assert_tree_is_pass(pg, p)
        t = tree_of(pg)
        assert all(lbl.split(":")[0].isdigit() for lbl in t["labels"]), t["labels"]  # slot:token
        if len(p.tree) == 1:
            assert "drafted nothing" in t["caption"]  # a one-node tree says why
        else:
            assert f"{p.states} state{'s' * (p.states != 1)} verified" in t["caption"]
    # hovering a node lights its slots on the canvas
    k = next(p.index + 1 for p in main.passes if len(p.tree) > 2)
    scrub_to(pg, k)
    x, y = pg.evaluate(f"""() => {{ const d = document.querySelector('{EXPLAINER} .sve-plot[data-view=tree]');
        const t = d.data.find(t => t.name === 'rejected'), L = d._fullLayout, r = d.getBoundingClientRect();
        return [r.left + L._size.l + L.xaxis.l2p(t.x[0]), r.top + L._size.t + L.yaxis.l2p(t.y[0])]; }}""")
    pg.mouse.move(x - 4, y - 4)
    pg.mouse.move(x, y)  # hover a rejected node
    pg.wait_for_timeout(300)
    assert pg.locator(f"{EXPLAINER} .sve-run[data-role=main] .sve-s.hl").count() >= 1
    # its hover text is the page's tooltip, inside the window (Plotly's label was cut off by the scrolled tree box)
    tip = pg.evaluate(f"""() => {{ const t = document.querySelector('{EXPLAINER} .sve-tip'), r = t.getBoundingClientRect();
        return [t.hidden, t.textContent, r.left >= 0 && r.right <= window.innerWidth && r.bottom <= window.innerHeight]; }}""")
    assert not tip[0] and tip[1].startswith("drafted slot") and tip[2], tip
    # the end of the timeline: the last drafted pass, never an empty tree
    scrub_to(pg, int(ex(pg)["npasses"]))
    last = max(p.index for p in main.passes if len(p.tree) > 1)
    assert_tree_is_pass(pg, main.passes[last])


def slow_standard_run(pg, prompt: str, gen_length: int, live_passes: int) -> None:
    """From the example page: Run the standard decoder on the slow model (0.15 s a pass) and wait until the page
    shows it live with `live_passes` passes."""
    wait_example(pg)
    pg.fill("#sv-prompt textarea", prompt)
    select(pg, "sv-model", SLOW)
    select(pg, "sv-drafter", "none")
    set_number(pg, "sv-gen-length", gen_length)
    pg.click("#sv-run")
    pg.wait_for_function(f"() => {{ const r = document.querySelector('{EXPLAINER}');"
                         f" return r.dataset.state === 'live' && +r.dataset.npasses >= {live_passes}; }}", timeout=60_000)


def test_streaming_is_incremental_and_stop_ends_a_live_run_but_not_a_finished_one(page, tiny_prompt):
    pg = page
    slow_standard_run(pg, tiny_prompt, 56, live_passes=3)
    pg.evaluate(f"() => {{ window.__slot = document.querySelector('{EXPLAINER} .sve-run[data-role=main] .sve-s'); }}")
    n0 = int(ex(pg)["npasses"])
    pg.wait_for_function(f"() => +document.querySelector('{EXPLAINER}').dataset.npasses >= {n0 + 3}",
                         timeout=30_000)
    assert pg.evaluate(f"() => window.__slot.isConnected && window.__slot === document.querySelector("
                       f"'{EXPLAINER} .sve-run[data-role=main] .sve-s')")
    # the standard decoder alone: its line is blue (the colour of the model's own decisions), not green
    race = [t for t in fig(pg, "race") if t["color"]]
    assert race and all(t["color"] == "#2c6fbb" for t in race if "pass on screen" not in t["name"]), race
    pg.click("#sv-stop")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'stopped'", timeout=5_000)
    assert "Stopped" in wait_status(pg, "Stopped", timeout=5_000)
    shown = ex(pg)
    canvas = pg.inner_html(f"{EXPLAINER} .sve-lanes")
    pg.wait_for_timeout(1500)  # 10 more passes would have happened by now
    assert pg.inner_html(f"{EXPLAINER} .sve-lanes") == canvas, "the views changed after Stop"
    assert ex(pg)["npasses"] == shown["npasses"] and ex(pg)["state"] == "stopped"
    assert int(shown["pass"]) == int(shown["npasses"]) > 0
    # a finished run: Stop leaves "Done ... identical" as it is
    tiny_training_free(pg, 8)
    pg.click("#sv-run")
    done = wait_status(pg, "Done", "Cannot", timeout=60_000)
    assert "Done" in done and "identical" in done
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'done'", timeout=5_000)
    pg.click("#sv-stop")
    pg.wait_for_timeout(800)
    assert status(pg) == done and ex(pg)["state"] == "done"


def test_a_stop_that_came_after_the_run_finished_on_the_server_shows_the_run_finished(page, tiny_prompt):
    """Stop ends the page's run at once, but where the server had already finished (its last lines and "Done"
    still on their way), the page shows the finished run, as the status line does: never "Stopped" views beside a
    "Done" status. (The stop hook alone, without the server's cancel: the server runs to its end.)"""
    pg = page
    slow_standard_run(pg, tiny_prompt, 24, live_passes=2)
    pg.evaluate("() => window.__svStop()")
    assert ex(pg)["state"] == "stopped" and "Stopped after" in status(pg)
    done = wait_status(pg, "Done", timeout=60_000)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'done'", timeout=5_000)
    head = pg.inner_text(f"{EXPLAINER} .sve-headline")
    assert not head.startswith("Stopped") and "Done" in done, (head, done)
    assert f"in {ex(pg)['npasses']} target passes" in done  # (the views hold every pass of the finished run)


def test_stop_says_where_the_run_stopped_and_the_views_fit_what_arrived(phone_page, tiny_prompt):
    """Stop before the run's first line: the previous run stays on screen (its lines are dropped if they come).
    Stop during the drafter's run: the standard decoder's lane says it did not run, the race and commit-order axes
    fit the passes received, and the headline counts what was received, in the room it had (the views stay). On a
    phone, where the dimmed totals are longest."""
    pg = phone_page  # (opened at that size: a reload aborted the example's stream, which logs a console error)
    wait_example(pg)
    pg.click("#sv-settings .label-wrap")  # (closed on a phone)
    before = ex(pg)["session"]
    pg.fill("#sv-prompt textarea", tiny_prompt)
    select(pg, "sv-model", SLOW)  # 0.15 s per pass
    select(pg, "sv-drafter", "training-free")
    select(pg, "sv-budget", "8")  # (auto would first measure this slow model's cost curve)
    set_number(pg, "sv-gen-length", 56)
    # (a Stop between Run and the run's first line, as the page sees it: the start hook, then the stop hook)
    pg.evaluate("() => { window.__svStart(); window.__svStop(); }")
    assert "before its first pass" in wait_status(pg, "Stopped", timeout=5_000)
    assert ex(pg)["session"] == before and ex(pg)["state"] != "starting"
    pg.click("#sv-run")
    pg.wait_for_function(f"() => {{ const r = document.querySelector('{EXPLAINER}');"
                         " return r.dataset.state === 'live' && +r.dataset.npasses >= 3; }", timeout=60_000)
    bar = f"() => Math.round(document.querySelector('{EXPLAINER} .sve-bar').getBoundingClientRect().top + scrollY)"
    live_bar = pg.evaluate(bar)
    pg.click("#sv-stop")
    text = wait_status(pg, "Stopped after", timeout=5_000)
    assert "the standard decoder: not run" in text, text
    pg.wait_for_timeout(1000)
    n = int(ex(pg)["npasses"])
    assert "not run" in pg.inner_text(f"{EXPLAINER} .sve-run[data-role=base]")
    head = pg.inner_text(f"{EXPLAINER} .sve-headline")
    assert head.startswith("Stopped") and f"stopped after {n} passes" in head, head
    # the room held for the figures stays (the views do not move at Stop), filled by the totals it lacks, dimmed,
    # with no blank band under them (the note's room went to them)
    assert "counted when a run reaches its end" in head
    assert abs(pg.evaluate(bar) - live_bar) <= 12, (pg.evaluate(bar), live_bar)
    band = pg.evaluate(f"""() => {{ const h = document.querySelector('{EXPLAINER} .sve-headline');
        return Math.round(h.getBoundingClientRect().bottom - h.lastElementChild.getBoundingClientRect().bottom); }}""")
    assert band <= 30, band
    xr = pg.evaluate(f"() => document.querySelector('{EXPLAINER} .sve-plot[data-view=race]').layout.xaxis.range[1]")
    rows = pg.evaluate(f"() => document.querySelector('{EXPLAINER} .sve-plot[data-view=order]').layout.yaxis.range[0]")
    assert xr <= n + 1 and rows <= n + 1, (xr, rows, n)  # (while it streamed: the longest run, 56 passes)


def test_the_length_slider_gives_back_the_chosen_length_after_a_long_prompt(page, tiny_block_target):
    pg = page
    wait_example(pg)
    select(pg, "sv-model", TINY)
    pg.fill("#sv-prompt textarea", "ROMEO.\n")
    pg.locator("#sv-prompt textarea").blur()
    pg.wait_for_timeout(600)
    top = int(pg.get_attribute("#sv-gen-length input[type=range]", "max"))
    chosen = top - 8
    set_number(pg, "sv-gen-length", chosen)
    pg.fill("#sv-prompt textarea", "ROMEO.\n" + "O Romeo, wherefore art thou Romeo? " * 20)
    pg.locator("#sv-prompt textarea").blur()
    pg.wait_for_function("() => +document.querySelector('#sv-gen-length input[type=range]').max < " + str(chosen),
                         timeout=5_000)
    assert "lowered to" in pg.inner_text("#sv-gen-length")
    pg.fill("#sv-prompt textarea", "ROMEO.\n")
    pg.locator("#sv-prompt textarea").blur()
    pg.wait_for_function("() => +document.querySelector('#sv-gen-length input[type=number]').value === " + str(chosen),
                         timeout=5_000)
    assert "lowered" not in pg.inner_text("#sv-gen-length")


def length_released(response) -> bool:
    """Whether `response` answers the length slider's release (typed_length: four inputs; a key's input has one)."""
    if "/run/predict" not in response.url:
        return False
    try:
        return len(json.loads(response.request.post_data or "{}").get("data", [])) == 4
    except ValueError:
        return False


def test_a_length_typed_key_by_key_is_the_length_typed(page):
    """Typing a length into the slider's box at a person's pace gives that length: checked at every key, "40"
    became 8 at the "4" (below the least) and then 80, "120" became the maximum with "you chose 820"; the length is
    checked when the box is left, and a length out of range is then brought in and said so."""
    pg = page
    wait_example(pg)
    select(pg, "sv-model", TINY)
    box = pg.locator("#sv-gen-length input[type=number]")
    top = int(pg.get_attribute("#sv-gen-length input[type=range]", "max"))
    for (typed, want), pace in itertools.product((("40", 40), ("16", 16), (str(top + 300), top), ("3", 8)),
                                                 (True, False)):
        # (the click into the box is a release of the length it holds: its answer is awaited first, as a person's
        # first key comes after it; Gradio drops an event fired while the same event's answer is on its way, so on a
        # busy machine the release of a quick "3" + Tab was lost behind it)
        with pg.expect_response(length_released, timeout=10_000):
            box.click()
        box.press("Control+a")
        box.press_sequentially(typed, delay=150 if pace else 0)
        if pace:
            pg.wait_for_timeout(400)  # (each key's input answered while the box still has focus)
        box.press("Tab")  # (at once, or after the answers to the keys came back)
        noted = "true" if int(typed) != want else "false"
        pg.wait_for_function(f"() => +document.querySelector('#sv-gen-length input[type=number]').value === {want} "
                             f"&& document.querySelector('#sv-gen-length').innerText.includes('you chose {typed}') "
                             f"=== {noted}", timeout=10_000)
        pg.wait_for_timeout(400)
        assert box.input_value() == str(want), typed
        note = pg.inner_text("#sv-gen-length")
        assert (f"you chose {typed}" in note) == (int(typed) != want), (typed, note)


def test_a_live_run_is_watchable_its_lanes_are_laid_out_first_and_it_rests_on_a_drafted_pass(page, tiny_prompt):
    pg = page
    wait_example(pg)
    tiny_training_free(pg, 40, tiny_prompt)
    select(pg, "sv-budget", "8")  # (auto may judge no tree worth its forward on a loaded machine: nothing to rest on)
    session = ex(pg)["session"]
    pg.evaluate(f"""() => {{ window.__lanes = []; window.__passes = new Set();
      new MutationObserver(() => {{ const r = document.querySelector('{EXPLAINER}');
        window.__lanes.push(r.querySelectorAll('.sve-run').length); window.__passes.add(r.dataset.pass); }})
        .observe(document.querySelector('{EXPLAINER}'), {{attributes: true, subtree: true, childList: true}}); }}""")
    pg.click("#sv-run")
    pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
        return r.dataset.session !== '{session}' && r.dataset.state === 'done'
          && r.dataset.pass === r.dataset.npasses; }}""", timeout=120_000)
    lanes = pg.evaluate("() => window.__lanes.filter((n, i, a) => i === 0 || n !== a[i - 1])")
    assert lanes[-1] == 2 and 1 not in lanes[lanes.index(2):], lanes  # two lanes from the start: no jump
    n = int(ex(pg)["npasses"])
    seen = pg.evaluate("() => Array.from(window.__passes).map(Number)")
    middle = sorted(k for k in seen if 0 < k < n)
    assert len(middle) >= 3 and middle[0] <= 2, (seen, n)  # watched from its start, not just its end
    t = tree_of(pg)
    assert t["shown"] >= 1 and (t["accepted"] or t["rejected"]), t  # rests on a drafted pass, never empty


def test_a_runs_figures_do_not_move_the_views_and_stop_pauses_views_catching_up(page, tiny_prompt):
    """From Run until a run's figures come, the headline and the status line keep the height they had: the views
    under them stay where they were (they moved 130-150 px when the previous run's figures went and the new ones
    came). A Stop while the views are still catching up with a run that ended on the server pauses them where they
    are (it jumped to the end), the finished run's status stays, and the headline says they are paused."""
    pg = page
    wait_example(pg)
    tiny_training_free(pg, 40, tiny_prompt)
    top = f"() => Math.round(document.querySelector('{EXPLAINER} .sve-lanes').getBoundingClientRect().top + scrollY)"
    pg.evaluate(f"""() => {{ window.__tops = []; const f = {top};
      (function tick() {{ window.__tops.push(f()); if (window.__tops.length < 4000) requestAnimationFrame(tick); }})(); }}""")
    session = ex(pg)["session"]
    pg.click("#sv-run")
    pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
        return r.dataset.session !== '{session}' && r.dataset.state === 'done'
          && r.dataset.pass === r.dataset.npasses; }}""", timeout=120_000)
    pg.wait_for_timeout(300)
    tops = pg.evaluate("() => window.__tops")
    # (the status line may grow by three lines: a run cut at its length with small trees says so at length, and
    # ends in the button that runs it with larger trees)
    assert max(tops) - min(tops) <= 90, (sorted(set(tops)), status(pg))
    # Stop while the views catch up: they pause where they are
    session = ex(pg)["session"]
    pg.click("#sv-run")
    done = wait_status(pg, "Done", "Cannot", timeout=60_000)
    shown = ex(pg)
    if shown["session"] != session and int(shown["pass"]) < int(shown["npasses"]) - 2:  # (still catching up)
        pg.click("#sv-stop")
        pg.wait_for_timeout(200)
        k = ex(pg)["pass"]
        pg.wait_for_timeout(1000)
        after = ex(pg)
        assert after["pass"] == k and int(k) < int(after["npasses"]), (k, after)
        assert after["playing"] == "0" and status(pg) == done
        # and the headline says why nothing stopped and how the rest is seen
        head = f"{EXPLAINER} .sve-headline"
        assert f"Paused at pass {k} of {after['npasses']}" in pg.inner_text(head)
        pg.click(f"{EXPLAINER} .sve-play")
        pg.wait_for_function(f"""() => document.querySelector('{EXPLAINER}').dataset.playing === '1'
            && !document.querySelector('{head}').innerText.includes('Paused at pass')""", timeout=5_000)
        pause(pg)  # (a pause of the visitor's own, and a pass scrubbed to later: Stop is not blamed for them)
        scrub_to(pg, 2)
        assert "Paused at pass" not in pg.inner_text(head)


def test_ten_runs_stop_replay_and_uploads_in_one_tab_without_errors_or_listener_growth(page, tiny_prompt,
                                                                                        trace_dir, tmp_path):
    from spotviz.ui.examples import list_examples

    pg = page
    wait_example(pg)
    tiny_training_free(pg, 16, tiny_prompt)
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
    # the download list shows each file's whole name (it once read "spotviz-... .json")
    pg.locator("#sv-replay").get_by_text("Examples, replay and share").click()
    pg.wait_for_selector("#sv-download td.filename", timeout=10_000)
    names = pg.evaluate("""() => Array.from(document.querySelectorAll('#sv-download td.filename .stem'))
        .map(a => [a.textContent.trim(), a.scrollWidth <= a.clientWidth + 1])""")
    assert len(names) == 3 and all(fits for _, fits in names), names
    # each download link is named by its file for a screen reader (Gradio names it by its size alone)
    pg.wait_for_function("""() => Array.from(document.querySelectorAll('#sv-download td.download a'))
        .every(a => (a.getAttribute('aria-label') || '').startsWith('Download spotviz-'))""", timeout=5_000)
    pg.click("#sv-stop")
    entry = list_examples(trace_dir)[0]
    pg.set_input_files("#sv-upload input[type=file]", [entry["main"]] + ([entry["baseline"]] if entry["baseline"]
                                                                         else []))
    assert "Replaying" in wait_status(pg, "Replaying", "Cannot", timeout=30_000)
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(bytes(range(128, 256)) * 8)
    pg.set_input_files("#sv-upload input[type=file]", [str(garbage)])
    text = wait_status(pg, "Cannot replay", timeout=30_000)
    assert "not a spotviz trace" in text and "codec" not in text, text
    other = tmp_path / "other.json"
    other.write_text('{"name": "some other JSON"}')
    pg.set_input_files("#sv-upload input[type=file]", [str(other)])
    pg.wait_for_function("() => document.querySelector('#sv-status').innerText.includes('other.json')",
                         timeout=30_000)
    text = status(pg)
    assert "not a spotviz trace" in text and "None" not in text, text
    pg.fill("#sv-prompt textarea", "   ")
    pg.click("#sv-run")
    assert "prompt is empty" in wait_status(pg, "Cannot run", timeout=30_000)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'done'", timeout=5_000)


def test_phone_layout_keeps_the_page_order_and_the_scrubber_by_the_tree(browser, app_url, tmp_path):
    """On a phone the page is one column in the tab order: the prompt, Run, the settings (closed, so the status and
    the views start on the first screen), then the views."""
    pg = open_page(browser, app_url, 420, 900)
    try:
        wait_example(pg)
        run_box = pg.locator("#sv-run").bounding_box()
        canvas = pg.locator(f"{EXPLAINER} .sve-run[data-role=main]").bounding_box()
        settings = pg.locator("#sv-settings").bounding_box()
        assert run_box["y"] + run_box["height"] < 450
        assert canvas["width"] >= 340, canvas
        assert settings["y"] < canvas["y"] and not pg.locator("#sv-drafter").is_visible()  # closed
        assert pg.locator("#sv-status").bounding_box()["y"] < 900
        # Tab goes down the page: nothing focused lies above the control focused before it
        pg.focus("#sv-prompt textarea")
        tops = []
        for _ in range(9):
            pg.keyboard.press("Tab")
            tops.append(pg.evaluate("() => document.activeElement.getBoundingClientRect().top + window.scrollY"))
        status_top = pg.evaluate("() => document.querySelector('#sv-status').getBoundingClientRect().top + window.scrollY")
        assert tops == sorted(tops) and tops[-1] > status_top, (tops, status_top)
        assert pg.evaluate("() => document.documentElement.scrollWidth") <= 420 + 1
        pause(pg)
        # every figure drawn for the pass shown, inside the screen's width, and it stays so (a figure wider than its
        # grid column once widened the column, which redrew the figure wider, without end)
        pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
            return r.dataset.drawn === r.dataset.session + ':' + r.dataset.pass; }}""", timeout=20_000)
        widths = f"() => Array.from(document.querySelectorAll('{EXPLAINER} .sve-plot')).map(d => d.parentNode.clientWidth)"
        first = pg.evaluate(widths)
        pg.wait_for_timeout(1000)
        assert pg.evaluate(widths) == first and max(first) <= 420, first
        # the race's legend fits the room left for it above the plot (when Plotly had to push the margin down, the
        # passes axis' labels were drawn inside the plot)
        sizes = pg.evaluate(f"""() => {{ const L = document.querySelector('{EXPLAINER} .sve-plot[data-view=race]')
            ._fullLayout; return [L._size.t, L.margin.t]; }}""")
        assert sizes[0] == sizes[1], sizes
        assert pg.evaluate("() => document.documentElement.scrollWidth") <= 420 + 1
        # a tree wider than its box scrolls inside it, and its caption says so (and only then)
        wide = pg.evaluate(f"""() => {{ const b = document.querySelector('{EXPLAINER} .sve-tree-panel .sve-plot-box');
            return b.scrollWidth > b.clientWidth + 1; }}""")
        assert wide == ("scroll it sideways" in pg.inner_text(f"{EXPLAINER} .sve-tree-cap"))
        pg.locator(f"{EXPLAINER} .sve-tree-panel").scroll_into_view_if_needed()
        pg.evaluate(f"() => document.querySelector('{EXPLAINER} .sve-tree-panel').scrollIntoView({{block: 'center'}})")
        pg.wait_for_timeout(300)
        bar = pg.locator(f"{EXPLAINER} .sve-bar").bounding_box()
        assert 0 <= bar["y"] and bar["y"] + bar["height"] <= 900, bar  # the scrubber stays on screen
        pg.screenshot(path=str(tmp_path / "phone.png"))
        assert not pg.errors, pg.errors
    finally:
        pg.close()


def test_a_tablets_column_is_one_column_and_a_tap_on_a_tree_node_explains_it(browser, app_url):
    """A touch screen whose explainer column is narrow (a tablet: the controls beside it) gets one column of views;
    a tap on a tree node (touch screens send Plotly no hover) shows the node's text inside the window and lights its
    slots; a tap elsewhere takes the text away; a tree wider than the box shows where its walk ended, never a label
    cut at its left edge, and fades out at its right edge while it goes on past it."""
    ctx = browser.new_context(viewport={"width": 820, "height": 1180}, has_touch=True, is_mobile=True)
    try:
        pg = ctx.new_page()
        errors = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(app_url)
        pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}')?.dataset.ready === '1'", timeout=60_000)
        wait_example(pg)
        pause(pg)
        lefts = pg.evaluate(f"""() => Array.from(document.querySelectorAll('{EXPLAINER} .sve-panel:not([hidden])'))
            .map(p => Math.round(p.getBoundingClientRect().left))""")
        assert pg.evaluate(f"() => document.querySelector('{EXPLAINER}').classList.contains('sve-narrow')")
        assert len(lefts) >= 3 and len(set(lefts)) == 1, lefts  # one column, not two squeezed ones
        k = next(k for k in range(1, int(ex(pg)["npasses"]) + 1) if _tree_has_rejected(pg, k))
        pg.evaluate(f"() => document.querySelector('{EXPLAINER} .sve-tree-panel').scrollIntoView({{block: 'center'}})")
        pg.wait_for_timeout(300)
        x, y = pg.evaluate(f"""() => {{ const d = document.querySelector('{EXPLAINER} .sve-plot[data-view=tree]');
            const t = d.data.find(t => t.name === 'rejected'), L = d._fullLayout;
            const b = d.parentNode; b.scrollLeft = Math.max(0, L._size.l + L.xaxis.l2p(t.x[0]) - b.clientWidth / 2);
            const r2 = d.getBoundingClientRect();
            return [r2.left + L._size.l + L.xaxis.l2p(t.x[0]), r2.top + L._size.t + L.yaxis.l2p(t.y[0])]; }}""")
        pg.wait_for_timeout(200)
        pg.touchscreen.tap(x, y)
        pg.wait_for_function(f"() => !document.querySelector('{EXPLAINER} .sve-tip').hidden", timeout=3_000)
        tip = pg.evaluate(f"""() => {{ const t = document.querySelector('{EXPLAINER} .sve-tip'), r = t.getBoundingClientRect();
            return [t.textContent, r.left >= 0 && r.right <= window.innerWidth && r.bottom <= window.innerHeight]; }}""")
        assert tip[0].startswith("drafted slot") and tip[1], tip
        # (lit slots off the screen are quoted in their lane's text, a run of them in one pair of brackets)
        assert "lane above" not in tip[0] or ("lane above, in brackets: …" in tip[0] and "][" not in tip[0]), tip
        assert pg.locator(f"{EXPLAINER} .sve-run[data-role=main] .sve-s.hl").count() >= 1
        pg.touchscreen.tap(5, 5)
        pg.wait_for_function(f"() => document.querySelector('{EXPLAINER} .sve-tip').hidden", timeout=3_000)
        assert pg.locator(f"{EXPLAINER} .sve-run[data-role=main] .sve-s.hl").count() == 0
        # a tree wider than the narrow box scrolls to a column's start: no node's label cut at the box's left edge
        wide = 0
        for k in range(1, int(ex(pg)["npasses"]) + 1):
            scrub_to(pg, k)
            pg.wait_for_timeout(150)
            w, cut, end, fade = pg.evaluate(f"""() => {{ const b = document.querySelector('{EXPLAINER} .sve-tree-panel .sve-plot-box');
                const e = b.getBoundingClientRect().left, d = b.querySelector('.sve-plot'), L = d._fullLayout;
                const xs = d.data.filter(t => t.name === 'accepted' || t.name === 'bonus').flatMap(t => t.x);
                const px = xs.length ? L._size.l + L.xaxis.l2p(Math.max(...xs)) - b.scrollLeft : null;
                return [b.scrollWidth > b.clientWidth + 1, Array.from(b.querySelectorAll('.textpoint'))
                  .filter(t => {{ const r = t.getBoundingClientRect(); return r.width && r.left < e - 1 && r.right > e + 1; }})
                  .map(t => t.textContent), px === null || (px >= 0 && px <= b.clientWidth - 20),
                  [b.classList.contains('sve-more-right'), b.scrollLeft < b.scrollWidth - b.clientWidth - 8]]; }}""")
            wide += w
            assert not cut, (k, cut)
            assert fade[0] == fade[1], (k, fade)  # (the right edge fades exactly while the tree goes on past it)
            assert end, k  # (and where the walk ended, the star or its last node, is in the box)
        assert wide, "the example's trees should be wider than a tablet's box somewhere"
        box = f"{EXPLAINER} .sve-tree-panel .sve-plot-box"  # scrolled to its end by hand: no fade there
        pg.evaluate(f"() => {{ const b = document.querySelector('{box}'); b.scrollLeft = b.scrollWidth; }}")
        pg.wait_for_function(f"() => !document.querySelector('{box}').classList.contains('sve-more-right')",
                             timeout=3_000)
        assert not errors, errors
    finally:
        ctx.close()


def _tree_has_rejected(pg, k: int) -> bool:
    scrub_to(pg, k)
    return bool(tree_of(pg)["rejected"])


def test_the_bars_stop_stops_a_live_run_and_shows_only_while_one_is_live(page, tiny_prompt):
    """The bar above the views (it floats at the top of a scrolled page) has a Stop of its own while a run is live:
    the page's Stop, far above the views on a phone."""
    pg = page
    stop = f"{EXPLAINER} .sve-bar .sve-stop"
    wait_example(pg)
    assert not pg.locator(stop).is_visible()
    slow_standard_run(pg, tiny_prompt, 56, live_passes=3)
    assert pg.locator(stop).is_visible()
    pg.click(stop)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'stopped'", timeout=5_000)
    assert "Stopped" in wait_status(pg, "Stopped", timeout=5_000)
    assert not pg.locator(stop).is_visible()


def test_the_offers_of_larger_trees_and_a_stricter_tau_are_buttons_in_the_status_line(browser, app_url, monkeypatch):
    """After a run whose budget auto kept its trees small the status line says why and ends in the button that runs
    it again at budget 16; after a threshold run that left nothing to draft, in one that runs it at tau 0.99: on a
    phone Run is a screen above, and the offer and the button are where the visitor reads; the run it starts compares
    itself with the one before. (The server runs in this
    process: its verdicts are patched so that auto's choice and the tiny model's confidences on this machine do not
    decide whether there is an offer.)"""
    import spotviz.ui.session as session

    small = session.small_trees_note
    monkeypatch.setattr(session, "small_trees_note", lambda trace: small(trace) or (
        "" if not trace.meta.budget_auto else ". Budget auto kept its trees small"))
    monkeypatch.setattr(session, "nothing_to_draft", lambda trace, idle=None: True)
    pg = open_page(browser, app_url, 390, 844)
    try:
        wait_example(pg)
        pg.click("#sv-settings .label-wrap")  # (closed on a phone)
        tiny_training_free(pg, 16)
        pg.click("#sv-run")
        wait_status(pg, "Done")
        act = pg.locator("#sv-status .sv-act")
        assert act.inner_text() == "Run it again with larger trees (budget 16)"
        box, run = act.bounding_box(), pg.locator("#sv-run").bounding_box()
        assert 0 <= box["y"] and box["y"] + box["height"] <= 844, box  # in view, where Run is not
        assert run["y"] + run["height"] <= 0, run
        assert not pg.locator("#sv-larger").is_visible()  # (the control it presses: one button on screen, not two)
        act.click()
        pg.wait_for_function("() => !document.querySelector('#sv-status .sv-act') && "
                             "document.querySelector('#sv-status').innerText.includes('Done')", timeout=60_000)
        assert pg.locator("#sv-budget input").input_value() == "16"  # a fixed budget: no offer after it
        assert "tree budget 16" in pg.inner_text(f"{EXPLAINER} .sve-run[data-role=main]")  # the run it started
        assert "Against your run before at budget auto: " in pg.inner_text("#sv-status")  # (what it changed)
        # threshold mode at tau 0.9, every pass "filling its window": the offer of tau 0.99
        pg.locator("#sv-mode").get_by_text("threshold", exact=True).click()
        assert pg.locator("#sv-tau input[type=number]").input_value() == "0.99"  # (the app's start: SPOT-Sets' room)
        set_number(pg, "sv-tau", 0.9)
        select(pg, "sv-drafter", "training-free")
        pg.click("#sv-run")
        pg.wait_for_function("() => document.querySelector('#sv-status').innerText.includes('nothing left to guess')",
                             timeout=60_000)
        act = pg.locator("#sv-status .sv-act")
        assert act.inner_text() == "Run it again at tau 0.99" and not pg.locator("#sv-stricter").is_visible()
        act.click()
        pg.wait_for_function("() => !document.querySelector('#sv-status .sv-act') && "
                             "document.querySelector('#sv-status').innerText.includes('Done')", timeout=60_000)
        assert pg.locator("#sv-tau input[type=number]").input_value() == "0.99"
        assert "0.99" in pg.inner_text(f"{EXPLAINER} .sve-run[data-role=main]")  # the run it started
        assert "Against your run before at tau 0.9: " in pg.inner_text("#sv-status")
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
    trace.token_text["23"] = "\n    return x"
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
    assert "\n    return x" in text
    pause(pg)
    scrub_to(pg, 2)  # the pass with the tree
    svg_text = pg.evaluate(f"() => document.querySelector('{EXPLAINER} .sve-plot[data-view=tree]').textContent")
    assert "3:<img" in svg_text and "4:<script" in svg_text, svg_text
    std = test_views._standard_trace()
    path = tmp_path / "standard.json"
    std.save(path)
    pg.set_input_files("#sv-upload input[type=file]", [str(path)])
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.npasses === '{len(std.passes)}'",
                         timeout=30_000)
    pg.wait_for_timeout(300)
    assert not pg.is_visible(f"{EXPLAINER} .sve-tree-panel")
    assert pg.input_value("#sv-drafter input") == "none"
    assert all(t["color"] == "#2c6fbb" for t in fig(pg, "race") if t["color"] and "pass on screen" not in t["name"])


def test_long_prompt_model_switch_and_a_clamped_length_are_handled(page):
    pg = page
    wait_example(pg)
    long_prompt = "ROMEO.\n" + "O Romeo, wherefore art thou Romeo? " * 150  # 5,000+ characters
    pg.fill("#sv-prompt textarea", long_prompt)
    pg.locator("#sv-prompt textarea").blur()
    pg.wait_for_timeout(800)
    select(pg, "sv-drafter", "none")
    set_number(pg, "sv-gen-length", 16)
    pg.click("#sv-run")
    text = wait_status(pg, "Done", "Cannot", "rror", timeout=60_000)
    assert "Done" in text and "beginning was dropped" in text, text
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'done'", timeout=10_000)
    shown = pg.inner_text(f"{EXPLAINER} .sve-run[data-role=main] .sve-prompt")
    assert shown.startswith("…") and len(shown) < len(long_prompt) // 4  # the tokens the model saw
    # 9999 in the length box: Gradio clamps it; the page says so, under the slider
    set_number(pg, "sv-gen-length", 9999)
    top = pg.get_attribute("#sv-gen-length input[type=range]", "max")
    pg.wait_for_function("() => document.querySelector('#sv-gen-length').innerText.includes('you chose 9999')",
                         timeout=5_000)
    assert f"lowered to {top}" in pg.inner_text("#sv-gen-length")
    # and below the slider's least
    set_number(pg, "sv-gen-length", 3)
    pg.wait_for_function("() => document.querySelector('#sv-gen-length').innerText.includes('you chose 3')",
                         timeout=5_000)
    assert pg.input_value("#sv-gen-length input[type=number]") == "8"
    # a model switch: banner, prompt and menu follow
    pg.fill("#sv-prompt textarea", "ROMEO.\n")
    select(pg, "sv-model", SLOW)
    pg.wait_for_function(f"() => document.querySelector('#sv-model-banner').innerText.includes('{SLOW}')",
                         timeout=10_000)
    assert f"Model ready: {TINY} " not in pg.inner_text("#sv-model-banner")  # (the wrapped model is named inside)


def test_the_downloaded_page_opens_at_pass_1_and_every_frame_shows_its_own_pass(page, browser, tiny_prompt,
                                                                                tmp_path):
    from spotviz.trace import Trace

    pg = page
    wait_example(pg)
    tiny_training_free(pg, 24, tiny_prompt)
    pg.click("#sv-run")
    assert "Done" in wait_status(pg, "Done", "Cannot", timeout=60_000)
    pg.locator("#sv-replay").get_by_text("Examples, replay and share").click()
    pg.wait_for_selector("#sv-download a", timeout=10_000)
    hrefs = pg.evaluate("() => Array.from(document.querySelectorAll('#sv-download a')).map(a => a.href)")
    html_url = next(h for h in hrefs if ".html" in h)
    json_url = next(h for h in hrefs if "training-free" in h and ".json" in h)
    main = Trace.from_json(pg.request.get(json_url).body())
    saved_page = tmp_path / "run.html"  # downloaded, then opened from the disk
    saved_page.write_bytes(pg.request.get(html_url).body())
    html_url = saved_page.as_uri()
    offline = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors, outside = [], []
    offline.on("pageerror", lambda e: errors.append(str(e)))
    offline.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    offline.route("**/*", lambda r: (outside.append(r.request.url), r.abort()) if not r.request.url.startswith(
        ("data:", "blob:", "about:")) and r.request.url != html_url else r.continue_())
    try:
        offline.goto(html_url)
        offline.wait_for_function("() => document.querySelector('.sve')?.dataset.ready === '1' && window.Plotly",
                                  timeout=60_000)
        global EXPLAINER
        saved, EXPLAINER = EXPLAINER, "#sv-page .sve"
        try:
            assert ex(offline)["pass"] == "1" and ex(offline)["playing"] == "0"  # it opens at pass 1
            for p in main.passes:  # every frame: the tree of that pass, never another's tree or star
                scrub_to(offline, p.index + 1)
                if len(p.tree) > 1:
                    assert_tree_is_pass(offline, p)
                elif p.index == 0:
                    assert tree_of(offline)["root"] == [] and not tree_of(offline)["bonus"]
            scrub_to(offline, 1)
            offline.click("#sv-page .sve-play")
            offline.wait_for_function("() => document.querySelector('#sv-page .sve').dataset.pass === '3'",
                                      timeout=20_000)
            assert 300 <= float(ex(offline)["stepMs"]) <= 600  # the pace: 300-600 ms a frame at 1x
        finally:
            EXPLAINER = saved
    finally:
        offline.close()
    assert not errors and not outside, (errors, outside)


def test_the_page_reads_for_screen_readers_and_respects_reduced_motion(browser, app_url):
    """Headings, a live status line, figures named by what they show, a scrubber that says which pass; and a visitor
    who asks for reduced motion gets the example at rest on its last pass instead of playing."""
    pg = open_page(browser, app_url)
    try:
        wait_example(pg)
        heads = pg.evaluate("() => Array.from(document.querySelectorAll('h1, h2, h3')).map(h => h.tagName)")
        assert heads[0] == "H1" and heads.count("H3") == 4 and "H2" in heads
        assert pg.get_attribute("#sv-status", "aria-live") == "polite"
        pg.wait_for_function(f"""() => Array.from(document.querySelectorAll('{EXPLAINER} .sve-plot'))
            .every(d => d.getAttribute('role') === 'img' && (d.getAttribute('aria-label') || '').length > 20)""",
                             timeout=20_000)
        k, n = ex(pg)["pass"], ex(pg)["npasses"]
        assert pg.get_attribute(f"{EXPLAINER} .sve-scrub", "aria-valuetext") in (f"pass {k} of {n}",
                                                                                  f"pass {int(k) + 1} of {n}")
        lane = pg.inner_text(f"{EXPLAINER} .sve-run[data-role=main] .sve-sr")
        assert "drafted and accepted" in lane and "Text so far" in lane
        assert pg.get_attribute(f"{EXPLAINER} .sve-run[data-role=main] .sve-text", "aria-hidden") == "true"
        # a dropdown opens when Tab reaches it and closes when Tab leaves it (its list covered the controls below)
        pg.focus("#sv-drafter input")
        pg.wait_for_timeout(200)
        pg.keyboard.press("Tab")
        pg.wait_for_function("() => !document.querySelector('ul[role=listbox]')", timeout=3_000)
        assert pg.get_attribute("#sv-drafter input", "aria-expanded") == "false"
        assert not pg.errors, pg.errors
    finally:
        pg.close()
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, reduced_motion="reduce")
    try:
        pg = ctx.new_page()
        pg.goto(app_url)
        pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}')?.dataset.ready === '1'", timeout=60_000)
        wait_example(pg)
        pg.wait_for_timeout(1500)  # (a playing example would have moved on by now)
        assert ex(pg)["playing"] == "0" and ex(pg)["pass"] == ex(pg)["npasses"]
    finally:
        ctx.close()


def test_the_guide_opened_on_a_phone_is_brought_into_view(phone_page):
    """On a phone the guide opens under the text panels, below the screen from the ? button: a tap seemed to do
    nothing. The page now scrolls it into view (under the bar, which floats at the top once scrolled off)."""
    pg = phone_page
    wait_example(pg)
    guide, help_ = f"{EXPLAINER} .sve-guide", f"{EXPLAINER} .sve-help"
    if pg.is_visible(guide):  # (an example opens with it: closed first, as a visitor may have done)
        pg.click(f"{EXPLAINER} .sve-guide-close")
    pg.locator(help_).scroll_into_view_if_needed()
    pg.click(help_)
    where = f"() => {{ const r = document.querySelector('{guide}').getBoundingClientRect(); return [r.top, r.bottom]; }}"
    pg.wait_for_function(f"() => {{ const r = document.querySelector('{guide}').getBoundingClientRect(); "
                         "return r.top >= 0 && r.top < 744; }", timeout=5_000)  # (a smooth scroll: until it ends)
    pg.wait_for_timeout(300)
    top, bottom = pg.evaluate(where)
    bar = pg.locator(f"{EXPLAINER} .sve-bar").bounding_box()
    assert 0 <= top < 844 - 100 and top >= bar["y"] + bar["height"] - 1, (top, bottom, bar)


def test_a_stopped_race_keeps_its_passes_axis_under_the_plot(page, tiny_prompt):
    """A race's legend grows as its lanes start; when Plotly pushed the top margin itself while the race was redrawn
    pass after pass, a stopped race kept the axes of an earlier layout: the passes axis' labels inside the plot (seen
    after every Stop of a race). The room is laid out for every lane from the start and the margin is never pushed."""
    pg = page
    wait_example(pg)
    pg.fill("#sv-prompt textarea", tiny_prompt)
    select(pg, "sv-model", SLOW)
    select(pg, "sv-drafter", "training-free")
    set_number(pg, "sv-gen-length", 40)
    pg.check("#sv-race input[type=checkbox]")
    pg.click("#sv-run")
    lanes = f"{EXPLAINER} .sve-run .sve-s"
    pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}'); return r.dataset.state ===
        'live' && document.querySelectorAll('{EXPLAINER} .sve-plot[data-view=race] .legend .traces').length >= 2; }}""",
                         timeout=60_000)
    assert pg.locator(lanes).count() > 0
    pg.click("#sv-stop")
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.state === 'stopped'", timeout=10_000)
    pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
        return r.dataset.drawn === r.dataset.session + ':' + r.dataset.pass; }}""", timeout=20_000)
    pg.wait_for_timeout(500)
    t, margin, bottom, ticks, legend_top, legend_bottom, _ = pg.evaluate(race_layout())
    assert t == margin and ticks and min(ticks) >= bottom - 1, (t, margin, bottom, ticks)
    assert legend_top >= -1 and legend_bottom <= t + 1, (legend_top, legend_bottom, t)  # (its room, not above it)


def race_layout() -> str:
    """A script that reads the race figure as drawn: plot area top, top margin, plot area bottom, the passes axis'
    label tops, the legend's top and bottom (relative to the figure) and the figure's width."""
    race = f"{EXPLAINER} .sve-plot[data-view=race]"
    return f"""() => {{ const d = document.querySelector('{race}');
        const L = d._fullLayout, top = d.getBoundingClientRect().top;
        const box = d.querySelector('.legend').getBoundingClientRect();
        return [L._size.t, L.margin.t, L._size.t + L._size.h,
                Array.from(d.querySelectorAll('.xtick text')).map((e) => e.getBoundingClientRect().top - top),
                box.top - top, box.bottom - top, L.width]; }}"""


def test_a_finished_races_legend_stays_in_its_room_at_every_width(page, tiny_prompt):
    """Every lane of a finished race is in the legend, laid out in rows above the plot: at the widths the page gives
    the race (a narrow window lays the views out in one column, a wide one gives the race a wider panel) a row holds
    fewer entries than their text's width suggests (Plotly adds a line sample and gaps): counted at the text alone, a
    4-lane legend at about 430 px ran 30 px above the figure, cut off."""
    pg = page
    wait_example(pg)
    pg.fill("#sv-prompt textarea", tiny_prompt)
    select(pg, "sv-drafter", "training-free")
    set_number(pg, "sv-gen-length", 16)
    pg.check("#sv-race input[type=checkbox]")
    pg.click("#sv-run")
    assert "Done" in wait_status(pg, "Done", "Cannot", timeout=120_000)
    race = f"{EXPLAINER} .sve-plot[data-view=race]"
    for viewport in (1400, 640, 1700):
        pg.set_viewport_size({"width": viewport, "height": 1180})
        pg.wait_for_timeout(1500)
        pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
            return r.dataset.drawn === r.dataset.session + ':' + r.dataset.pass; }}""", timeout=20_000)
        t, margin, bottom, ticks, legend_top, legend_bottom, wide = pg.evaluate(race_layout())
        entries = pg.locator(f"{race} .legend .traces").count()
        assert entries == 4 and min(ticks) >= bottom - 1 and legend_top >= -1 and legend_bottom <= t + 1, (
            viewport, wide, entries, ticks, bottom, legend_top, legend_bottom, t)


def test_a_figure_redrawn_with_another_note_shows_the_new_note(page):
    """A figure's note (a Plotly annotation) follows the run: a threshold run that drafted nothing said "no tree
    verified yet" under its finished run, because Plotly.react with a layout transition (even of 0 ms) drew the new
    layout but kept the annotation's old text. The depth view of one run, live and then finished, drawn into one
    figure as the explainer does."""
    said = page.evaluate("""async () => {
        const SV = window.SV, S = SV.newSession({id: 't', source: 'live', runs: [['main', 'SPOT-Sets']]});
        SV.ingest(S, {t: 'run', r: 'main', meta: {drafter: 'spot-sets'}});
        SV.ingest(S, {t: 'pass', r: 'main', c: [], n: 16, tree: null});
        const div = document.createElement('div');
        document.body.appendChild(div);
        const text = () => Array.from(div.querySelectorAll('.annotation-text')).map((e) => e.textContent).join('|');
        const draw = async () => { const f = SV.views.depth(S, 1, {width: 300, height: 120});
                                   await window.Plotly.react(div, f.data, f.layout, SV.PLOT_CONFIG); return text(); };
        const live = await draw();
        SV.ingest(S, {t: 'end', r: 'main', final: [], end: 16, why: [], counters: null});
        const done = await draw();
        div.remove();
        return [live, done]; }""")
    assert said == ["no tree verified yet", "no tree verified in this run"]
