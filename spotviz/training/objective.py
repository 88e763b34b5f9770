"""The training objective of an embedded target: how a row is noised (a mask ratio per block for block models, BD3-LM
style; uniform or semi-autoregressive states for full-attention ones), the attention mask of a block model's
[noised; clean] concatenation, the masked-token cross-entropy (optionally weighting the digits of computed results,
ResultDigits), and the validation loss."""
from __future__ import annotations


import numpy as np
import torch
import torch.nn.functional as F

from ..embedded.modeling import SpotDLMForMaskedLM
from .target_data import sample_windows

from .target_config import TrainTargetConfig

def noise_block(x: torch.Tensor, block: int, mask_id: int, gen: torch.Generator, maskable=None):
    """Mask each block with its own ratio t ~ U(0, 1] (at least one masked position per block). `maskable`
    [b, L] (optional) limits the noise to some positions (the answer of a problem row)."""
    b, L = x.shape
    nb = L // block
    t = torch.rand(b, nb, 1, generator=gen, device=gen.device).clamp_min(1.0 / block)
    r = torch.rand(b, nb, block, generator=gen, device=gen.device)
    if maskable is not None:
        r = torch.where(maskable.view(b, nb, block), r, torch.full_like(r, 2.0))  # 2.0: never below t
    m = (r < t).view(b, L)
    first = r.argmin(-1, keepdim=True)  # guarantee one mask per block (that has a maskable position)
    m.view(b, nb, block).scatter_(-1, first, r.gather(-1, first) <= 1.0)
    return torch.where(m, torch.full_like(x, mask_id), x), m


def noise_full(x: torch.Tensor, block: int, mask_id: int, gen: torch.Generator):
    """Half the rows uniform random masking, half semi-AR states (clean prefix, partial window, masked future)."""
    b, L = x.shape
    dev = gen.device
    t = torch.rand(b, 1, generator=gen, device=dev).clamp_min(1.0 / L)
    m = torch.rand(b, L, generator=gen, device=dev) < t
    pos = torch.arange(L, device=dev)
    nb = L // block
    semi = torch.rand(b, generator=gen, device=dev) < 0.5
    cur = torch.randint(1, nb, (b, 1), generator=gen, device=dev) * block  # window start (some prefix kept clean)
    in_win = (pos >= cur) & (pos < cur + block)
    m_semi = (pos >= cur + block) | (in_win & m)
    m_semi |= in_win & (pos == cur + torch.randint(0, block, (b, 1), generator=gen, device=dev))
    m = torch.where(semi.unsqueeze(1), m_semi, m)
    m[:, 0] &= ~semi  # keep row non-degenerate
    m |= ~m.any(1, keepdim=True) & (pos == L - 1)
    return torch.where(m, torch.full_like(x, mask_id), x), m


def noise_batch(cfg: TrainTargetConfig, x, mask_id: int, gen, maskable=None):
    if cfg.attention == "block":
        return noise_block(x, cfg.block_size, mask_id, gen, maskable)
    if maskable is not None:
        raise ValueError("row corpora (math) train block models only")
    return noise_full(x, cfg.block_size, mask_id, gen)


def block_training_mask(L: int, block: int, device=None) -> torch.Tensor:
    """[1, 1, 2L, 2L] mask for the concatenation [noised; clean] (BD3-LM style)."""
    pos = torch.arange(L, device=device)
    bq = (pos // block).unsqueeze(1)
    bk = (pos // block).unsqueeze(0)
    noisy_noisy = bq == bk
    noisy_clean = bk < bq
    clean_clean = bk <= bq
    clean_noisy = torch.zeros(L, L, dtype=torch.bool, device=device)
    top = torch.cat([noisy_noisy, noisy_clean], 1)
    bottom = torch.cat([clean_noisy, clean_clean], 1)
    return torch.cat([top, bottom], 0).view(1, 1, 2 * L, 2 * L)


class ResultDigits:
    """Finds the digits of computed results in token rows: a run of digit tokens right after `' ='` and a space
    (or `' $'`), as the word-problem solutions write them (`... 33 = 55 ...`, `... = $9.`). The tokenizer
    splits every digit into its own token, so a result is a run of such tokens."""

    def __init__(self, tok):
        vocab = tok.get_vocab()
        self.digits = torch.tensor(sorted({i for t, i in vocab.items() if tok.decode([i]).isdigit()}))
        self.equals = torch.tensor([i for t, i in vocab.items() if tok.decode([i]) == " ="])
        self.gap = torch.tensor([i for t, i in vocab.items() if tok.decode([i]) in (" ", " $")])
        if not (len(self.digits) and len(self.equals) and len(self.gap)):
            raise ValueError("this tokenizer has no single-digit / ' =' / ' ' tokens; result weights and focus need them")

    def to(self, device) -> "ResultDigits":
        """The token sets on `device` (where the rows it scans are)."""
        self.digits, self.equals, self.gap = (t.to(device) for t in (self.digits, self.equals, self.gap))
        return self

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """bool [b, L]: the positions that hold a digit of a computed result."""
        return self.runs(x)[0]

    def runs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(in_result bool [b, L], run int [b, L]): run = 1, 2, ... numbers each row's results in order (0
        outside them)."""
        digit = torch.isin(x, self.digits)
        opens = torch.zeros_like(digit)
        opens[:, 2:] = digit[:, 2:] & torch.isin(x[:, 1:-1], self.gap) & torch.isin(x[:, :-2], self.equals)
        out = opens.clone()
        for j in range(1, x.shape[1]):  # extend each run over the digits that follow it
            out[:, j] |= out[:, j - 1] & digit[:, j]
        return out, opens.long().cumsum(1) * out

    def focus(self, x: torch.Tensor, share: float, gen: torch.Generator, runs=None) -> torch.Tensor:
        """bool [b, L], the positions to mask: in a random `share` of the rows that have results, the digits of
        one of their results (chosen uniformly), nothing else; in the other rows nothing. `runs`: self.runs(x)
        when the caller has it already."""
        inside, run = runs if runs is not None else self.runs(x)
        n = run.max(1).values
        pick = (torch.rand(len(x), generator=gen, device=gen.device) * n).floor().long() + 1
        chosen = (torch.rand(len(x), generator=gen, device=gen.device) < share) & (n > 0)
        return inside & (run == pick.unsqueeze(1)) & chosen.unsqueeze(1)


def training_logits(model: SpotDLMForMaskedLM, x: torch.Tensor, noised: torch.Tensor, train_mask) -> torch.Tensor:
    """The model's logits [b, L, V] for the noised rows, in the training layout: a block model reads
    [noised; clean] under `train_mask` (block_training_mask), so each block sees the clean blocks before it."""
    L = x.shape[1]
    if model.config.attention == "block":
        pos = torch.arange(L, device=x.device).repeat(2).unsqueeze(0)
        return model(torch.cat([noised, x], 1), position_ids=pos, attention_mask=train_mask)[:, :L]
    return model(noised)


def masked_loss(model: SpotDLMForMaskedLM, x: torch.Tensor, noised: torch.Tensor, m: torch.Tensor, train_mask,
                amp: bool = False, weight: torch.Tensor | None = None):
    """Mean cross-entropy over the masked positions `m`; with `weight` [b, L], the weighted mean."""
    with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=amp):
        logits = training_logits(model, x, noised, train_mask)
    if weight is None:
        return F.cross_entropy(logits[m].float(), x[m])
    w = weight[m]
    return (F.cross_entropy(logits[m].float(), x[m], reduction="none") * w).sum() / w.sum()


@torch.no_grad()
def evaluate(model, val: torch.Tensor, cfg: TrainTargetConfig, n: int = 64, amp: bool = False) -> float:
    """Masked-token cross-entropy (nats) on fixed validation windows with fixed masks."""
    model.eval()
    gen = torch.Generator(device=model.device).manual_seed(1234)
    losses = []
    for i in range(0, n, 16):
        xb, maskable = sample_windows(val, 16, cfg.seq_len, gen, cfg.block_size)
        mask = block_training_mask(xb.shape[1], cfg.block_size, xb.device) if cfg.attention == "block" else None
        noised, m = noise_batch(cfg, xb, model.config.mask_token_id, gen, maskable)
        losses.append(masked_loss(model, xb, noised, m, mask, amp).item())
    model.train()
    return float(np.mean(losses))
