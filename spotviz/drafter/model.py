"""The SPOT drafter: ~0.62M parameters that predict the order (and sets) in which the target commits positions.

per-position features -> linear encoder -> small bidirectional transformer over the window ->
  * pointer head: score of "position j is committed at depth d" (a depth query against each position), plus a
    pairwise term for every decision already on the path (how a drafted commit at i moves j), plus terms in the
    root log-probability of the token the coupled noise picks for j at that depth and in its rank; the pointer
    distribution is mixed with the stale-confidence order (the training-free one) by a weight per temperature;
  * keep head: probability that the drafted (stale) token at j is still the target's token, given the path's
    drafted commits (tokens go stale next to fresh commits); runner-up head: probability that the new token is
    the coupled runner-up;
  * set head (SPOT-Sets): probability that j is in the commit set at depth d, mixed likewise with the stale rule.
The decoding temperature is a feature, and the scalar weights move with it.
One forward per target pass gives everything the tree builder needs; paths are scored with cheap sums.
This module: the torch module and its files (safetensors + drafter.json). The same forward in numpy for inference
is drafter/numpy_forward.py; the training losses are drafter/losses.py.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .features import N_FEATURES, TEMPERATURE_FEATURE, check_topk, n_features, topk_of


@dataclass
class DrafterConfig:
    n_features: int = N_FEATURES
    d_model: int = 128
    n_layers: int = 3
    n_heads: int = 4
    d_ff: int = 400
    max_depth: int = 16
    max_width: int = 64
    rel_clip: int = 8
    dropout: float = 0.0
    target: str = ""  # the target model it was trained on (informational)
    vocab_size: int = 0  # informational: the drafter does not depend on the vocabulary
    block_size: int = 16  # window it was trained on

    @property
    def topk(self) -> int:
        """How many of the root's top probabilities per position the drafter reads (n_features = topk + 15)."""
        return topk_of(self.n_features)


class DrafterOutput(dict):
    """base [B, D, W] pointer scores, pair [B, W, W] (row j: effect of a path commit at i), alpha [B, 1, 1]
    (coupled-token weight at the state's temperature), rank_bias [B, max_width] (score by stale rank), mix [B, 1, 1]
    (weight of the learned pointer against the stale-confidence distribution), runner_up [B, 1, 1] (probability
    that a stale token's replacement is the coupled runner-up), keep_base [B, W], keep_rel [W, W], set_base [B, D, W],
    set_alpha [B, 1, 1], set_temp, set_mix [B, 1, 1] (weight of the learned set head against the stale rule)."""


class SpotDrafter(nn.Module):
    def __init__(self, cfg: DrafterConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.inp = nn.Sequential(nn.Linear(cfg.n_features, d), nn.GELU(), nn.Linear(d, d))
        self.pos = nn.Embedding(cfg.max_width, d)
        layer = nn.TransformerEncoderLayer(d, cfg.n_heads, cfg.d_ff, cfg.dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.depth = nn.Embedding(cfg.max_depth, d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.pa = nn.Linear(d, d // 2, bias=False)
        self.pb = nn.Linear(d, d // 2, bias=False)
        n_rel = 2 * cfg.rel_clip + 1
        self.rel = nn.Parameter(torch.zeros(n_rel))
        self.alpha = nn.Parameter(torch.tensor(1.0))
        self.alpha_t = nn.Parameter(torch.tensor(0.0))  # the coupled token's weight moves with the temperature
        # score of the stale-confidence rank (among remaining positions) at each depth; row 1 scales with T
        self.rank_bias = nn.Parameter(torch.zeros(2, cfg.max_width))
        # pointer = lam * softmax(learned scores) + (1 - lam) * stale confidences; lam = sigmoid(mix0 + mix1 * T)
        self.mix = nn.Parameter(torch.zeros(2))
        # P(the target's new token is the coupled runner-up | the stale token went stale) = sigmoid(ru0 + ru1 * T)
        self.runner_up = nn.Parameter(torch.zeros(2))
        self.keep = nn.Linear(d, 1)
        self.keep_rel = nn.Parameter(torch.zeros(n_rel))
        self.sq = nn.Linear(d, d, bias=False)
        self.sk = nn.Linear(d, d, bias=False)
        self.set_bias = nn.Parameter(torch.zeros(cfg.max_depth))
        self.set_alpha = nn.Parameter(torch.tensor(1.0))
        self.set_alpha_t = nn.Parameter(torch.tensor(0.0))
        self.set_temp = nn.Parameter(torch.tensor(1.0))  # refit by light calibration for a new target
        self.set_mix = nn.Parameter(torch.zeros(2))  # learned inclusion vs the stale rule, as `mix` for the pointer

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def rel_index(self, w: int, device) -> torch.Tensor:
        i = torch.arange(w, device=device)
        c = self.cfg.rel_clip
        return (i.unsqueeze(1) - i.unsqueeze(0)).clamp(-c, c) + c  # [j, i] -> offset j - i

    def _encode(self, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        """The encoder's pre-norm layers as plain functional ops (same weights as nn.TransformerEncoder; about 25%
        faster on a 16-position window than its fused path, which re-checks every submodule on each call)."""
        b, w, d = x.shape
        nh = self.cfg.n_heads
        mask = None if valid is None else valid.view(b, 1, 1, w)
        drop = self.cfg.dropout if self.training else 0.0
        for layer in self.encoder.layers:
            a = F.layer_norm(x, (d,), layer.norm1.weight, layer.norm1.bias, layer.norm1.eps)
            qkv = F.linear(a, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias)
            q, k, v = qkv.view(b, w, 3, nh, d // nh).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)
            y = F.linear(y.transpose(1, 2).reshape(b, w, d), layer.self_attn.out_proj.weight,
                         layer.self_attn.out_proj.bias)
            x = x + F.dropout(y, drop, self.training)
            a = F.layer_norm(x, (d,), layer.norm2.weight, layer.norm2.bias, layer.norm2.eps)
            y = layer.linear2(F.dropout(F.gelu(layer.linear1(a)), drop, self.training))
            x = x + F.dropout(y, drop, self.training)
        return x

    def forward(self, feats: torch.Tensor, valid: torch.Tensor | None = None) -> DrafterOutput:
        """feats [B, W, F] (W <= max_width), valid [B, W] bool (padding False). Outputs batched [B, ...]."""
        b, w, _ = feats.shape
        x = self.inp(feats) + self.pos.weight[:w]
        h = self.norm(self._encode(x, valid))
        dq = self.q(self.depth.weight)  # [D, d]
        scale = 1 / math.sqrt(h.shape[-1])
        base = torch.einsum("dk,bwk->bdw", dq, self.k(h)) * scale
        pair = torch.einsum("bjk,bik->bji", self.pa(h), self.pb(h)) * scale
        ri = self.rel_index(w, h.device)
        pair = pair + self.rel[ri]
        keep_base = self.keep(h).squeeze(-1)
        set_base = (torch.einsum("dk,bwk->bdw", self.sq(self.depth.weight), self.sk(h)) * scale
                    + self.set_bias.view(1, -1, 1))
        temp = feats[:, 0, TEMPERATURE_FEATURE].view(b, 1, 1)  # per-state decoding temperature
        return DrafterOutput(base=base, pair=pair, alpha=self.alpha + self.alpha_t * temp,
                             rank_bias=self.rank_bias[0] + self.rank_bias[1] * temp.view(b, 1),
                             mix=torch.sigmoid(self.mix[0] + self.mix[1] * temp),
                             runner_up=torch.sigmoid(self.runner_up[0] + self.runner_up[1] * temp), keep_base=keep_base,
                             keep_rel=self.keep_rel[ri], set_base=set_base,
                             set_alpha=self.set_alpha + self.set_alpha_t * temp, set_temp=self.set_temp,
                             set_mix=torch.sigmoid(self.set_mix[0] + self.set_mix[1] * temp))

    # --------------------------------------------------------------------------------------- files
    def save(self, folder: str | Path, extra: dict | None = None, dtype: torch.dtype = torch.bfloat16) -> None:
        """Weights as safetensors (bf16 by default: half the size; loaded back as float32) + drafter.json."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().to(dtype).contiguous().cpu() for k, v in self.state_dict().items()},
                  str(folder / "drafter.safetensors"))
        (folder / "drafter.json").write_text(json.dumps(asdict(self.cfg) | {"n_params": self.n_params()}
                                                        | (extra or {}), indent=1))

    @classmethod
    def load(cls, folder: str | Path, device=None) -> "SpotDrafter":
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        folder = Path(folder)
        cfg_file, w_file = folder / "drafter.json", folder / "drafter.safetensors"
        if not cfg_file.is_file() or not w_file.is_file():
            raise ValueError(f"no drafter at {folder} (needs drafter.json and drafter.safetensors)")
        try:
            raw = json.loads(cfg_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"drafter config {cfg_file} is not valid JSON: {e}") from None
        if not isinstance(raw, dict):
            raise ValueError(f"drafter config {cfg_file} must be a JSON object, got {type(raw).__name__}")
        fields = set(DrafterConfig.__dataclass_fields__)
        nf = raw.get("n_features", N_FEATURES)
        try:
            check_topk(topk_of(nf) if isinstance(nf, int) and not isinstance(nf, bool) else None)
        except ValueError:
            raise ValueError(f"drafter at {folder} reads {nf!r} features per position, which this version of spotviz "
                             f"does not compute (the root's top-k probabilities and {n_features(0)} others); retrain "
                             f"it with `python -m spotviz train-drafter`") from None
        try:
            cfg = DrafterConfig(**{k: v for k, v in raw.items() if k in fields})
            model = cls(cfg)
        except (TypeError, ValueError, AssertionError, RuntimeError) as e:
            raise ValueError(f"drafter config {cfg_file} is invalid: {e}") from None
        try:
            state = load_file(str(w_file))
        except (SafetensorError, OSError) as e:
            raise ValueError(f"drafter weights {w_file} are corrupt or truncated: {e}") from None
        try:
            missing, unexpected = model.load_state_dict(state, strict=False)
        except RuntimeError as e:  # tensor shapes that do not match the config
            raise ValueError(f"drafter weights {w_file} do not match its config (retrain it with "
                             f"`python -m spotviz train-drafter`): {e}") from None
        if missing or unexpected:
            raise ValueError(f"drafter weights {w_file} do not match its config "
                             f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
        return model.to(device or "cpu").eval()
