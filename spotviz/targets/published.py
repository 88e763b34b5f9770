"""Published diffusion LMs: their short names (PUBLISHED) and `load_published`.

`load_published(name_or_path)` takes a short name from PUBLISHED, a local folder (the family is detected from
config.json: targets/families.py), or a Hugging Face repo id ("org/name", downloaded into the local cache by
targets/hub.py, which also decides what may be opened: safetensors only, remote code only for an allow-list).
The family table (targets/families.py) loads the weights into a *stock* transformers class and picks the adapter
(targets/adapters.py); the tokenizer, EOS ids, vocabulary and context come from the checkpoint's files here.
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import torch

from .adapters import PublishedTarget
from .base import ModelLoadError, TargetInfo, pick_device
from .families import BLOCK_SIZE_KEYS, FAMILIES, detect_family, first, token_id
from ..paths import ASSETS
from .hub import download_snapshot, load_tokenizer, quiet_loading, read_config, remote_code_allowed

DEFAULT_WINDOW = 32  # block/window size when neither the caller nor the model's config gives one
END_TOKENS = ("<|endoftext|>", "<|im_end|>", "<|eot_id|>")  # end-of-text/turn tokens, used as EOS where present

# short name -> spec: Hub repo, family, default window (used when the config gives no block size), whether
# prompts go through the chat template, and optionally "bos" (start plain prompts with BOS, as LLaDA's base
# model expects) and "max_length" (a context limit tighter than the config's).
PUBLISHED: dict[str, dict] = {
    "sdar-1.7b-chat": {"repo": "JetLM/SDAR-1.7B-Chat", "family": "sdar", "block_size": 32, "chat": True},
    "sdar-4b-chat": {"repo": "JetLM/SDAR-4B-Chat", "family": "sdar", "block_size": 32, "chat": True},
    "sdar-8b-chat": {"repo": "JetLM/SDAR-8B-Chat", "family": "sdar", "block_size": 32, "chat": True},
    "llada-8b-instruct": {"repo": "GSAI-ML/LLaDA-8B-Instruct", "family": "llada", "block_size": 32, "chat": True},
    "llada-8b-base": {"repo": "GSAI-ML/LLaDA-8B-Base", "family": "llada", "block_size": 32, "chat": False,
                      "bos": True},
    "dream-7b-instruct": {"repo": "Dream-org/Dream-v0-Instruct-7B", "family": "dream", "block_size": 32,
                          "chat": True, "max_length": 2048},
    "dream-7b-base": {"repo": "Dream-org/Dream-v0-Base-7B", "family": "dream", "block_size": 32, "chat": False,
                      "max_length": 2048},
    "modernbert-large-chat": {"repo": "dllm-hub/ModernBERT-large-chat-v0.1", "family": "mlm", "block_size": 32,
                              "chat": True},
}


# ---------------------------------------------------------------------------------------------- loading
def load_published(name_or_path: str, device=None, *, dtype: torch.dtype | None = None,
                   block_size: int | None = None, check_invariance: bool = True, log=None) -> PublishedTarget:
    """Load a published DLM: a PUBLISHED short name, a local folder, or a Hub repo id ("org/name").

    `device`: "cpu", "cuda", ... (default: cuda if available). `dtype`: default bfloat16 on CUDA, float32
    elsewhere. `block_size`: the block (SDAR) / window (full attention) size; default the config's block
    size if it has one, else the spec's, else 32. `check_invariance`: probe that batched passes reproduce one-row
    passes bit for bit; if not, upcast to float32, or mark the target "identity not guaranteed" if that does not
    help either (targets/invariance.py). Raises ModelLoadError with the reason."""
    device = pick_device(device)  # a bad device fails before anything is downloaded or read
    folder, repo, spec, name = _resolve(name_or_path)
    config = read_config(folder, name)
    if repo is None:  # a folder: the published model it is a copy of, where that shows
        spec = folder_spec(folder, config)
    # (a Hub repo's name may say SDAR; a local folder's name is the user's and says nothing: its config.json decides)
    family = spec.get("family") or detect_family(config, hint=repo or "")
    dtype = dtype or (torch.bfloat16 if device.type == "cuda" else torch.float32)
    window = first(block_size, _config_block_size(config), spec.get("block_size"), DEFAULT_WINDOW)
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ModelLoadError(f"model {name!r}: block size must be a positive integer, got {window!r}")

    if family not in FAMILIES:
        raise ModelLoadError(f"model {name!r}: unknown family {family!r} (known: {', '.join(FAMILIES)})")
    fam = FAMILIES[family]
    with quiet_loading():  # (as load_embedded: no "Loading weights" bars in a decode's output)
        tokenizer = load_tokenizer(folder, name)
        model = fam.load(folder, config, repo, dtype, name)
    cls, attention, shift = fam.adapter(model), fam.attention, fam.logit_shift
    mask_id = fam.mask_id(config, tokenizer)

    vocab = _output_size(model, config)
    if mask_id is None or not 0 <= int(mask_id) < vocab:
        raise ModelLoadError(f"model {name!r}: no usable mask token (got {mask_id!r}, vocabulary {vocab}); a "
                             f"{family} model's mask comes from {fam.mask_source}: set "
                             f"\"mask_token_id\" in config.json to the id of the token it was trained to fill")
    chat = bool(spec.get("chat")) and bool(getattr(tokenizer, "chat_template", None))
    bos = bool(spec.get("bos")) or family == "llada" and spec.get("base_named", False)
    info = TargetInfo(
        name=name, attention=attention, block_size=window, mask_id=int(mask_id),
        eos_ids=_eos_ids(config, folder, tokenizer, int(mask_id), vocab), vocab_size=vocab,
        max_length=_max_length(config, spec), logit_shift=shift, source=repo or str(folder),
        extra={"family": family, "repo": repo, "loaded_as": type(model).__name__,
               "dtype": str(dtype).removeprefix("torch."), "chat_template": chat,
               **({"recognised_as": spec["recognised"]} if spec.get("recognised") else {})},
    )
    try:
        model = model.to(device)
    except (RuntimeError, AssertionError, ValueError) as e:  # no such device, out of memory
        raise ModelLoadError(f"model {name!r}: could not move to {device} ({e})") from None
    options = {"chat_template": chat, "prepend_bos": bos}
    if window > info.max_length // 2:
        raise ModelLoadError(f"model {name!r}: block size {window} leaves too little of its context of "
                             f"{info.max_length} tokens (a prompt and a block must fit: give at most "
                             f"{info.max_length // 2})")
    target = cls(model, tokenizer, info, **options)
    if not check_invariance:
        return target
    from .invariance import ensure_batch_invariance

    def rebuild(dt):  # the same weights in another dtype, as a fresh adapter
        return cls(model.to(dt), tokenizer, replace(info, extra=dict(info.extra, dtype=str(dt).removeprefix("torch."))),
                   **options)

    return ensure_batch_invariance(target, rebuild=rebuild, log=log)


def _resolve(name_or_path: str) -> tuple[Path, str | None, dict, str]:
    """(local folder, Hub repo or None, spec, display name) of a short name, a folder or a repo id."""
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ModelLoadError("model name is empty")
    name = name_or_path.strip()
    if name in PUBLISHED:
        spec = PUBLISHED[name]
        return download_snapshot(spec["repo"], remote_code_allowed(spec["repo"])), spec["repo"], spec, name
    path = Path(name).expanduser()
    if path.is_dir():
        return path, None, {}, folder_label(path)
    if path.exists():
        raise ModelLoadError(f"model {name!r}: {path} is a file, not a model folder")
    if name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name:
        raise ModelLoadError(f"model folder {str(path.absolute())!r} does not exist")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", name) and not name.startswith((".", "/")):
        try:
            return download_snapshot(name, remote_code_allowed(name)), name, {}, name
        except ModelLoadError:
            if path.parent.is_dir():  # ("runs/my-model": most likely a folder path with a typo, not a Hub repo)
                raise ModelLoadError(f"model folder {str(path.absolute())!r} does not exist (nor is {name!r} a "
                                     "Hugging Face repository this machine has or can download)") from None
            raise
    raise ModelLoadError(f"unknown published model {name!r}: not a known name ({', '.join(PUBLISHED)}), "
                         f"not an existing folder, not a Hugging Face repo id")


def folder_label(path: Path) -> str:
    """The name a model folder goes by: its folder's name, unless that is a shipped or published model's name and the
    folder is not that model (a copy, a retrained model): then its path, so that it takes neither the shipped model's
    drafters, nor its cached cost curve, nor its label; a folder train-target named (`final`, `checkpoint`) goes by
    its parent's name with it (`my-run-final`), so that two trained models are not one name."""
    shipped = ASSETS / "models" / path.name
    if path.name in PUBLISHED or shipped.is_dir() and path.resolve() != shipped.resolve():
        return str(path.resolve())
    if path.name in GENERIC_FOLDERS and path.resolve().parent.name:  # (train-target's OUT/final: named by OUT;
        return f"{path.resolve().parent.name}-{path.name}"  # no "/": a name with one is a Hub repo id)
    return path.name


GENERIC_FOLDERS = ("final", "checkpoint")  # folder names train-target gives every model: no name by themselves


def folder_spec(folder: Path, config: dict) -> dict:
    """What a local folder's model is, as far as its files say: the spec of the published model it is a copy of
    (its Hugging Face cache path, `models--Org--Name/snapshots/...`, or its config's `_name_or_path`), so that a
    downloaded SDAR-Chat or LLaDA-Base folder decodes as its short name does (chat template, BOS, context cap).
    Otherwise prompts go through the tokenizer's chat template when it has one, unless the folder's name says
    "base" (a base model's tokenizer may carry a template it was not trained with)."""
    names = [m.group(1).replace("--", "/", 1) for part in folder.resolve().parts
             if (m := re.fullmatch(r"models--([\w.-]+--[\w.-]+)", part))]
    claimed = config.get("_name_or_path")
    if isinstance(claimed, str) and re.fullmatch(r"[\w.-]+/[\w.-]+", claimed) and not Path(claimed).exists():
        names.append(claimed)
    for repo in names:
        spec = next((s for s in PUBLISHED.values() if s["repo"].lower() == repo.lower()), None)
        if spec is not None:
            return dict(spec, recognised=spec["repo"])
    base_named = bool(re.search(r"(^|[^a-z])base([^a-z]|$)", folder.name.lower()))
    return {"chat": not base_named, "base_named": base_named}


def _config_block_size(config: dict) -> int | None:
    for key in BLOCK_SIZE_KEYS:
        if isinstance(config.get(key), int) and config[key] > 0:
            return config[key]
    return None


def _as_ids(value) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in (value if isinstance(value, (list, tuple)) else [value]) if v is not None]


def _eos_ids(config: dict, folder: Path, tokenizer, mask_id: int, vocab: int) -> tuple[int, ...]:
    """End-of-text ids: config, generation_config.json, the tokenizer's EOS and END_TOKENS it has; else SEP."""
    ids = _as_ids(config.get("eos_token_id")) + _as_ids(tokenizer.eos_token_id)
    gen = folder / "generation_config.json"
    if gen.is_file():
        try:
            ids += _as_ids(json.loads(gen.read_text()).get("eos_token_id"))
        except (OSError, ValueError, AttributeError, TypeError):
            pass
    ids += [t for t in (token_id(tokenizer, tok) for tok in END_TOKENS) if t is not None]
    if not ids and getattr(tokenizer, "sep_token_id", None) is not None:  # BERT-style: [SEP] ends the text
        ids.append(int(tokenizer.sep_token_id))
    return tuple(sorted({i for i in ids if 0 <= i < vocab and i != mask_id}))


def _output_size(model, config: dict) -> int:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    if weight is not None:
        return int(weight.shape[0])
    return int(getattr(model.config, "vocab_size", None) or config.get("embedding_size") or config["vocab_size"])


def _max_length(config: dict, spec: dict) -> int:
    n = config.get("max_position_embeddings") or config.get("max_sequence_length") or 2048
    if spec.get("max_length"):
        n = min(int(n), int(spec["max_length"]))
    return int(n)
