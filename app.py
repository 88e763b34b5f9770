"""spotviz app: `python app.py` (Gradio; also the Hugging Face Space entry point).

Environment: SPOTVIZ_MODEL (a model name or folder to use as the default model), SPOTVIZ_THREADS (torch CPU
threads), GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (Gradio's own).
"""
import os

if os.environ.get("SPOTVIZ_THREADS"):
    import torch

    torch.set_num_threads(int(os.environ["SPOTVIZ_THREADS"]))

from spotviz.ui.app import build_app, launch  # noqa: E402

demo = build_app()

if __name__ == "__main__":
    launch(demo)
