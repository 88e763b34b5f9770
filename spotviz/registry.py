"""Model names -> loaded targets. Embedded models ship under assets/models; published DLMs load through
transformers (see targets/published.py). Weights load from safetensors only."""
from __future__ import annotations

import json
import os
from pathlib import Path

from .paths import ASSETS
from .threads import ensure_threads
from .targets.base import ModelLoadError, pick_device  # noqa: F401  (part of this module's interface)

EMBEDDED = {
    "math-bd": ASSETS / "models" / "math-bd",
    "python-bd": ASSETS / "models" / "python-bd",
    "shakespeare-bd": ASSETS / "models" / "shakespeare-bd",
    "shakespeare-mdlm": ASSETS / "models" / "shakespeare-mdlm",
}
DEFAULT_MODEL = "math-bd"  # the confident target: worked grade-school word problems (docs/DESIGN.md section 9)


def known_models() -> list[str]:
    from .targets.published import PUBLISHED

    return list(EMBEDDED) + list(PUBLISHED)


def load_embedded(folder: str | Path, name: str | None = None, device: str | None = None, dtype=None,
                  check_invariance: bool = True, log=None):
    """Load a spotviz masked-diffusion model folder (config.json, model.safetensors, tokenizer files).

    `dtype`: float32 by default (the weights are stored in bf16; float32 is exact and batch-invariant here).
    `check_invariance`: probe that batched passes reproduce one-row passes bit for bit (targets/invariance.py);
    a model that fails is upcast to float32, or marked "identity not guaranteed" if that fails too."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from .embedded import modeling  # noqa: F401  (Auto registration)
    from .targets.embedded import EmbeddedTarget
    from .targets.hub import check_finite, quiet_loading, refuse_pickles

    from .targets.published import folder_label

    folder = Path(folder)
    name = name or folder_label(folder)  # (as load_target names a folder: OUT/final goes by OUT-final)
    device = pick_device(device)  # a bad device fails before anything is read
    if not (folder / "model.safetensors").is_file() and folder.is_dir():
        refuse_pickles(folder, name, " (model.safetensors is missing)")
    for f in ("config.json", "model.safetensors", "tokenizer.json"):
        if not (folder / f).is_file():
            hint = (f" (a train-target checkpoint: the model it exports is {folder.parent / 'final'})"
                    if folder.name == "checkpoint" and (folder.parent / "source.json").is_file() else "")
            raise ModelLoadError(f"model {name!r}: {folder / f} is missing{hint}")
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ModelLoadError(f"model {name!r}: config.json is not valid JSON ({e})") from None
    if cfg.get("model_type") != "spotviz-dlm":
        raise ModelLoadError(f"model {name!r}: {folder} is not a spotviz model (model_type={cfg.get('model_type')!r})")
    try:
        from safetensors import safe_open

        with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
            list(f.keys())
    except Exception as e:  # safetensors raises its own error types
        raise ModelLoadError(f"model {name!r}: model.safetensors is corrupt or truncated ({e})") from None
    try:
        with quiet_loading():
            model, report = AutoModelForMaskedLM.from_pretrained(str(folder), use_safetensors=True,
                                                                 trust_remote_code=False, dtype=dtype or torch.float32,
                                                                 output_loading_info=True)
            tok = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    except Exception as e:
        raise ModelLoadError(f"model {name!r}: could not load from {folder}: {e}") from None
    # transformers only warns about missing tensors (and initialises them at random): refuse instead
    problems = {k: sorted(map(str, report.get(k) or ())) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    problems = {k: v for k, v in problems.items() if v}
    if problems:
        detail = "; ".join(f"{k.replace('_', ' ')}: {', '.join(v[:4])}{' ...' if len(v) > 4 else ''}"
                           for k, v in problems.items())
        raise ModelLoadError(f"model {name!r}: model.safetensors does not match config.json ({detail}); "
                             f"the weight file is incomplete or from another model")
    check_finite(model, name, "model.safetensors")
    try:
        model = model.to(device)
    except (RuntimeError, AssertionError, ValueError) as e:  # out of memory, a device that went away
        raise ModelLoadError(f"model {name!r}: could not move to {device} ({e})") from None
    target = EmbeddedTarget(model, tok, name=name, source=str(folder))
    if not check_invariance:
        return target
    from .targets.invariance import ensure_batch_invariance

    return ensure_batch_invariance(
        target, rebuild=lambda dt: EmbeddedTarget(model.to(dt), tok, name=name, source=str(folder)), log=log)


def is_embedded(name_or_path: str | Path) -> bool:
    """Whether a model name or folder is a spotviz (embedded) model: a shipped name, or a folder whose config.json
    says model_type "spotviz-dlm" (train-target's), rather than a published DLM."""
    if isinstance(name_or_path, str) and name_or_path in EMBEDDED:
        return True
    config = Path(name_or_path).expanduser() / "config.json"
    try:
        return config.is_file() and '"spotviz-dlm"' in config.read_text(errors="replace")
    except OSError:
        return False


def load_target(name_or_path: str | None = None, device: str | None = None, block_size: int | None = None):
    """An embedded model name, a published model name, or a local folder. Applies the thread policy
    (spotviz/threads.py: 1 thread unless set) the first time, unless a front end already did. `block_size`: a
    published model's block (SDAR) or window (LLaDA, Dream) size instead of its config's (an embedded model decodes
    at the block size it was trained with)."""
    name = DEFAULT_MODEL if name_or_path is None else name_or_path
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str):
        raise ModelLoadError(f"model must be a name or a folder (str or path), got {type(name).__name__}")
    if not name.strip():
        raise ModelLoadError("model name is empty")
    ensure_threads()

    def embedded(folder, label):
        if block_size is not None:
            raise ModelLoadError(f"model {label!r} is an embedded model: it decodes at the block size it was trained "
                                 f"with (a block size can be chosen for published models only)")
        return load_embedded(folder, label, device)

    if name in EMBEDDED:
        if not EMBEDDED[name].is_dir():
            raise ModelLoadError(f"embedded model {name!r} is missing at {EMBEDDED[name]}; "
                                 f"reinstall spotviz or run: python -m spotviz train-target")
        return embedded(EMBEDDED[name], name)
    from .targets.published import PUBLISHED, folder_label, load_published

    if name in PUBLISHED:
        return load_published(name, device=device, block_size=block_size)
    p = Path(name).expanduser()
    if p.is_dir():
        if is_embedded(p):
            return embedded(p, folder_label(p))
        if not (p / "config.json").exists() and is_embedded(p / "final"):  # (a train-target --out folder)
            raise ModelLoadError(f"model {name!r}: {p} is a train-target output folder; its model is {p / 'final'}")
        return load_published(str(p), device=device, block_size=block_size)
    if p.exists() or "/" in name or "\\" in name or name.startswith((".", "~")):
        # a path that is not a folder, or a Hub repo id ("org/name"): load_published says which (a file, a folder
        # that does not exist, a repository not in the local cache)
        return load_published(name, device=device, block_size=block_size)
    import difflib

    near = difflib.get_close_matches(name, known_models(), n=1)  # (a typo: math-db)
    raise ModelLoadError(f"unknown model {name!r}{f' (did you mean {near[0]!r}?)' if near else ''}; known models: "
                         f"{', '.join(known_models())}, or a local folder")
