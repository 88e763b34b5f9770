"""Adapter for spotviz's own masked-diffusion models (modeling.SpotDLMForMaskedLM)."""
from __future__ import annotations

import torch

from ..embedded.modeling import SpotDLMForMaskedLM, block_causal_mask
from .base import DiffusionTarget, ForwardOutput, PrefixCache, TargetInfo


class EmbeddedTarget(DiffusionTarget):
    def __init__(self, model: SpotDLMForMaskedLM, tokenizer, name: str = "embedded", source: str = ""):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        cfg = model.config
        eos = cfg.eos_token_id if isinstance(cfg.eos_token_id, (list, tuple)) else [cfg.eos_token_id]
        self.info = TargetInfo(
            name=name, attention=cfg.attention, block_size=cfg.block_size, mask_id=cfg.mask_token_id,
            eos_ids=tuple(int(e) for e in eos if e is not None), vocab_size=cfg.vocab_size,
            max_length=cfg.max_position_embeddings, source=source,
        )

    @torch.no_grad()
    def forward(self, states: torch.Tensor, lo: int, hi: int, cache: PrefixCache) -> ForwardOutput:
        states = states.to(self.device)
        if self.info.attention == "full":
            logits = self.model(states)[:, lo:hi]  # every pass sees the whole sequence
            return ForwardOutput(logits.float(), start=0)
        start = cache.length
        if not (start <= lo and start % self.info.block_size == 0):
            raise ValueError(f"cache of length {start} cannot serve window [{lo}, {hi})")
        pos = torch.arange(start, hi, device=self.device)
        mask = block_causal_mask(pos, pos, self.info.block_size)
        if start:
            mask = torch.cat([torch.ones(hi - start, start, dtype=torch.bool, device=self.device), mask], 1)
        logits, present = self.model(
            states[:, start:hi], position_ids=pos.unsqueeze(0), attention_mask=mask.view(1, 1, *mask.shape),
            past_key_values=list(cache.kv) if cache.kv else None, return_present=True,
        )
        return ForwardOutput(logits[:, lo - start :].float(), start=start, present=present)

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
