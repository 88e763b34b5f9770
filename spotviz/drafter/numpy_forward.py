"""SpotDrafter.forward for one window in numpy (inference only), and the numpy helpers the proposers share.

A model this small on a 16-position window is dominated by per-call costs, not arithmetic: its matrix products
take ~0.18 ms of a ~0.65 ms encoder on this CPU, the rest is ~180 small elementwise calls. So the products and
the cheap elementwise steps run in numpy (no torch dispatch), and each step that numpy spells as many calls runs
as one fused torch kernel on the same memory (torch.from_numpy shares it, no copy): GELU (torch's exact erf GELU,
the activation the drafter was trained with; numpy has no erf and spelled it as 17 calls), layer norm (7 calls)
and the attention softmax (4 calls); measured 33 -> 17, 19 -> 8 and 16 -> 6 us a call. What does not depend on
the window's contents (the relative-position terms of a width, the temperature-dependent scalars) is computed
once and reused. numpy's BLAS is kept to one thread by engine.set_threads (on matrices this small extra threads
only spin)."""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from .features import TEMPERATURE_FEATURE
from .model import SpotDrafter


def np_sigmoid(x):
    """Logistic function on numpy arrays (the tree builder's per-node arithmetic runs in numpy)."""
    return 1.0 / (1.0 + np.exp(-np.clip(x, -60.0, 60.0)))


STALE_SLOPE = 8.0  # the training-free set rule's slope (also the calibrated template's starting slope)


def stale_inclusion(conf, tau: float):
    """The training-free SPOT-Sets rule as a probability: sigmoid(STALE_SLOPE (c - tau)) of the stale confidence c
    (works on torch tensors and numpy arrays)."""
    x = STALE_SLOPE * (conf - tau)
    return torch.sigmoid(x) if torch.is_tensor(x) else np_sigmoid(x)


def _gelu(x: np.ndarray) -> np.ndarray:
    """torch's exact (erf) GELU of a float32 array, one fused kernel on the array's own memory."""
    return F.gelu(torch.from_numpy(x)).numpy()


def _layer_norm(x: np.ndarray, w: torch.Tensor, b: torch.Tensor, eps: float) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) * w + b over the last axis, one fused kernel."""
    return F.layer_norm(torch.from_numpy(x), w.shape, w, b, eps).numpy()


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
        tt = lambda k: torch.from_numpy(g[k])  # noqa: E731 - layer-norm parameters, for torch's fused kernel
        self.inp = (t("inp.0.weight"), g["inp.0.bias"], t("inp.2.weight"), g["inp.2.bias"])
        self.pos = g["pos.weight"]
        self.layers = []
        for i, layer in enumerate(model.encoder.layers):
            p = f"encoder.layers.{i}."
            self.layers.append((tt(p + "norm1.weight"), tt(p + "norm1.bias"), layer.norm1.eps,
                                t(p + "self_attn.in_proj_weight"), g[p + "self_attn.in_proj_bias"],
                                t(p + "self_attn.out_proj.weight"), g[p + "self_attn.out_proj.bias"],
                                tt(p + "norm2.weight"), tt(p + "norm2.bias"), layer.norm2.eps,
                                t(p + "linear1.weight"), g[p + "linear1.bias"], t(p + "linear2.weight"),
                                g[p + "linear2.bias"]))
        self.norm = (tt("norm.weight"), tt("norm.bias"), model.norm.eps)
        self.scale = 1 / math.sqrt(model.cfg.d_model)
        self.dq = g["depth.weight"] @ g["q.weight"].T * self.scale  # [D, d]: depth queries, scaled
        self.sdq = g["depth.weight"] @ g["sq.weight"].T * self.scale
        self.k, self.pa, self.pb, self.sk = t("k.weight"), t("pa.weight"), t("pb.weight"), t("sk.weight")
        self.keep = (t("keep.weight"), g["keep.bias"])
        self.g = g
        self.scalars = {k: g[k].astype(np.float64) for k in ("alpha", "alpha_t", "mix", "runner_up", "set_alpha",
                                                              "set_alpha_t", "set_temp", "set_mix")}
        self._rel: dict = {}  # width -> the relative-position terms (pair, keep) of a window that wide
        self._scalars: dict = {}  # temperature -> the temperature-dependent outputs

    def _rel_terms(self, w: int) -> tuple[np.ndarray, np.ndarray]:
        if w not in self._rel:
            i = np.arange(w)
            c = self.cfg.rel_clip
            ri = np.clip(i[:, None] - i[None, :], -c, c) + c
            self._rel[w] = (self.g["rel"][ri], self.g["keep_rel"][ri])
        return self._rel[w]

    def _scalar_outputs(self, temp: float) -> dict:
        if temp not in self._scalars:
            g, sc = self.g, self.scalars
            sig = lambda z: float(np_sigmoid(z))  # noqa: E731
            self._scalars[temp] = {
                "alpha": float(sc["alpha"] + sc["alpha_t"] * temp),
                "rank_bias": g["rank_bias"][0] + g["rank_bias"][1] * temp,
                "mix": sig(sc["mix"][0] + sc["mix"][1] * temp),
                "runner_up": sig(sc["runner_up"][0] + sc["runner_up"][1] * temp),
                "set_alpha": float(sc["set_alpha"] + sc["set_alpha_t"] * temp), "set_temp": float(sc["set_temp"]),
                "set_mix": sig(sc["set_mix"][0] + sc["set_mix"][1] * temp)}
        return self._scalars[temp]

    def encode(self, feats: np.ndarray) -> np.ndarray:
        """The window's hidden states h [W, d] (after the final layer norm)."""
        w = feats.shape[0]
        d, nh = self.cfg.d_model, self.cfg.n_heads
        hd = d // nh
        w1, b1, w2, b2 = self.inp
        x = feats @ w1
        x += b1
        x = _gelu(x) @ w2
        x += b2
        x += self.pos[:w]
        for n1w, n1b, e1, qkv_w, qkv_b, o_w, o_b, n2w, n2b, e2, l1w, l1b, l2w, l2b in self.layers:
            qkv = _layer_norm(x, n1w, n1b, e1) @ qkv_w
            qkv += qkv_b
            q, k, v = qkv.reshape(w, 3, nh, hd).transpose(1, 2, 0, 3)  # each [nh, w, hd]
            s = q @ k.transpose(0, 2, 1)
            s *= 1 / math.sqrt(hd)
            s = torch.softmax(torch.from_numpy(s), -1).numpy()
            x += (s @ v).transpose(1, 0, 2).reshape(w, d) @ o_w  # [nh, w, hd] -> [w, d]
            x += o_b
            h = _layer_norm(x, n2w, n2b, e2) @ l1w
            h += l1b
            x += _gelu(h) @ l2w
            x += l2b
        return _layer_norm(x, *self.norm)

    def __call__(self, feats: np.ndarray, mode: str | None = None) -> dict:
        """feats [W, F] float32 -> the drafter's outputs for this window (mode "exact": pointer and keep heads
        only; "threshold": set head only; None: all)."""
        g, w = self.g, feats.shape[0]
        h = self.encode(feats)
        out = dict(self._scalar_outputs(float(feats[0, TEMPERATURE_FEATURE])))
        if mode != "threshold":
            rel, keep_rel = self._rel_terms(w)
            out["base"] = self.dq @ (h @ self.k).T  # [D, W]
            out["pair"] = (h @ self.pa) @ (h @ self.pb).T * self.scale + rel  # [W, W]
            out["keep_base"] = (h @ self.keep[0])[:, 0] + self.keep[1][0]
            out["keep_rel"] = keep_rel
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
