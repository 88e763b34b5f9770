"""SpotDrafter.forward for one window in numpy (inference only), and the numpy helpers the proposers share.

A model this small on a 16-position window is dominated by torch's per-op dispatch; numpy runs the same float32
arithmetic (the same operations in the same order) without it. numpy's BLAS is kept to one thread by
engine.set_threads (on matrices this small extra threads only spin)."""
from __future__ import annotations

import math

import numpy as np
import torch

from .features import TEMPERATURE_FEATURE
from .model import SpotDrafter


def np_sigmoid(x):
    """Logistic function on numpy arrays (the tree builder's per-node arithmetic runs in numpy)."""
    return 1.0 / (1.0 + np.exp(-np.clip(x, -60.0, 60.0)))


def stale_inclusion(conf, tau: float):
    """The training-free SPOT-Sets rule as a probability: sigmoid(8 (c - tau)) of the stale confidence c
    (works on torch tensors and numpy arrays)."""
    x = 8.0 * (conf - tau)
    return torch.sigmoid(x) if torch.is_tensor(x) else np_sigmoid(x)


def _np_gelu(x: np.ndarray) -> np.ndarray:
    """torch's exact (erf) GELU, 0.5 x (1 + erf(x / sqrt 2)), with erf from Abramowitz & Stegun 7.1.26 (to ~1e-7),
    computed in place on a few buffers: the same operations in the same order as the plain formula,
    1 - (((((a1 t + a2) t + a3) t + a4) t + a5) t) exp(-z^2) with t = 1 / (1 + p |z|), signed by z."""
    z = x * 0.7071067811865476
    s = np.sign(z)
    a = np.abs(z, out=z)
    t = 0.3275911 * a
    t += 1.0
    np.divide(1.0, t, out=t)
    y = 1.061405429 * t
    y -= 1.453152027
    y *= t
    y += 1.421413741
    y *= t
    y -= 0.284496736
    y *= t
    y += 0.254829592
    y *= t
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    y *= np.exp(a, out=a)
    np.subtract(1.0, y, out=y)
    y *= s  # erf(z)
    y += 1.0
    out = 0.5 * x
    out *= y
    return out


def _np_layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) * w + b over the last axis (in place on its own buffers)."""
    d = x - x.mean(-1, keepdims=True)
    var = (d ** 2).mean(-1, keepdims=True)
    var += eps
    d /= np.sqrt(var, out=var)
    d *= w
    d += b
    return d


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
        x = feats @ w1
        x += b1
        x = _np_gelu(x) @ w2
        x += b2
        x += self.pos[:w]
        for n1w, n1b, e1, qkv_w, qkv_b, o_w, o_b, n2w, n2b, e2, l1w, l1b, l2w, l2b in self.layers:
            qkv = _np_layer_norm(x, n1w, n1b, e1) @ qkv_w
            qkv += qkv_b
            q, k, v = qkv.reshape(w, 3, nh, hd).transpose(1, 2, 0, 3)  # each [nh, w, hd]
            s = q @ k.transpose(0, 2, 1)
            s *= 1 / math.sqrt(hd)
            s -= s.max(-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(-1, keepdims=True)
            x += (s @ v).transpose(1, 0, 2).reshape(w, d) @ o_w  # [nh, w, hd] -> [w, d]
            x += o_b
            h = _np_layer_norm(x, n2w, n2b, e2) @ l1w
            h += l1b
            x += _np_gelu(h) @ l2w
            x += l2b
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
