"""One interface for every diffusion target: embedded models and published DLMs alike.

A *state* is a full token row (prompt, committed tokens, MASKs). Decoders ask a target for the logits of a
window [lo, hi) of a batch of states. Block-causal targets keep an exact prefix cache of finished blocks; a
batched forward reads that cache but never modifies it, and `extend_cache` returns a new cache.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import torch


MIN_MATMUL_ROWS = 16  # the fewest positions (rows x length) a forward call multiplies at once (enough_rows)


def enough_rows(ids: torch.Tensor, at_least: int = MIN_MATMUL_ROWS) -> torch.Tensor:
    """`ids` [rows, n], its rows repeated until they hold `at_least` positions where they hold fewer; the
    caller keeps the first `rows` of the output (the same computation per row). BLAS multiplies a matrix of 1-3 rows
    by other kernels than a larger one, so a one-row pass of a few positions (a ragged last block; a whole sequence
    of 2-3 tokens under full attention) was not bit-identical to the same row in a batch (targets/invariance.py;
    shakespeare-mdlm at gen_length 2 gave SPOT another token than the standard decoder)."""
    rows, n = ids.shape
    if rows * n >= at_least or rows * n == 0:
        return ids
    return ids.repeat(-(-at_least // (rows * n)), 1)


class ModelLoadError(ValueError):
    """A model that cannot be loaded, with the reason and what to do (re-exported by spotviz.registry)."""


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """"auto" (or None): cuda when available, else cpu; else "cpu", "cuda", "cuda:N" or "mps", checked to exist
    here (ModelLoadError otherwise), so that a bad --device is one message, not a traceback from torch."""
    if device is None or isinstance(device, str) and device.strip() in ("", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(str(device).strip())
    except (RuntimeError, ValueError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda", "mps"):
        raise ModelLoadError(f"unknown device {str(device)!r}; use auto, cpu, cuda, cuda:N or mps")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
            raise ModelLoadError(f"device {str(device)!r}: CUDA is not available ({why}); use --device cpu or auto")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ModelLoadError(f"device {str(device)!r}: there are only {torch.cuda.device_count()} CUDA devices")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ModelLoadError(f"device {str(device)!r}: MPS is not available on this machine; use --device cpu or auto")
    return dev


@dataclass(frozen=True)
class PrefixCache:
    """Keys/values of positions [0, length) shared by every state of a forward (block-causal targets only)."""

    length: int = 0
    kv: tuple | None = None  # per layer (k, v), each [1, heads, length, head_dim]; or a model-specific object


@dataclass
class ForwardOutput:
    logits: torch.Tensor  # [batch, hi - lo, vocab], float32
    start: int  # first position whose keys/values are in `present` (= cache length at the call)
    present: object = None  # per-row keys/values of positions [start, hi), for extend_cache


@dataclass
class TargetInfo:
    name: str
    attention: str  # "block" (block-causal, cached) or "full" (bidirectional, semi-AR windows)
    block_size: int
    mask_id: int
    eos_ids: tuple[int, ...]
    vocab_size: int
    max_length: int
    logit_shift: int = 0
    source: str = ""
    extra: dict = field(default_factory=dict)
    # True: a batched pass reproduces one-row logits bit for bit (probed at load, targets/invariance.py), so
    # speculative output is identical to the standard decoder's; False: not on this device/dtype; None: unchecked
    # (not guaranteed either)
    batch_invariant: bool | None = None
    # True: a call's logits of a window do not depend on how far the call reaches (a block-causal model computed
    # with its last block apart, or full attention, which always sees the whole row): a pass may evaluate the next
    # window too (the fused pass) and a draft tree may go on past a window's end with the standard decoder's numbers
    blockwise_exact: bool = False


_SLOT = "\x00question\x00"


def apply_chat_template(tokenizer, text: str) -> str:
    """`text` as one user turn of the tokenizer's chat template, ready for the model to answer; a text that
    already starts with the template's opening is not wrapped twice (the generation cue is added if it lacks it).
    Without a chat template the text is returned as it is."""
    if not getattr(tokenizer, "chat_template", None):
        return text
    full = tokenizer.apply_chat_template([{"role": "user", "content": _SLOT}], tokenize=False,
                                         add_generation_prompt=True)
    head, _, tail = full.partition(_SLOT)
    if head.strip() and text.lstrip().startswith(head.strip()):
        return text if not tail.strip() or tail.strip() in text else text.rstrip() + tail
    return tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                         add_generation_prompt=True)


class DiffusionTarget(ABC):
    """A masked-diffusion LM behind one interface (see module docstring)."""

    info: TargetInfo
    tokenizer: object
    device: torch.device
    # a virtual clock (seconds) that decoders time passes and runs on instead of the machine's; None: the machine's
    # (samplers/simulated.py charges forwards at another device's cost curve)
    clock = None

    # -------------------------------------------------------------- windows
    def windows(self, prompt_len: int, total_len: int) -> list[tuple[int, int]]:
        """The decoding windows covering the generated positions [prompt_len, total_len)."""
        b = self.info.block_size
        if self.info.attention == "block":  # absolute, aligned blocks; the first holds the prompt's tail
            start = (prompt_len // b) * b
        else:  # semi-AR windows start at the end of the prompt (LLaDA's block_length)
            start = prompt_len
        return [(lo, min(lo + b, total_len)) for lo in range(start, total_len, b)]

    def empty_cache(self) -> PrefixCache:
        return PrefixCache()

    @abstractmethod
    def forward(self, states: torch.Tensor, lo: int, hi: int, cache: PrefixCache) -> ForwardOutput:
        """Logits of window [lo, hi) for each state row ([batch, total_len] long, on any device).

        All rows must agree on positions [0, cache.length). One call is one target pass."""

    def extend_cache(self, cache: PrefixCache, out: ForwardOutput, row: int, upto: int) -> PrefixCache:
        """A cache covering [0, upto), using row `row` of a forward's keys/values. No-op for full attention."""
        return cache

    # -------------------------------------------------------------- text
    def format_prompt(self, text: str) -> str:
        """A prompt as the model is given it (chat models: inside their template); plain text by default."""
        return text

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def token_strings(self, ids) -> dict[int, str]:
        """Display string of each token id (byte-level pieces decoded one by one)."""
        return {int(i): self.tokenizer.decode([int(i)], clean_up_tokenization_spaces=False) for i in set(ids)}

    def display_strings(self, ids) -> dict[int, str]:
        """What views show for each token id: its string, "[MASK]" for MASK, and one mark "∎" for end of text (a
        finished block is filled with it: one mark per slot reads better than a tag per slot)."""
        out = self.token_strings(ids)
        if self.info.mask_id in out:
            out[self.info.mask_id] = "[MASK]"
        for e in self.info.eos_ids:
            if e in out:
                out[e] = "∎"
        return out
