"""Adapters for published diffusion LMs: SDAR, LLaDA, Dream and Hugging Face masked-LM diffusion models.

Each adapter loads the published weights (safetensors only) into a *stock* transformers class and sets the
attention pattern itself with an explicit 4D mask, so no remote code and no flash-attn are needed:

    family  published as                      loaded into            attention        logit for position i
    sdar    SDARForCausalLM (Qwen3 + qk-norm)   Qwen3ForCausalLM       block-causal     output i
    llada   LLaDAModelLM (OLMo-style LLaMA)     LlamaForCausalLM       full             output i
    dream   DreamModel (Qwen2.5)                Qwen2ForCausalLM       full             output i - 1
    mlm     any AutoModelForMaskedLM            AutoModelForMaskedLM   the model's own  output i

LLaDA's checkpoint names its tensors the OLMo way (model.transformer.blocks.N.q_proj, ...); they are renamed
to LLaMA's on load (LLADA_KEY_MAPPING). Remote code runs only as a fallback, only for the repositories in
REMOTE_CODE_ALLOWED, and only where the stock mapping cannot represent the checkpoint.

`load_published(name_or_path)` takes a short name from PUBLISHED, a local folder (the family is detected from
config.json, see `detect_family`), or a Hugging Face repo id ("org/name", downloaded into the local cache).
"""
from __future__ import annotations

import functools
import inspect
import json
import re
from dataclasses import replace
from pathlib import Path

import torch

from .base import (DiffusionTarget, ForwardOutput, ModelLoadError, PrefixCache, TargetInfo, apply_chat_template,
                   pick_device)

DEFAULT_WINDOW = 32  # block/window size when neither the caller nor the model's config gives one
LLADA_MASK_ID = 126336
DREAM_MASK_ID = 151666
SDAR_MASK_TOKEN = "<|MASK|>"
BLOCK_SIZE_KEYS = ("block_size", "block_length", "bd_size")  # config keys that carry a block-diffusion size
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

# The only repositories whose own Python code may run (trust_remote_code=True), and only when the stock
# transformers mapping cannot load them. Everything else that needs remote code is refused.
REMOTE_CODE_ALLOWED = frozenset({"GSAI-ML/LLaDA-8B-Instruct", "GSAI-ML/LLaDA-8B-Base"})

# Files fetched from the Hub: configs, safetensors weights, tokenizer files. Never pickles; *.py only for
# allow-listed repositories.
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken", "*.jinja"]
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")

# LLaDA (OLMo naming) -> LlamaForCausalLM, as regex -> replacement over checkpoint keys.
_LLADA_BLOCK_KEYS = {
    "q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj", "v_proj": "self_attn.v_proj",
    "attn_out": "self_attn.o_proj", "attn_norm": "input_layernorm", "ff_norm": "post_attention_layernorm",
    "ff_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj", "ff_out": "mlp.down_proj",
}
LLADA_KEY_MAPPING = {
    r"^model\.transformer\.wte\.": "model.embed_tokens.",
    r"^model\.transformer\.ln_f\.": "model.norm.",
    r"^model\.transformer\.ff_out\.": "lm_head.",
    **{rf"^model\.transformer\.blocks\.(\d+)\.{old}\.": rf"model.layers.\1.{new}."
       for old, new in _LLADA_BLOCK_KEYS.items()},
}
_NOT_CONFIG_KEYS = ("model_type", "architectures", "auto_map", "transformers_version", "_name_or_path")


def _error(message: str) -> ModelLoadError:
    return ModelLoadError(message)


# ---------------------------------------------------------------------------------------------- adapters
class _PrefixView:
    """Stands in for a transformers cache during one forward: each attention layer's `update(k, v, layer)`
    gets [shared prefix expanded to the batch | new keys] as a fresh tensor, and the new keys/values are kept
    in `present`. The shared prefix tensors are read, never written."""

    def __init__(self, kv: tuple | None):
        self.kv = kv
        self.present: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        self.present[layer_idx] = (key_states, value_states)
        if not self.kv:
            return key_states, value_states
        pk, pv = self.kv[layer_idx]
        b = key_states.shape[0]
        return (torch.cat([pk.expand(b, -1, -1, -1), key_states], dim=2),
                torch.cat([pv.expand(b, -1, -1, -1), value_states], dim=2))

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.kv[0][0].shape[2] if self.kv else 0

    def present_kv(self) -> tuple:
        return tuple(self.present[i] for i in sorted(self.present))


@functools.cache
def _prefix_view_class():
    """_PrefixView as a subclass of transformers' DynamicCache, for models that type-check their cache."""
    from transformers import DynamicCache

    class PrefixView(_PrefixView, DynamicCache):
        def __init__(self, kv):
            DynamicCache.__init__(self)
            _PrefixView.__init__(self, kv)

    return PrefixView


def _additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[q, k] bool (True = may attend) -> [1, 1, q, k] additive mask (0 / dtype min), as sdpa and eager take it."""
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    return mask.masked_fill(~allowed, torch.finfo(dtype).min).view(1, 1, *allowed.shape)


class PublishedTarget(DiffusionTarget):
    """What every published adapter shares: model, tokenizer, device, dtype and the optional chat template."""

    def __init__(self, model, tokenizer, info: TargetInfo, chat_template: bool = False, prepend_bos: bool = False):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.info = info
        param = next(model.parameters())
        self.device, self.dtype = param.device, param.dtype
        self.chat_template = chat_template  # wrap prompts as one user turn of the model's chat template
        self.prepend_bos = prepend_bos  # start plain prompts with the tokenizer's BOS (LLaDA base)

    def format_prompt(self, text: str) -> str:
        return apply_chat_template(self.tokenizer, text) if self.chat_template else text

    def encode(self, text: str) -> list[int]:
        """Token ids of a prompt: through the chat template for chat models (the template holds any BOS),
        else the plain text, after the BOS token where the model expects one."""
        text = self.format_prompt(text)
        ids = super().encode(text)
        bos = self.tokenizer.bos_token_id
        if self.prepend_bos and not self.chat_template and bos is not None and ids[:1] != [bos]:
            ids = [int(bos)] + ids
        return ids

    def _source_positions(self, lo: int, hi: int) -> torch.Tensor:
        """Output rows holding the logits of positions [lo, hi): i - logit_shift (position 0 keeps row 0)."""
        return (torch.arange(lo, hi, device=self.device) - self.info.logit_shift).clamp(min=0)

    @staticmethod
    def _check_window(states: torch.Tensor, lo: int, hi: int) -> None:
        if states.dim() != 2 or not 0 <= lo < hi <= states.shape[1]:
            raise ValueError(f"window [{lo}, {hi}) does not fit states of shape {tuple(states.shape)}")


class BlockCausalTarget(PublishedTarget):
    """SDAR-style block diffusion on a stock decoder-only transformer (Qwen3ForCausalLM).

    Assumes what SDAR's reference sampler does: blocks of `block_size` *absolute* positions (block k is
    [k*b, (k+1)*b), the first decoded block holds the prompt's tail); attention is bidirectional inside a
    block and causal across blocks; RoPE positions are absolute; the logit for position i is output i (no
    shift). A finished block's keys/values never change, so the PrefixCache holds them exactly (per layer
    (k, v) of shape [1, kv_heads, length, head_dim], after RoPE and qk-norm). A row that ends inside a block
    is padded with MASK to the block boundary, as SDAR's generate() lays out its row, so the last block's
    positions attend to those pads; the pads stay MASK here (spotviz decodes the gen_length positions asked
    for, where SDAR's loop also fills the pads and drops them from the text)."""

    def __init__(self, model, tokenizer, info, **options):
        super().__init__(model, tokenizer, info, **options)
        self.backbone = model.base_model
        self.lm_head = model.get_output_embeddings()
        params = inspect.signature(self.backbone.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5.x
        self._PrefixView = _prefix_view_class()

    @torch.no_grad()
    def forward(self, states: torch.Tensor, lo: int, hi: int, cache: PrefixCache) -> ForwardOutput:
        """Logits of [lo, hi). The pass runs to the end of hi's block: a block attends to all of itself, so a
        ragged last block (a row that ends inside a block) is padded with MASK to the block boundary, as SDAR's
        own generation lays out its row (prompt + gen_length rounded up to whole blocks)."""
        states = states.to(self.device)
        self._check_window(states, lo, hi)
        start, b = cache.length, self.info.block_size
        if not (start <= lo and start % b == 0):
            raise ValueError(f"cache of length {start} cannot serve window [{lo}, {hi}) with blocks of {b}")
        end = -(-hi // b) * b  # the end of hi's block
        ids = states[:, start:end]
        if ids.shape[1] < end - start:  # the row ends inside the block: pad it with MASK
            ids = torch.cat([ids, ids.new_full((ids.shape[0], end - start - ids.shape[1]), self.info.mask_id)], 1)
        q_pos = torch.arange(start, end, device=self.device)
        k_pos = torch.arange(0, end, device=self.device)
        mask = _additive_mask((k_pos[None, :] // b) <= (q_pos[:, None] // b), self.dtype)
        view = self._PrefixView(cache.kv)
        hidden = self.backbone(input_ids=ids, attention_mask=mask, position_ids=q_pos[None],
                               use_cache=True, **{self._cache_arg: view}).last_hidden_state
        # the head over whole blocks: a one-row pass of a narrow window would otherwise multiply a matrix of one
        # or two rows, which BLAS computes differently from a batch's (not bit-identical: targets/invariance.py)
        first = (lo // b) * b
        logits = self.lm_head(hidden[:, first - start:])[:, lo - first: hi - first]
        return ForwardOutput(logits.float(), start=start, present=view.present_kv())

    def extend_cache(self, cache: PrefixCache, out: ForwardOutput, row: int, upto: int) -> PrefixCache:
        if upto <= cache.length:
            return cache
        if out.start != cache.length or out.present is None:
            raise ValueError("forward output does not continue this cache")
        if upto % self.info.block_size or upto - out.start > out.present[0][0].shape[2]:
            raise ValueError(f"cannot extend the cache to {upto}: not a block boundary covered by the forward")
        n = upto - cache.length
        layers = []
        for i, (k, v) in enumerate(out.present):
            k, v = k[row: row + 1, :, :n], v[row: row + 1, :, :n]
            if cache.kv:
                k, v = torch.cat([cache.kv[i][0], k], 2), torch.cat([cache.kv[i][1], v], 2)
            layers.append((k.contiguous(), v.contiguous()))
        return PrefixCache(upto, tuple(layers))


class FullAttentionTarget(PublishedTarget):
    """LLaDA / Dream: a stock decoder-only transformer run with a full bidirectional mask over the whole state.

    Assumes what the published samplers do: every position attends to every position (prompt, committed
    tokens, MASKs, including the MASKs after the current window); RoPE positions 0..L-1; the logit for
    position i is output i - logit_shift (LLaDA 0; Dream 1, position 0 reusing output 0 as Dream's sampler
    does). No cache: every pass recomputes the sequence."""

    def __init__(self, model, tokenizer, info, **options):
        super().__init__(model, tokenizer, info, **options)
        self.backbone = model.base_model
        self.lm_head = model.get_output_embeddings()

    @torch.no_grad()
    def forward(self, states: torch.Tensor, lo: int, hi: int, cache: PrefixCache) -> ForwardOutput:
        states = states.to(self.device)
        self._check_window(states, lo, hi)
        n = states.shape[1]
        mask = torch.zeros(1, 1, n, n, dtype=self.dtype, device=self.device)  # everyone sees everyone
        pos = torch.arange(n, device=self.device)[None]
        hidden = self.backbone(input_ids=states, attention_mask=mask, position_ids=pos,
                               use_cache=False).last_hidden_state
        # the head only on the window, widened to a block's width: a one-row pass of a narrow window would
        # otherwise multiply a matrix of one or two rows, not bit-identical to a batch's (targets/invariance.py)
        width = max(hi - lo, min(self.info.block_size, n))
        first = max(0, min(lo, n - width))
        logits = self.lm_head(hidden[:, self._source_positions(first, first + width)])[:, lo - first: hi - first]
        return ForwardOutput(logits.float(), start=0)


class MaskedLMTarget(PublishedTarget):
    """Any model whose forward(input_ids) returns logits at every position: Hugging Face masked LMs
    (ModernBERT/BERT-style, AutoModelForMaskedLM) or an allow-listed remote-code model.

    Assumes the model's own attention (bidirectional for masked LMs) over the whole state, mask token =
    the tokenizer's mask token, and no logit shift unless `info.logit_shift` says otherwise."""

    @torch.no_grad()
    def forward(self, states: torch.Tensor, lo: int, hi: int, cache: PrefixCache) -> ForwardOutput:
        states = states.to(self.device)
        self._check_window(states, lo, hi)
        logits = self.model(input_ids=states).logits
        return ForwardOutput(logits[:, self._source_positions(lo, hi)].float(), start=0)


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
    config = _read_config(folder, name)
    family = spec.get("family") or detect_family(config, hint=f"{repo or ''} {folder.name}")
    dtype = dtype or (torch.bfloat16 if device.type == "cuda" else torch.float32)
    window = _first(block_size, _config_block_size(config), spec.get("block_size"), DEFAULT_WINDOW)
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise _error(f"model {name!r}: block size must be a positive integer, got {window!r}")

    tokenizer = _load_tokenizer(folder, name)
    if family == "sdar":
        model = _load_sdar_model(folder, config, dtype, name)
        cls, attention, shift = BlockCausalTarget, "block", 0
        mask_id = _first(config.get("mask_token_id"), _token_id(tokenizer, SDAR_MASK_TOKEN), tokenizer.mask_token_id)
    elif family == "llada":
        model = _load_llada_model(folder, config, repo, dtype, name)
        cls = MaskedLMTarget if _is_remote(model) else FullAttentionTarget
        attention, shift = "full", 0
        mask_id = _first(config.get("mask_token_id"), LLADA_MASK_ID)
    elif family == "dream":
        model = _load_stock_causal(folder, config, "Qwen2", dtype, name)
        cls, attention, shift = FullAttentionTarget, "full", 1
        mask_id = _first(config.get("mask_token_id"), tokenizer.mask_token_id, DREAM_MASK_ID)
    elif family == "mlm":
        model = _load_masked_lm(folder, repo, dtype, name)
        cls, attention, shift = MaskedLMTarget, "full", 0
        mask_id = _first(tokenizer.mask_token_id, config.get("mask_token_id"))
    else:
        raise _error(f"model {name!r}: unknown family {family!r} (known: sdar, llada, dream, mlm)")

    vocab = _output_size(model, config)
    if mask_id is None or not 0 <= int(mask_id) < vocab:
        raise _error(f"model {name!r}: no usable mask token (got {mask_id!r}, vocabulary {vocab})")
    chat = bool(spec.get("chat")) and bool(getattr(tokenizer, "chat_template", None))
    info = TargetInfo(
        name=name, attention=attention, block_size=window, mask_id=int(mask_id),
        eos_ids=_eos_ids(config, folder, tokenizer, int(mask_id), vocab), vocab_size=vocab,
        max_length=_max_length(config, spec), logit_shift=shift, source=repo or str(folder),
        extra={"family": family, "repo": repo, "loaded_as": type(model).__name__,
               "dtype": str(dtype).removeprefix("torch."), "chat_template": chat},
    )
    try:
        model = model.to(device)
    except (RuntimeError, AssertionError, ValueError) as e:  # no such device, out of memory
        raise _error(f"model {name!r}: could not move to {device} ({e})") from None
    options = {"chat_template": chat, "prepend_bos": bool(spec.get("bos"))}
    target = cls(model, tokenizer, info, **options)
    if not check_invariance:
        return target
    from .invariance import ensure_batch_invariance

    def rebuild(dt):  # the same weights in another dtype, as a fresh adapter
        return cls(model.to(dt), tokenizer, replace(info, extra=dict(info.extra, dtype=str(dt).removeprefix("torch."))),
                   **options)

    return ensure_batch_invariance(target, rebuild=rebuild, log=log)


def detect_family(config: dict, hint: str = "") -> str:
    """The adapter family of a checkpoint from its config.json (and a name hint such as the repo or folder):
    "llada", "dream", "sdar" (block diffusion on Qwen3) or "mlm" (a generic Hugging Face masked LM)."""
    model_type = str(config.get("model_type", "")).lower()
    archs = " ".join(config.get("architectures") or []).lower()
    hint = hint.lower()
    if model_type == "llada" or "llada" in archs:
        return "llada"
    if model_type == "dream" or "dream" in archs:
        return "dream"
    if model_type.startswith("sdar") or "sdar" in archs:
        return "sdar"
    if model_type == "qwen3" and ("sdar" in hint or any(k in config for k in BLOCK_SIZE_KEYS)):
        return "sdar"
    if model_type == "qwen2" and config.get("mask_token_id") == DREAM_MASK_ID:
        return "dream"
    return "mlm"


def remote_code_allowed(repo: str | None) -> bool:
    """True only for a Hub repository on the allow-list (never for a local folder)."""
    return repo in REMOTE_CODE_ALLOWED


def _resolve(name_or_path: str) -> tuple[Path, str | None, dict, str]:
    """(local folder, Hub repo or None, spec, display name) of a short name, a folder or a repo id."""
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise _error("model name is empty")
    name = name_or_path.strip()
    if name in PUBLISHED:
        spec = PUBLISHED[name]
        return _download_snapshot(spec["repo"], remote_code_allowed(spec["repo"])), spec["repo"], spec, name
    path = Path(name).expanduser()
    if path.is_dir():
        return path, None, {}, path.name
    if path.exists():
        raise _error(f"model {name!r}: {path} is a file, not a model folder")
    if name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name:
        raise _error(f"model folder {str(path)!r} does not exist")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", name) and not name.startswith((".", "/")):
        return _download_snapshot(name, remote_code_allowed(name)), name, {}, name
    raise _error(f"unknown published model {name!r}: not a known name ({', '.join(PUBLISHED)}), "
                 f"not an existing folder, not a Hugging Face repo id")


def _download_snapshot(repo: str, with_code: bool) -> Path:
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
        raise _error(f"model {repo!r} is not in the local Hugging Face cache and could not be downloaded "
                     f"({type(e).__name__}: {e}); download it where there is network access, "
                     f"or pass a folder") from None


def _read_config(folder: Path, name: str) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise _error(f"model {name!r}: {path} is missing")
    try:
        config = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _error(f"model {name!r}: config.json is not valid JSON ({e})") from None
    if not isinstance(config, dict):
        raise _error(f"model {name!r}: config.json is not a JSON object")
    return config


def _config_block_size(config: dict) -> int | None:
    for key in BLOCK_SIZE_KEYS:
        if isinstance(config.get(key), int) and config[key] > 0:
            return config[key]
    return None


def _check_safetensors(folder: Path, name: str) -> None:
    """Weights must be safetensors with readable headers; pickles are refused, never opened."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        pickled = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
        if pickled:
            raise _error(f"model {name!r}: {folder} has only pickle weights ({', '.join(pickled)}); spotviz "
                         f"loads safetensors only and never unpickles. Convert the checkpoint to safetensors.")
        raise _error(f"model {name!r}: no *.safetensors weights in {folder}")
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise _error(f"model {name!r}: {index.name} is not a valid index ({e})") from None
        missing = sorted(s for s in shards if not (folder / s).is_file())
        if missing:
            raise _error(f"model {name!r}: weight shards missing from {folder}: {', '.join(missing)}")
    from safetensors import safe_open

    for f in files:
        try:
            with safe_open(str(f), framework="pt") as handle:
                list(handle.keys())
        except Exception as e:  # safetensors raises its own error types
            raise _error(f"model {name!r}: {f.name} is corrupt or truncated ({e})") from None


def _from_pretrained(cls, folder: Path, config, dtype, name: str, **kwargs):
    """cls.from_pretrained from safetensors, without remote code; every weight must be matched exactly."""
    _check_safetensors(folder, name)
    try:
        model, report = cls.from_pretrained(str(folder), config=config, dtype=dtype, use_safetensors=True,
                                            trust_remote_code=False, output_loading_info=True, **kwargs)
    except Exception as e:
        raise _error(f"model {name!r}: could not load the weights from {folder} into {cls.__name__} "
                     f"({type(e).__name__}: {e})") from None
    problems = {k: sorted(report.get(k) or ()) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    problems = {k: v for k, v in problems.items() if v}
    if problems:
        detail = "; ".join(f"{k}: {', '.join(map(str, v[:4]))}{' ...' if len(v) > 4 else ''}"
                           for k, v in problems.items())
        raise _error(f"model {name!r}: the checkpoint does not match {cls.__name__} ({detail})")
    return model


def _plain_config(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in _NOT_CONFIG_KEYS}


def _load_stock_causal(folder: Path, config: dict, arch: str, dtype, name: str):
    """A Qwen2/Qwen3 checkpoint into the stock <arch>ForCausalLM (same tensor names as the published model)."""
    import transformers

    config_cls, model_cls = getattr(transformers, f"{arch}Config"), getattr(transformers, f"{arch}ForCausalLM")
    try:
        hf_config = config_cls.from_dict(_plain_config(config))
    except Exception as e:
        raise _error(f"model {name!r}: config.json does not describe a {arch} model ({e})") from None
    return _from_pretrained(model_cls, folder, hf_config, dtype, name, attn_implementation="sdpa")


def _load_sdar_model(folder: Path, config: dict, dtype, name: str):
    if config.get("num_experts") or "moe" in str(config.get("model_type", "")).lower():
        raise _error(f"model {name!r}: SDAR mixture-of-experts checkpoints are not supported (dense SDAR only)")
    return _load_stock_causal(folder, config, "Qwen3", dtype, name)


def _llada_llama_config(config: dict):
    """LLaDA's (OLMo-style) config as a LlamaConfig; raises ValueError naming what LLaMA cannot express."""
    from transformers import LlamaConfig

    required = {"block_type": "llama", "layer_norm_type": "rms", "activation_type": "silu", "rope": True,
                "layer_norm_with_affine": True}
    absent = {"alibi": False, "attention_layer_norm": False, "input_emb_norm": False, "scale_logits": False,
              "include_bias": False, "include_qkv_bias": False, "bias_for_layer_norm": False, "clip_qkv": None}
    bad = [f"{k}={config.get(k)!r}" for k, v in required.items() if config.get(k, v) != v]
    bad += [f"{k}={config.get(k)!r}" for k, v in absent.items() if config.get(k) not in (v, None, False)]
    if config.get("block_group_size", 1) not in (1, None):
        bad.append(f"block_group_size={config['block_group_size']!r}")
    if bad:
        raise ValueError(", ".join(bad))
    try:
        d_model, n_heads = int(config["d_model"]), int(config["n_heads"])
        n_kv = config.get("n_kv_heads") or (1 if config.get("multi_query_attention") else n_heads)
        return LlamaConfig(
            vocab_size=int(config.get("embedding_size") or config["vocab_size"]), hidden_size=d_model,
            intermediate_size=int(config.get("mlp_hidden_size") or config.get("mlp_ratio", 4) * d_model),
            num_hidden_layers=int(config["n_layers"]), num_attention_heads=n_heads, num_key_value_heads=int(n_kv),
            max_position_embeddings=int(config.get("max_sequence_length", 4096)),
            rms_norm_eps=float(config.get("rms_norm_eps", 1e-5)), rope_theta=float(config.get("rope_theta", 10000.0)),
            tie_word_embeddings=bool(config.get("weight_tying", False)), attention_bias=False, mlp_bias=False,
            pad_token_id=config.get("pad_token_id"), eos_token_id=config.get("eos_token_id"),
            bos_token_id=config.get("bos_token_id"),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"incomplete LLaDA config ({type(e).__name__}: {e})") from None


def _load_llada_model(folder: Path, config: dict, repo: str | None, dtype, name: str):
    """LLaDA into LlamaForCausalLM (renamed tensors); remote code only for allow-listed repos it cannot express."""
    from transformers import LlamaForCausalLM

    try:
        llama_config = _llada_llama_config(config)
    except ValueError as e:
        reason = f"its architecture is outside what LlamaForCausalLM can express ({e})"
        return _load_remote_code_model(folder, repo, dtype, name, reason)
    model = _from_pretrained(LlamaForCausalLM, folder, llama_config, dtype, name, attn_implementation="sdpa",
                             key_mapping=LLADA_KEY_MAPPING)
    if config.get("rope_full_precision", True):  # OLMo's default, and LLaDA's setting
        _rope_in_full_precision(model)
    return model


def _rope_in_full_precision(model) -> None:
    """LLaDA's `rope_full_precision`: RoPE rotates queries and keys in float32 (cos/sin in float32 too) and casts
    them back to the model's dtype. Stock Llama rotates in the model's dtype, which differs in bf16.

    The model's rotary embedding is made to return float32 cos/sin, and transformers' `apply_rotary_pos_emb` is
    wrapped once to rotate in float32 when it receives float32 cos/sin with lower-precision queries (a
    combination only this model produces: stock models get cos/sin in their own dtype, unchanged)."""
    from transformers.models.llama import modeling_llama

    rotary = model.model.rotary_emb
    plain = rotary.forward

    def forward_float32(x, position_ids):
        return plain(x.new_empty(0, dtype=torch.float32), position_ids)

    rotary.forward = forward_float32
    apply = modeling_llama.apply_rotary_pos_emb
    if getattr(apply, "spotviz_full_precision", False):
        return

    @functools.wraps(apply)
    def apply_rotary_pos_emb(q, k, cos, sin, *args, **kwargs):
        if cos.dtype == torch.float32 and q.dtype != torch.float32:
            q_rot, k_rot = apply(q.float(), k.float(), cos, sin, *args, **kwargs)
            return q_rot.to(q.dtype), k_rot.to(k.dtype)
        return apply(q, k, cos, sin, *args, **kwargs)

    apply_rotary_pos_emb.spotviz_full_precision = True
    modeling_llama.apply_rotary_pos_emb = apply_rotary_pos_emb


def _load_masked_lm(folder: Path, repo: str | None, dtype, name: str):
    """A Hugging Face masked LM of an architecture transformers knows (no remote code)."""
    from transformers import AutoConfig, AutoModelForMaskedLM

    from ..embedded import modeling  # noqa: F401  (registers spotviz's own architecture with the Auto classes)

    try:
        hf_config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    except Exception as e:  # unknown model_type, or a config that needs its own code
        return _load_remote_code_model(folder, repo, dtype, name,
                                       f"transformers does not know its architecture ({type(e).__name__}: {e})")
    known_heads = getattr(AutoModelForMaskedLM, "_model_mapping", None)  # config class -> masked-LM class
    if known_heads is not None and type(hf_config) not in known_heads:
        raise _error(f"model {name!r}: {type(hf_config).__name__} has no masked-LM head in transformers and is "
                     f"not a known diffusion family (sdar, llada, dream); see targets/published.py")
    return _from_pretrained(AutoModelForMaskedLM, folder, hf_config, dtype, name)


def _load_remote_code_model(folder: Path, repo: str | None, dtype, name: str, reason: str):
    """The published model class from its own repository code: only for REMOTE_CODE_ALLOWED repos."""
    if not remote_code_allowed(repo):
        where = f"repository {repo!r}" if repo else f"local folder {str(folder)!r}"
        raise _error(f"model {name!r} needs trust_remote_code because {reason}. spotviz runs remote code only "
                     f"for the allow-listed Hub repositories ({', '.join(sorted(REMOTE_CODE_ALLOWED))}), "
                     f"not for {where}.")
    _check_safetensors(folder, name)
    from transformers import AutoModel

    try:
        return AutoModel.from_pretrained(str(folder), trust_remote_code=True, use_safetensors=True, dtype=dtype)
    except Exception as e:
        raise _error(f"model {name!r}: could not load {repo} with its remote code ({type(e).__name__}: {e})") from None


def _is_remote(model) -> bool:
    return not type(model).__module__.startswith("transformers.")


def _load_tokenizer(folder: Path, name: str):
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
    raise _error(f"model {name!r}: could not load a tokenizer from {folder} ({' | '.join(errors)[:600]})")


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


def _token_id(tokenizer, token: str) -> int | None:
    """The id of `token` if the tokenizer has it as one token."""
    ids = tokenizer.convert_tokens_to_ids([token])
    tid = ids[0] if ids else None
    if tid is None or (tid == tokenizer.unk_token_id and token != tokenizer.unk_token):
        return None
    return int(tid)


def _first(*candidates):
    """The first candidate that is not None (ids may be 0)."""
    return next((c for c in candidates if c is not None), None)


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
    ids += [t for t in (_token_id(tokenizer, tok) for tok in END_TOKENS) if t is not None]
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
