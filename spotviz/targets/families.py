"""The published DLM families: how each one's checkpoint becomes a target (the FAMILIES table), and
`detect_family`, which tells them apart from a config.json.

    family  published as                      loaded into            attention        logit for position i
    sdar    SDARForCausalLM (Qwen3 + qk-norm)   Qwen3ForCausalLM       block-causal     output i
    llada   LLaDAModelLM (OLMo-style LLaMA)     LlamaForCausalLM       full             output i
    dream   DreamModel (Qwen2.5)                Qwen2ForCausalLM       full             output i - 1
    mlm     any AutoModelForMaskedLM            AutoModelForMaskedLM   the model's own  output i

LLaDA's checkpoint names its tensors the OLMo way (model.transformer.blocks.N.q_proj, ...); they are renamed
to LLaMA's on load (LLADA_KEY_MAPPING). Remote code runs only as a fallback, only for the repositories in
REMOTE_CODE_ALLOWED, and only where the stock mapping cannot represent the checkpoint.

Every loader takes (folder, config, repo, dtype, name) and returns the torch
model; the files are checked and opened by targets/hub.py.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from .adapters import BlockCausalTarget, FullAttentionTarget, MaskedLMTarget
from .base import ModelLoadError
from .hub import from_pretrained, load_remote_code_model, remote_code_allowed

LLADA_MASK_ID = 126336
DREAM_MASK_ID = 151666
SDAR_MASK_TOKEN = "<|MASK|>"
BLOCK_SIZE_KEYS = ("block_size", "block_length", "bd_size")  # config keys that carry a block-diffusion size

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


def detect_family(config: dict, hint: str = "") -> str:
    """The adapter family of a checkpoint from its config.json (and, for a Qwen3 config without SDAR's block-size
    key, the name of the Hub repository it came from; never a local folder's name): "llada", "dream", "sdar" (block
    diffusion on Qwen3) or "mlm" (a generic Hugging Face masked LM)."""
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


def _plain_config(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in _NOT_CONFIG_KEYS}


def _load_stock_causal(folder: Path, config: dict, arch: str, dtype, name: str):
    """A Qwen2/Qwen3 checkpoint into the stock <arch>ForCausalLM (same tensor names as the published model)."""
    import transformers

    config_cls, model_cls = getattr(transformers, f"{arch}Config"), getattr(transformers, f"{arch}ForCausalLM")
    try:
        hf_config = config_cls.from_dict(_plain_config(config))
    except Exception as e:
        raise ModelLoadError(f"model {name!r}: config.json does not describe a {arch} model ({e})") from None
    return from_pretrained(model_cls, folder, hf_config, dtype, name, attn_implementation="sdpa")


def _load_sdar(folder: Path, config: dict, repo: str | None, dtype, name: str):
    if config.get("num_experts") or "moe" in str(config.get("model_type", "")).lower():
        raise ModelLoadError(f"model {name!r}: SDAR mixture-of-experts checkpoints are not supported (dense SDAR only)")
    return _load_stock_causal(folder, config, "Qwen3", dtype, name)


LLADA_CONFIG_KEYS = ("d_model", "n_heads", "n_layers")  # what an OLMo-style (LLaDA) config cannot do without


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


def _load_llada(folder: Path, config: dict, repo: str | None, dtype, name: str):
    """LLaDA into LlamaForCausalLM (renamed tensors); remote code only for allow-listed repos it cannot express."""
    from transformers import LlamaForCausalLM

    missing = [k for k in LLADA_CONFIG_KEYS if k not in config]
    if "vocab_size" not in config and "embedding_size" not in config:
        missing.append("vocab_size (or embedding_size)")
    if missing and not remote_code_allowed(repo):  # (not LLaDA's config at all: remote code is not the lever)
        raise ModelLoadError(
            f"model {name!r}: config.json says LLaDA but lacks the keys of LLaDA's OLMo-style config: "
            f"{', '.join(missing)} (LLaDA's own config.json has d_model, n_heads, n_kv_heads, n_layers, "
            f"mlp_hidden_size, max_sequence_length, vocab_size / embedding_size, block_type \"llama\", rope true; "
            f"a Llama-layout config.json with model_type \"llada\" is not one: docs/MODELS.md)")
    try:
        llama_config = _llada_llama_config(config)
    except ValueError as e:
        reason = f"its architecture is outside what LlamaForCausalLM can express ({e})"
        return load_remote_code_model(folder, repo, dtype, name, reason)
    model = from_pretrained(LlamaForCausalLM, folder, llama_config, dtype, name, attn_implementation="sdpa",
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


def _load_masked_lm(folder: Path, config: dict, repo: str | None, dtype, name: str):
    """A Hugging Face masked LM of an architecture transformers knows (no remote code)."""
    from transformers import AutoConfig, AutoModelForMaskedLM

    from ..embedded import modeling  # noqa: F401  (registers spotviz's own architecture with the Auto classes)

    try:
        hf_config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    except Exception as e:  # unknown model_type, or a config that needs its own code
        why = str(e).split(". ")[0]  # (transformers' first sentence; the rest advises upgrading it, which won't help)
        return load_remote_code_model(folder, repo, dtype, name,
                                       f"transformers does not know its architecture ({type(e).__name__}: {why})")
    known_heads = getattr(AutoModelForMaskedLM, "_model_mapping", None)  # config class -> masked-LM class
    if known_heads is not None and type(hf_config) not in known_heads:
        raise ModelLoadError(f"model {name!r}: {type(hf_config).__name__} has no masked-LM head in transformers and is "
                             f"not a known diffusion family (sdar, llada, dream: detected from config.json's "
                             f"model_type or architectures; an SDAR checkpoint says model_type \"sdar\")")
    return from_pretrained(AutoModelForMaskedLM, folder, hf_config, dtype, name)


def _is_remote(model) -> bool:
    return not type(model).__module__.startswith("transformers.")


def token_id(tokenizer, token: str) -> int | None:
    """The id of `token` if the tokenizer has it as one token."""
    ids = tokenizer.convert_tokens_to_ids([token])
    tid = ids[0] if ids else None
    if tid is None or (tid == tokenizer.unk_token_id and token != tokenizer.unk_token):
        return None
    return int(tid)


def first(*candidates):
    """The first candidate that is not None (ids may be 0)."""
    return next((c for c in candidates if c is not None), None)


@dataclass(frozen=True)
class Family:
    """How one family's checkpoint becomes a target."""

    load: Callable  # (folder, config, repo, dtype, name) -> the torch model
    attention: str  # "block" (block-causal, cached) or "full"
    logit_shift: int  # the logit of position i is output i - logit_shift
    mask_id: Callable  # (config, tokenizer) -> the MASK token's id, or None
    adapter: Callable  # (model) -> the adapter class
    mask_source: str = "config.json's mask_token_id"  # where mask_id looks, in words (for the error when it finds none)


FAMILIES: dict[str, Family] = {
    "sdar": Family(_load_sdar, "block", 0,
                   lambda config, tok: first(config.get("mask_token_id"), token_id(tok, SDAR_MASK_TOKEN),
                                             tok.mask_token_id),
                   lambda model: BlockCausalTarget,
                   f"config.json's mask_token_id, else the tokenizer's {SDAR_MASK_TOKEN} token, else its mask token"),
    "llada": Family(_load_llada, "full", 0, lambda config, tok: first(config.get("mask_token_id"), LLADA_MASK_ID),
                    lambda model: MaskedLMTarget if _is_remote(model) else FullAttentionTarget,
                    f"config.json's mask_token_id, else {LLADA_MASK_ID}"),
    "dream": Family(lambda folder, config, repo, dtype, name: _load_stock_causal(folder, config, "Qwen2", dtype, name),
                    "full", 1,
                    lambda config, tok: first(config.get("mask_token_id"), tok.mask_token_id, DREAM_MASK_ID),
                    lambda model: FullAttentionTarget,
                    f"config.json's mask_token_id, else the tokenizer's mask token, else {DREAM_MASK_ID}"),
    "mlm": Family(_load_masked_lm, "full", 0, lambda config, tok: first(tok.mask_token_id, config.get("mask_token_id")),
                  lambda model: MaskedLMTarget, "the tokenizer's mask token, else config.json's mask_token_id"),
}
