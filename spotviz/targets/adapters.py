"""The adapters that run published DLMs behind the DiffusionTarget interface (loaded by targets/published.py).

Each runs a *stock* transformers model and sets the attention pattern itself with an explicit 4D mask (no remote
code, no flash-attn): block-causal with an exact prefix cache (BlockCausalTarget, SDAR), full bidirectional over
the whole state (FullAttentionTarget, LLaDA and Dream), or the model's own attention (MaskedLMTarget).
"""
from __future__ import annotations

import functools
import inspect

import torch

from .base import DiffusionTarget, ForwardOutput, PrefixCache, TargetInfo, apply_chat_template, enough_rows

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
        rows = ids.shape[0]
        hidden = self.backbone(input_ids=enough_rows(ids), attention_mask=mask, position_ids=q_pos[None],
                               use_cache=True, **{self._cache_arg: view}).last_hidden_state
        # the head over whole blocks: a one-row pass of a narrow window would otherwise multiply a matrix of one
        # or two rows, which BLAS computes differently from a batch's (not bit-identical: targets/invariance.py);
        # a block narrower than 16 positions, over repeated rows (base.enough_rows; the first `rows` kept)
        first = (lo // b) * b
        logits = self.lm_head(hidden[:, first - start:])[:rows, lo - first: hi - first]
        present = tuple((k[:rows], v[:rows]) for k, v in view.present_kv())
        return ForwardOutput(logits.float(), start=start, present=present)

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
        rows, n = states.shape
        mask = torch.zeros(1, 1, n, n, dtype=self.dtype, device=self.device)  # everyone sees everyone
        pos = torch.arange(n, device=self.device)[None]
        hidden = self.backbone(input_ids=enough_rows(states), attention_mask=mask, position_ids=pos,
                               use_cache=False).last_hidden_state  # (a sequence of a few tokens: rows repeated)
        # the head only on the window, widened to a block's width: a one-row pass of a narrow window would
        # otherwise multiply a matrix of one or two rows, not bit-identical to a batch's (targets/invariance.py);
        # over the repeated rows too, where a sequence is shorter than that (base.enough_rows)
        width = max(hi - lo, min(self.info.block_size, n))
        first = max(0, min(lo, n - width))
        logits = self.lm_head(hidden[:, self._source_positions(first, first + width)])[:rows, lo - first: hi - first]
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
        logits = self.model(input_ids=enough_rows(states)).logits[:states.shape[0]]  # (a few tokens: base.py)
        return ForwardOutput(logits[:, self._source_positions(lo, hi)].float(), start=0)
