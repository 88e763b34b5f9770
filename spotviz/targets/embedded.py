"""Adapter for spotviz's own masked-diffusion models (modeling.SpotDLMForMaskedLM).

The forward runs as a traced, frozen TorchScript graph (torch.jit.trace + freeze + optimize_for_inference): the
same operations as the eager model, minus Python's per-module dispatch, which is a large share of a pass this
small. One trace serves every batch size, window and cache length. It is used only where it is exact: on its
first call the traced logits must equal the eager ones (within fp32 tolerance) and a batched call must
reproduce a one-row call bit for bit; otherwise (or if tracing fails) the target stays eager for good.

A block model's call computes its last block apart (on the keys/values before it), so a window's logits are the
same numbers whether the call also reaches the next window or not: the fused pass of a
speculative decoder, and a tree drafted past a window's end, give bit for bit the standard decoder's logits
(info.blockwise_exact; measured before this, a single call over two windows differed in the last bit from a call
over one on some models and positions).
"""
from __future__ import annotations

import threading
import warnings

import torch

from ..embedded.modeling import SpotDLMForMaskedLM, block_causal_mask
from .base import MIN_MATMUL_ROWS, DiffusionTarget, ForwardOutput, PrefixCache, TargetInfo, apply_chat_template, \
    enough_rows


class _BlockForward(torch.nn.Module):
    """The block model's cached forward with flat inputs and outputs (what tracing needs)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, pos, mask, past: tuple):
        kv = [(past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2)]
        logits, present = self.model(ids, position_ids=pos, attention_mask=mask, past_key_values=kv,
                                      return_present=True)
        return logits, tuple(x for k_v in present for x in k_v)


class _FullForward(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, pos):
        return self.model(ids, position_ids=pos)


class EmbeddedTarget(DiffusionTarget):
    def __init__(self, model: SpotDLMForMaskedLM, tokenizer, name: str = "embedded", source: str = "",
                 traced: bool = True):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        cfg = model.config
        eos = cfg.eos_token_id if isinstance(cfg.eos_token_id, (list, tuple)) else [cfg.eos_token_id]
        self.info = TargetInfo(
            name=name, attention=cfg.attention, block_size=cfg.block_size, mask_id=cfg.mask_token_id,
            eos_ids=tuple(int(e) for e in eos if e is not None), vocab_size=cfg.vocab_size,
            max_length=cfg.max_position_embeddings, source=source, blockwise_exact=True,
        )
        self.traced = traced  # True: try the traced forward; False: eager (also after a failed check)
        self._graph = None
        self._lock = threading.Lock()
        self._masks: dict = {}
        hd = cfg.hidden_size // cfg.num_attention_heads
        dtype = next(model.parameters()).dtype
        self._empty = tuple(torch.zeros(1, cfg.num_attention_heads, 0, hd, dtype=dtype, device=self.device)
                            for _ in range(2 * cfg.num_hidden_layers))

    def format_prompt(self, text: str) -> str:
        """The model's prompt template applied where its tokenizer has one (math-bd: a bare question becomes
        "Question: ...\nAnswer:"; a prompt already in that form is kept as it is)."""
        return apply_chat_template(self.tokenizer, text)

    def encode(self, text: str) -> list[int]:
        """Token ids of a prompt, through the model's prompt template (format_prompt)."""
        return super().encode(self.format_prompt(text))

    # ------------------------------------------------------------------ the forward
    def _inputs(self, start: int, hi: int):
        """Positions and the block-causal mask of a call (cached: they depend only on (start, hi))."""
        key = (start, hi)
        if key not in self._masks:
            pos = torch.arange(start, hi, device=self.device)
            mask = block_causal_mask(pos, pos, self.info.block_size)
            if start:
                mask = torch.cat([torch.ones(hi - start, start, dtype=torch.bool, device=self.device), mask], 1)
            self._masks[key] = (pos.unsqueeze(0), mask.view(1, 1, *mask.shape))
        return self._masks[key]

    def _eager(self, args):
        if self.info.attention == "full":
            return _FullForward(self.model)(*args)
        return _BlockForward(self.model)(*args)

    def _run(self, args):
        if self.traced and self._graph is None:
            with self._lock:
                if self._graph is None and self.traced:
                    self._graph = self._trace(args)
                    self.traced = self._graph is not None
        if self.traced:
            return self._graph(*args)
        return self._eager(args)

    def _trace(self, args):
        """A frozen graph of the forward, or None if tracing fails or is not exact on these inputs."""
        module = _FullForward(self.model) if self.info.attention == "full" else _BlockForward(self.model)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                graph = torch.jit.trace(module, args, check_trace=False)
                graph = torch.jit.optimize_for_inference(torch.jit.freeze(graph.eval()))
            ids = args[0][:1]
            many = ids.repeat(4, 1)
            one_args, many_args = (ids, *args[1:]), (many, *args[1:])
            def logits(out):  # the block forward returns (logits, keys/values), the full one logits
                return out[0] if isinstance(out, tuple) else out

            ref = logits(self._eager(one_args))
            got, batched = logits(graph(*one_args)), logits(graph(*many_args))
            if not torch.allclose(got, ref, rtol=1e-4, atol=1e-5) or not all(torch.equal(r, got[0]) for r in batched):
                return None
            return graph
        except Exception:  # noqa: BLE001 - any failure: the eager model is always right
            return None

    @torch.no_grad()
    def forward(self, states: torch.Tensor, lo: int, hi: int, cache: PrefixCache) -> ForwardOutput:
        states = states.to(self.device)
        if self.info.attention == "full":
            rows = states.shape[0]
            pos = torch.arange(states.shape[1], device=self.device).unsqueeze(0)
            logits = self._run((enough_rows(states), pos))[:rows, lo:hi]  # every pass: the whole sequence
            return ForwardOutput(logits.float(), start=0)
        start = cache.length
        if not (start <= lo and start % self.info.block_size == 0):
            raise ValueError(f"cache of length {start} cannot serve window [{lo}, {hi})")
        # the last block apart: its queries attend to the keys/values before it (the cache, then this call's
        # earlier blocks, per row) and to its own block, so a window's logits are the same numbers whether the call
        # ends with it or reaches one window further (blockwise_exact); the blocks before the last (a prompt, a
        # finished window) go in one sub-call
        rows = states.shape[0]
        past = tuple(x for k_v in cache.kv for x in k_v) if cache.kv else self._empty
        logits, present = [], None
        last = max(start, hi - 1 - (hi - 1) % self.info.block_size)  # the start of the call's last block
        for a, b in ((start, last), (last, hi)):
            if a == b:
                continue
            out, flat = self._block(states[:, a:b], a, b, past)
            logits.append(out)
            present = flat if present is None else tuple(torch.cat([p, f], 2) for p, f in zip(present, flat))
            if b < hi:  # the next block sees this one's keys/values, row by row
                past = tuple(torch.cat([x.expand(rows, -1, -1, -1), f], 2) for x, f in zip(past, flat))
        present = [(present[2 * i], present[2 * i + 1]) for i in range(len(present) // 2)]
        return ForwardOutput(torch.cat(logits, 1)[:, lo - start:].float(), start=start, present=present)

    def _block(self, ids: torch.Tensor, a: int, b: int, past: tuple):
        """Positions [a, b) (whole blocks, the last maybe ragged) of every row, on the keys/values `past` of
        positions [0, a) (shared [1, ...] or per row): (logits [rows, b - a, V], their keys/values per layer, flat)."""
        rows = ids.shape[0]
        pos, mask = self._inputs(a, b)
        # (a ragged last block of a few positions: repeated rows, base.enough_rows; at least a block's worth, as
        # before, for a model of blocks wider than 16)
        more = enough_rows(ids, max(MIN_MATMUL_ROWS, self.info.block_size))
        if more.shape[0] > rows:  # (per-row keys/values are repeated with their rows)
            reps = more.shape[0] // rows
            past = tuple(x.repeat(reps, 1, 1, 1) if x.shape[0] > 1 else x for x in past)
        logits, flat = self._run((more, pos, mask, past))
        return logits[:rows], tuple(x[:rows] for x in flat)

    def extend_cache(self, cache: PrefixCache, out: ForwardOutput, row: int, upto: int) -> PrefixCache:
        if self.info.attention == "full" or upto <= cache.length:
            return cache
        if out.start != cache.length:
            raise ValueError("forward output does not continue this cache")
        n = upto - cache.length
        new = []
        for i, (k, v) in enumerate(out.present):
            k, v = k[row : row + 1, :, :n], v[row : row + 1, :, :n]
            if cache.kv:
                k = torch.cat([cache.kv[i][0], k], 2)
                v = torch.cat([cache.kv[i][1], v], 2)
            new.append((k, v))
        return PrefixCache(upto, tuple(new))
