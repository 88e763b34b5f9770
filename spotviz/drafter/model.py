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
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
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


def stale_ranks(logc: torch.Tensor, remaining: torch.Tensor) -> torch.Tensor:
    """Rank (0 = most confident) of each position's coupled-token root confidence among the remaining positions
    (ties: lowest position first); positions not remaining rank last."""
    c = logc.masked_fill(~remaining, float("-inf"))
    return torch.argsort(torch.argsort(c, dim=-1, descending=True, stable=True), dim=-1, stable=True)


def teacher_forced_scores(out: DrafterOutput, logc: torch.Tensor, order: torch.Tensor,
                          remaining: torch.Tensor) -> torch.Tensor:
    """Pointer scores [B, D, W] at every depth, given the true commits at earlier depths (teacher forcing).

    logc [B, D, W]: root log-prob of the coupled token per depth; order [B, D]: the true position at depth d
    (offset; -1 past the end); remaining [B, D, W]: masked and not yet committed before depth d."""
    b, dmax, w = logc.shape
    base = out["base"][:, :dmax, :w] + out["alpha"] * logc
    rb = out["rank_bias"].unsqueeze(1).expand(b, dmax, -1)
    base = base + rb.gather(-1, stale_ranks(logc, remaining))
    onehot = F.one_hot(order.clamp_min(0), w).float() * (order >= 0).unsqueeze(-1)  # [B, D, W]
    prior = torch.cumsum(onehot, 1) - onehot  # commits strictly before depth d
    pair_term = torch.einsum("bji,bdi->bdj", out["pair"], prior)
    return (base + pair_term).masked_fill(~remaining, -1e9)


def teacher_forced_pointer(out: DrafterOutput, logc: torch.Tensor, order: torch.Tensor,
                           remaining: torch.Tensor) -> torch.Tensor:
    """Log-probabilities [B, D, W] of the pointer: the learned distribution mixed with the stale confidences
    (the training-free order), weighted by out["mix"]; see teacher_forced_scores for the arguments."""
    learned = torch.log_softmax(teacher_forced_scores(out, logc, order, remaining), -1)
    stale = torch.log_softmax(logc.masked_fill(~remaining, -1e9), -1)  # proportional to the confidence
    lam = out["mix"].clamp(1e-4, 1 - 1e-4)
    return torch.logaddexp(learned + lam.log(), stale + (1 - lam).log())


def pointer_loss(out: DrafterOutput, logc: torch.Tensor, order: torch.Tensor, remaining: torch.Tensor,
                 depth_valid: torch.Tensor) -> torch.Tensor:
    """Teacher-forced pointer loss (see teacher_forced_pointer); depth_valid [B, D]."""
    logp = teacher_forced_pointer(out, logc, order, remaining)
    nll = -logp.gather(-1, order.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return (nll * depth_valid).sum() / depth_valid.sum().clamp_min(1)


def keep_logits(out: DrafterOutput, order: torch.Tensor) -> torch.Tensor:
    """Keep-head logits [B, D] at the true positions, conditioned on earlier commits on the path."""
    b, dmax = order.shape
    w = out["keep_base"].shape[1]
    onehot = F.one_hot(order.clamp_min(0), w).float() * (order >= 0).unsqueeze(-1)
    prior = torch.cumsum(onehot, 1) - onehot  # [B, D, W(i)]
    rel = torch.einsum("bji,bdi->bdj", out["keep_rel"].expand(b, -1, -1), prior)  # [B, D, W(j)]
    logits = out["keep_base"].unsqueeze(1) + rel
    return logits.gather(-1, order.clamp_min(0).unsqueeze(-1)).squeeze(-1)


def np_sigmoid(x):
    """Logistic function on numpy arrays (the tree builder's per-node arithmetic runs in numpy)."""
    return 1.0 / (1.0 + np.exp(-np.clip(x, -60.0, 60.0)))


def stale_inclusion(conf, tau: float):
    """The training-free SPOT-Sets rule as a probability: sigmoid(8 (c - tau)) of the stale confidence c
    (works on torch tensors and numpy arrays)."""
    x = 8.0 * (conf - tau)
    return torch.sigmoid(x) if torch.is_tensor(x) else np_sigmoid(x)


def set_inclusion(out: DrafterOutput, logc: torch.Tensor, tau: float) -> torch.Tensor:
    """Probability [B, D, W] that each position is in the commit set at depth d: the set head mixed with the
    stale rule (weight out["set_mix"]). logc [B, D, W]: root log-prob of the coupled token per depth."""
    rows = torch.arange(logc.shape[1], device=logc.device).clamp(max=out["set_base"].shape[1] - 1)  # deeper: last
    z = (out["set_base"][:, rows] + out["set_alpha"] * (logc - math.log(tau))) / out["set_temp"].clamp_min(1e-3)
    lam = out["set_mix"]
    return lam * torch.sigmoid(z) + (1 - lam) * stale_inclusion(logc.exp(), tau)


def _np_erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 (Abramowitz & Stegun 7.1.26 refined by one Newton-free series term is not needed at fp32)."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t \
        * np.exp(-a * a)
    return s * y


def _np_gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _np_erf(x * 0.7071067811865476))


def _np_layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def limit_blas_threads(n: int = 1) -> bool:
    """Set numpy's OpenBLAS to n threads (its default is one per core, and on matrices this small the extra
    threads only spin: ~10x slower on a busy machine). Works with the OpenBLAS numpy wheels ship; True if set."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            libs = {p for p in (line.split()[-1] for line in f) if "openblas" in p.lower() and ".so" in p}
        for path in libs:
            lib = ctypes.CDLL(path)
            for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                         "openblas_set_num_threads64_", "openblas_set_num_threads"):
                fn = getattr(lib, name, None)
                if fn is not None:
                    fn(int(n))
                    return True
    except (OSError, ValueError):
        pass
    return False


class NumpyDrafter:
    """SpotDrafter.forward for one window in numpy (inference only): the same arithmetic in float32, without
    torch's per-op dispatch, which dominates a model this small on a 16-position window. Everything that does not
    depend on the window (the depth queries through q and sq, transposed weights) is prepared once here, and only
    the heads a mode reads are computed. Outputs as SpotDrafter's, without the batch dimension, as numpy arrays and
    floats. tests/test_engine_fast.py ties it to the torch model."""

    def __init__(self, model: SpotDrafter):
        g = {k: v.detach().float().cpu().numpy() for k, v in model.state_dict().items()}
        self.cfg = model.cfg
        t = lambda k: np.ascontiguousarray(g[k].T)  # noqa: E731 - weights as [in, out]
        self.inp = (t("inp.0.weight"), g["inp.0.bias"], t("inp.2.weight"), g["inp.2.bias"])
        self.pos = g["pos.weight"]
        self.layers = []
        for i, layer in enumerate(model.encoder.layers):
            p = f"encoder.layers.{i}."
            self.layers.append((g[p + "norm1.weight"], g[p + "norm1.bias"], layer.norm1.eps,
                                t(p + "self_attn.in_proj_weight"), g[p + "self_attn.in_proj_bias"],
                                t(p + "self_attn.out_proj.weight"), g[p + "self_attn.out_proj.bias"],
                                g[p + "norm2.weight"], g[p + "norm2.bias"], layer.norm2.eps,
                                t(p + "linear1.weight"), g[p + "linear1.bias"], t(p + "linear2.weight"),
                                g[p + "linear2.bias"]))
        self.norm = (g["norm.weight"], g["norm.bias"], model.norm.eps)
        self.scale = 1 / math.sqrt(model.cfg.d_model)
        self.dq = g["depth.weight"] @ g["q.weight"].T * self.scale  # [D, d]: depth queries, scaled
        self.sdq = g["depth.weight"] @ g["sq.weight"].T * self.scale
        self.k, self.pa, self.pb, self.sk = t("k.weight"), t("pa.weight"), t("pb.weight"), t("sk.weight")
        self.keep = (t("keep.weight"), g["keep.bias"])
        self.g = g
        self.scalars = {k: g[k].astype(np.float64) for k in ("alpha", "alpha_t", "mix", "runner_up", "set_alpha",
                                                              "set_alpha_t", "set_temp", "set_mix")}
        self._rel: dict = {}
        limit_blas_threads(1)

    def _rel_index(self, w: int) -> np.ndarray:
        if w not in self._rel:
            i = np.arange(w)
            c = self.cfg.rel_clip
            self._rel[w] = np.clip(i[:, None] - i[None, :], -c, c) + c
        return self._rel[w]

    def encode(self, feats: np.ndarray) -> np.ndarray:
        """The window's hidden states h [W, d] (after the final layer norm)."""
        w = feats.shape[0]
        d, nh = self.cfg.d_model, self.cfg.n_heads
        hd = d // nh
        w1, b1, w2, b2 = self.inp
        x = _np_gelu(feats @ w1 + b1) @ w2 + b2 + self.pos[:w]
        for n1w, n1b, e1, qkv_w, qkv_b, o_w, o_b, n2w, n2b, e2, l1w, l1b, l2w, l2b in self.layers:
            q, k, v = ((_np_layer_norm(x, n1w, n1b, e1) @ qkv_w + qkv_b).reshape(w, 3, nh, hd)
                       .transpose(1, 2, 0, 3))  # each [nh, w, hd]
            s = q @ k.transpose(0, 2, 1) * (1 / math.sqrt(hd))
            s = np.exp(s - s.max(-1, keepdims=True))
            y = (s / s.sum(-1, keepdims=True)) @ v  # [nh, w, hd]
            x = x + y.transpose(1, 0, 2).reshape(w, d) @ o_w + o_b
            x = x + _np_gelu(_np_layer_norm(x, n2w, n2b, e2) @ l1w + l1b) @ l2w + l2b
        return _np_layer_norm(x, *self.norm)

    def __call__(self, feats: np.ndarray, mode: str | None = None) -> dict:
        """feats [W, F] float32 -> the drafter's outputs for this window (mode "exact": pointer and keep heads
        only; "threshold": set head only; None: all)."""
        g, w = self.g, feats.shape[0]
        h = self.encode(feats)
        temp = float(feats[0, TEMPERATURE_FEATURE])
        ri = self._rel_index(w)
        sc = self.scalars
        sig = lambda z: float(np_sigmoid(z))  # noqa: E731
        out = {"alpha": float(sc["alpha"] + sc["alpha_t"] * temp),
               "rank_bias": g["rank_bias"][0] + g["rank_bias"][1] * temp,
               "mix": sig(sc["mix"][0] + sc["mix"][1] * temp),
               "runner_up": sig(sc["runner_up"][0] + sc["runner_up"][1] * temp),
               "set_alpha": float(sc["set_alpha"] + sc["set_alpha_t"] * temp), "set_temp": float(sc["set_temp"]),
               "set_mix": sig(sc["set_mix"][0] + sc["set_mix"][1] * temp)}
        if mode != "threshold":
            out["base"] = self.dq @ (h @ self.k).T  # [D, W]
            out["pair"] = (h @ self.pa) @ (h @ self.pb).T * self.scale + g["rel"][ri]  # [W, W]
            out["keep_base"] = (h @ self.keep[0])[:, 0] + self.keep[1][0]
            out["keep_rel"] = g["keep_rel"][ri]
        if mode != "exact":
            out["set_base"] = self.sdq @ (h @ self.sk).T + g["set_bias"][:, None]
        return out


def np_set_inclusion(out: dict, logc: np.ndarray, tau: float, first_depth: int = 0) -> np.ndarray:
    """set_inclusion for one window in numpy: logc [D', W] of depths first_depth.. -> inclusion probabilities
    [D', W] (float64)."""
    rows = np.minimum(np.arange(first_depth, first_depth + logc.shape[0]), out["set_base"].shape[0] - 1)
    z = (out["set_base"][rows] + out["set_alpha"] * (logc - math.log(tau))) / max(out["set_temp"], 1e-3)
    lam = out["set_mix"]
    return lam * np_sigmoid(z) + (1 - lam) * stale_inclusion(np.exp(logc), tau)
