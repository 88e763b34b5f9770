"""spotviz app: `python app.py` (Gradio; also the Hugging Face Space entry point). It takes no options.

Environment: SPOTVIZ_MODEL (a model name or folder to use as the default model), SPOTVIZ_DRAFTER_DIR (drafters
trained for that model by train-drafter), SPOTVIZ_PLUGINS (Python files, separated by ":", that register drafters
of your own: they join the Drafter menu; docs/INSTALL.md, "A drafter of your own"), SPOTVIZ_THREADS (torch CPU
threads: default 1, 0 = all cores; the same policy as the command line, spotviz/threads.py), GRADIO_SERVER_NAME /
GRADIO_SERVER_PORT (Gradio's own). Gradio's usage analytics are off (no network calls)."""
import os
import sys

if __name__ == "__main__" and {"-h", "--help"} & set(sys.argv[1:]):  # (the app takes no options: settings are above)
    print(__doc__.strip())
    raise SystemExit(0)

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # before gradio is imported

from spotviz.errors import DecodeError  # noqa: E402
from spotviz.threads import set_threads  # noqa: E402

try:
    set_threads(None, option="SPOTVIZ_THREADS")
except DecodeError as e:  # a bad $SPOTVIZ_THREADS: one line, before anything loads
    print(f"error: {e}", file=sys.stderr)
    raise SystemExit(2) from None

from spotviz.drafter.registry import import_drafters  # noqa: E402

for _plugin in filter(None, os.environ.get("SPOTVIZ_PLUGINS", "").split(os.pathsep)):  # (before the menus are built)
    try:
        import_drafters(_plugin)
    except DecodeError as e:
        print(f"error: SPOTVIZ_PLUGINS: {e}", file=sys.stderr)
        raise SystemExit(2) from None

from spotviz.ui.app import build_app, launch  # noqa: E402

try:
    demo = build_app(curve_ahead=True)  # (budget auto's cost curve of the default model, measured while nobody waits)
except DecodeError as e:  # a bad setting above ($SPOTVIZ_DRAFTER_DIR): one line
    print(f"error: {e}", file=sys.stderr)
    raise SystemExit(2) from None

if __name__ == "__main__":
    launch(demo)
