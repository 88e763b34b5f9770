"""Refresh the README's screenshots of the app: docs/screenshot.png (desktop, 1400x1000, the whole page) and
docs/screenshot-phone.png (phone, 420x900, the first screen), in headless Chromium.

    python scripts/screenshots.py [--model shakespeare-bd] [--example 0] [--pass auto] [--out docs]

The app opens on a recorded example (assets/traces), as a visitor sees it; the example is paused on a pass a third
of the way in whose draft tree accepted at least two drafted decisions (or --pass k), so the tree and the "why it works" marks show.
The test suite never writes these files.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
EXPLAINER = "#sv-explainer .sve"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pick_pass(trace) -> int:
    """A pass (1-based) from a third of the run on whose tree accepted >= 2 drafted decisions, and a bonus."""
    for p in trace.passes[len(trace.passes) // 3:] + trace.passes[2:]:
        if p.tree and sum(c.drafted for c in p.commits) >= 2 and any(not c.drafted for c in p.commits):
            return p.index + 1
    return min(4, len(trace.passes))


def shoot(pg, url: str, k: int, path: Path, full_page: bool) -> None:
    pg.goto(url)
    pg.wait_for_function(f"() => +document.querySelector('{EXPLAINER}')?.dataset.npasses > 0", timeout=120_000)
    pg.wait_for_function(f"() => document.querySelector('{EXPLAINER}').dataset.playing === '1'", timeout=30_000)
    pg.click(f"{EXPLAINER} .sve-play")  # pause the autoplay, then show pass k
    pg.evaluate(f"""() => {{ const s = document.querySelector('{EXPLAINER} .sve-scrub');
        s.value = '{k}'; s.dispatchEvent(new Event('input', {{bubbles: true}})); }}""")
    pg.wait_for_function(f"""() => {{ const r = document.querySelector('{EXPLAINER}');
        return r.dataset.pass === '{k}' && r.dataset.drawn === r.dataset.session + ':{k}'; }}""", timeout=60_000)
    pg.wait_for_timeout(600)
    pg.evaluate("() => window.scrollTo(0, 0)")
    path.parent.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(path), full_page=full_page)
    print(f"wrote {path} ({path.stat().st_size / 1e3:.0f} kB)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="the app's default model (default: the app's own)")
    ap.add_argument("--example", type=int, default=0, help="which example of assets/traces/index.json opens")
    ap.add_argument("--pass", dest="k", default="auto", help="the pass shown (1-based), or auto")
    ap.add_argument("--out", default=str(ROOT / "docs"), help="folder for screenshot.png and screenshot-phone.png")
    ap.add_argument("--chromium", default=os.environ.get("SPOTVIZ_CHROMIUM", "/usr/bin/chromium"))
    a = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from spotviz.ui.app import build_app, launch
    from spotviz.ui.examples import list_examples, load_example

    examples = list_examples()
    if not examples:
        print("error: no example traces in assets/traces", file=sys.stderr)
        return 2
    order = examples[a.example:] + examples[:a.example]  # the chosen example opens the page
    main_trace, _ = load_example(order[0])
    k = pick_pass(main_trace) if a.k == "auto" else int(a.k)
    demo = build_app(default_model=a.model)
    if a.example:
        # the page opens on the first example: put the chosen one first for this session's app
        from spotviz.ui import app as app_module

        for fn in demo.fns.values():
            handler = getattr(fn.fn, "__self__", None)
            if isinstance(handler, app_module.Handlers):
                handler.ctx.examples[:] = order
                break
    _, url, _ = launch(demo, server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    out = Path(a.out)
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=a.chromium, args=CHROMIUM_ARGS)
            shoot(b.new_page(viewport={"width": 1400, "height": 1000}), url, k, out / "screenshot.png", True)
            shoot(b.new_page(viewport={"width": 420, "height": 900}, device_scale_factor=2), url, k,
                  out / "screenshot-phone.png", False)
            b.close()
    finally:
        demo.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
