"""Shared fixtures: micro embedded models, trained in seconds, independent of the shipped assets/models.

Session-scoped fixtures (names are stable; other test files rely on them):

* ``tiny_block_dir`` / ``tiny_full_dir`` -- ``pathlib.Path`` of a Hugging Face model folder (config.json,
  model.safetensors in float32, tokenizer files) of a micro model trained by ``spotviz.training.target`` for a
  few dozen steps: hidden 64, 2 layers, 4 heads, vocab ~300 (byte-level BPE), context 64 tokens, block size 16;
  ``attention="block"`` (block-causal, cached) and ``attention="full"`` (bidirectional, semi-AR windows).
  Treat these folders as read-only; copy them (``shutil.copytree``) before corrupting files.
  Pass a folder to ``spotviz.registry.load_target`` or to the CLI as ``--model <folder>``.
* ``tiny_block_target`` / ``tiny_full_target`` -- the loaded ``EmbeddedTarget`` (``registry.load_embedded``),
  on the CPU, float32. Do not modify their weights.
* ``tiny_targets`` -- ``{"block": tiny_block_target, "full": tiny_full_target}``.
* ``tiny_prompt`` -- a short prompt (a few tokens) that leaves room for ``gen_length`` up to ~48.

The models are barely trained (near-unigram predictions, low confidences): use a small ``gen_length``
(16-48; the context is 64 tokens) and, in threshold mode, a small tau to see multi-token commits.

The session runs torch with one intra-op thread (``torch.set_num_threads(1)``, ``OMP_NUM_THREADS=1``).

Markers (pytest.ini): ``slow`` (long tests, e.g. browser tests) and ``browser`` (needs Chromium/Playwright).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

# Micro models gain nothing from threads, and on a 2-core machine with other busy processes a second
# intra-op thread makes every tiny forward ~100x slower (spin-waiting). Subprocesses inherit OMP_NUM_THREADS.
torch.set_num_threads(1)

TINY_PROMPT = "ROMEO.\nO"


@pytest.fixture(scope="session", autouse=True)
def _own_cache_dir(tmp_path_factory):
    """Cost curves and auto's memory in a folder of this test session's own: never the user's cache, and no test
    reads what an earlier session's runs taught `auto` (on a fresh machine there is none either)."""
    old = os.environ.get("SPOTVIZ_CACHE_DIR")
    os.environ["SPOTVIZ_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("SPOTVIZ_CACHE_DIR", None)
    else:
        os.environ["SPOTVIZ_CACHE_DIR"] = old


def _train_tiny(root: Path, attention: str) -> Path:
    from spotviz.training.target import TrainTargetConfig, train_target

    out = root / f"tiny-{attention}"
    cfg = TrainTargetConfig(
        out=str(out), attention=attention, vocab_size=300, hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128, block_size=16, seq_len=64, batch_size=4, max_steps=40,
        warmup_steps=5, eval_every=10_000, checkpoint_every=10_000, corpus_fraction=0.03, seed=0,
        save_dtype="float32",
    )
    train_target(cfg, log=lambda *a, **k: None)
    folder = out / "final"
    assert (folder / "model.safetensors").is_file()
    return folder


@pytest.fixture(scope="session")
def tiny_block_dir(tmp_path_factory) -> Path:
    return _train_tiny(tmp_path_factory.mktemp("tiny-models"), "block")


@pytest.fixture(scope="session")
def tiny_full_dir(tmp_path_factory) -> Path:
    return _train_tiny(tmp_path_factory.mktemp("tiny-models"), "full")


@pytest.fixture(scope="session")
def tiny_block_target(tiny_block_dir):
    from spotviz.registry import load_embedded

    return load_embedded(tiny_block_dir, device="cpu")


@pytest.fixture(scope="session")
def tiny_full_target(tiny_full_dir):
    from spotviz.registry import load_embedded

    return load_embedded(tiny_full_dir, device="cpu")


@pytest.fixture(scope="session")
def tiny_targets(tiny_block_target, tiny_full_target) -> dict:
    return {"block": tiny_block_target, "full": tiny_full_target}


@pytest.fixture(scope="session")
def tiny_prompt() -> str:
    return TINY_PROMPT
