"""Where a published model's files come from, and whether they may be opened.

- the Hub snapshot: configs, safetensors weights and tokenizer files; never pickles; Python code only for the
  allow-listed repositories (REMOTE_CODE_ALLOWED);
- config.json, read as data;
- weights: safetensors only, with readable headers (`refuse_pickles` is the one place pickle weights are refused,
  for published and embedded models alike: they are never opened, since unpickling runs arbitrary code);
- loading weights into a transformers class without remote code, every tensor matched exactly; remote code only
  as the allow-listed fallback;
- the tokenizer, without remote code.
"""
from __future__ import annotations

from contextlib import contextmanager

import json
from pathlib import Path

from .base import ModelLoadError

# The only repositories whose own Python code may run (trust_remote_code=True), and only when the stock
# transformers mapping cannot load them. Everything else that needs remote code is refused.
REMOTE_CODE_ALLOWED = frozenset({"GSAI-ML/LLaDA-8B-Instruct", "GSAI-ML/LLaDA-8B-Base"})

# Files fetched from the Hub: configs, safetensors weights, tokenizer files. Never pickles; *.py only for
# allow-listed repositories.
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken", "*.jinja"]
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")


def remote_code_allowed(repo: str | None) -> bool:
    """True only for a Hub repository on the allow-list (never for a local folder)."""
    return repo in REMOTE_CODE_ALLOWED


def download_snapshot(repo: str, with_code: bool) -> Path:
    """The local snapshot of a Hub repo (from the cache, else downloaded): configs, safetensors, tokenizer."""
    from huggingface_hub import snapshot_download

    patterns = HUB_FILES + (["*.py"] if with_code else [])
    try:
        return Path(snapshot_download(repo, allow_patterns=patterns, local_files_only=True))
    except Exception:  # not cached (huggingface_hub raises several error types)
        pass
    try:
        return Path(snapshot_download(repo, allow_patterns=patterns))
    except Exception as e:
        raise ModelLoadError(f"model {repo!r} is not in the local Hugging Face cache and could not be downloaded "
                             f"({type(e).__name__}: {e}); download it where there is network access, "
                             f"or pass a folder") from None


def read_config(folder: Path, name: str) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise ModelLoadError(f"model {name!r}: {path} is missing")
    try:
        config = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelLoadError(f"model {name!r}: config.json is not valid JSON ({e})") from None
    if not isinstance(config, dict):
        raise ModelLoadError(f"model {name!r}: config.json is not a JSON object")
    return config


def refuse_pickles(folder: Path, name: str, fix: str) -> None:
    """Raise if `folder` holds pickle weights (the caller found no safetensors): they are never opened."""
    pickled = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickled:
        raise ModelLoadError(f"model {name!r}: {folder} has only pickle weights ({', '.join(pickled)}); spotviz "
                             f"loads safetensors only and never unpickles{fix}")


def check_safetensors(folder: Path, name: str) -> None:
    """Weights must be safetensors with readable headers; pickles are refused, never opened."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        refuse_pickles(folder, name, ". Convert the checkpoint to safetensors.")
        raise ModelLoadError(f"model {name!r}: no *.safetensors weights in {folder}")
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ModelLoadError(f"model {name!r}: {index.name} is not a valid index ({e})") from None
        missing = sorted(s for s in shards if not (folder / s).is_file())
        if missing:
            raise ModelLoadError(f"model {name!r}: weight shards missing from {folder}: {', '.join(missing)}")
    from safetensors import safe_open

    for f in files:
        try:
            with safe_open(str(f), framework="pt") as handle:
                list(handle.keys())
        except Exception as e:  # safetensors raises its own error types
            raise ModelLoadError(f"model {name!r}: {f.name} is corrupt or truncated ({e})") from None


def from_pretrained(cls, folder: Path, config, dtype, name: str, **kwargs):
    """cls.from_pretrained from safetensors, without remote code; every weight must be matched exactly."""
    check_safetensors(folder, name)
    try:
        model, report = cls.from_pretrained(str(folder), config=config, dtype=dtype, use_safetensors=True,
                                            trust_remote_code=False, output_loading_info=True, **kwargs)
    except Exception as e:
        raise ModelLoadError(f"model {name!r}: could not load the weights from {folder} into {cls.__name__} "
                             f"({type(e).__name__}: {e})") from None
    problems = {k: sorted(report.get(k) or ()) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    problems = {k: v for k, v in problems.items() if v}
    if problems:
        detail = "; ".join(f"{k}: {', '.join(map(str, v[:4]))}{' ...' if len(v) > 4 else ''}"
                           for k, v in problems.items())
        raise ModelLoadError(f"model {name!r}: the checkpoint does not match {cls.__name__} ({detail})")
    check_finite(model, name, "the checkpoint")
    return model


def check_finite(model, name: str, weights: str) -> None:
    """Refuse weights with NaN or infinite values (a damaged or tampered file): such a model decodes garbage, or
    nothing, without an error of its own. `weights` names the file(s) in the message."""
    import torch

    bad = next((n for n, t in model.state_dict().items() if t.is_floating_point() and not torch.isfinite(t).all()), None)
    if bad is not None:
        raise ModelLoadError(f"model {name!r}: {weights} is corrupt (tensor {bad} has NaN or infinite values)")


def load_remote_code_model(folder: Path, repo: str | None, dtype, name: str, reason: str):
    """The published model class from its own repository code: only for REMOTE_CODE_ALLOWED repos."""
    if not remote_code_allowed(repo):
        where = f"repository {repo!r}" if repo else f"local folder {str(folder)!r}"
        raise ModelLoadError(f"model {name!r} needs trust_remote_code because {reason}. spotviz runs remote code only "
                             f"for the allow-listed Hub repositories ({', '.join(sorted(REMOTE_CODE_ALLOWED))}), "
                             f"not for {where}.")
    check_safetensors(folder, name)
    from transformers import AutoModel

    try:
        model = AutoModel.from_pretrained(str(folder), trust_remote_code=True, use_safetensors=True, dtype=dtype)
    except Exception as e:
        raise ModelLoadError(f"model {name!r}: could not load {repo} with its remote code "
                             f"({type(e).__name__}: {e})") from None
    check_finite(model, name, "the checkpoint")
    return model


def load_tokenizer(folder: Path, name: str):
    """The model's tokenizer without remote code: AutoTokenizer, else tokenizer.json, else Qwen2 BPE files
    (Dream ships a custom tokenizer class that is a Qwen2 BPE tokenizer)."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast, Qwen2Tokenizer

    attempts = [lambda: _quietly(AutoTokenizer.from_pretrained, str(folder), trust_remote_code=False)]
    if (folder / "tokenizer.json").is_file():
        attempts.append(lambda: PreTrainedTokenizerFast.from_pretrained(str(folder)))
    if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
        attempts.append(lambda: Qwen2Tokenizer.from_pretrained(str(folder)))
    errors = []
    for attempt in attempts:
        try:
            return attempt()
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")
    raise ModelLoadError(f"model {name!r}: could not load a tokenizer from {folder} ({' | '.join(errors)[:600]})")


def _quietly(fn, *args, **kwargs):
    """fn(*args, **kwargs) with transformers' warnings off (AutoTokenizer warns when it reads a config.json
    whose model_type it does not know, e.g. "sdar" or "Dream", which is expected here)."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        return fn(*args, **kwargs)
    finally:
        logging.set_verbosity(level)


@contextmanager
def quiet_loading():
    """Loading weights without transformers' progress bars ("Loading weights" in a decode's output), then the bars
    as they were: a download later in the process still shows its progress."""
    from transformers.utils import logging

    was_on = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            logging.enable_progress_bar()
