"""Train the SPOT drafter by imitation of the target's standard decoder, and calibrate baselines.

    python -m spotviz train-drafter --model shakespeare-bd --out assets/drafters/shakespeare-bd

1. collect: run the standard decoder (exact and threshold mode, T = 0 and T = 1) on training prompts; at every
   pass record the drafter's view of the root (features from the stale distributions, coupled-noise candidates
   per depth) and, as labels, the target's true future decisions in the window (teacher forcing over depth);
2. train: pointer loss (which position is committed at depth d), keep loss (is the stale token still right),
   set loss (SPOT-Sets: which positions are in the commit set at depth d);
3. calibrate: the static template of the calibrated baseline (rank probabilities per depth; set logistic fits);
4. choose the pointer's mixture weight with the stale order per temperature: by the target passes SPOT takes on
   validation prompts (the template as partner, as it ships), validation accuracy breaking ties.
`--calibrate` instead takes an existing drafter and refits only its scalar heads on a few trajectories of a new
target (light calibration for transfer).
"""
from __future__ import annotations

import json
import math
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from ..decision import masked_log_softmax
from ..samplers.config import DecodeConfig
from ..samplers.spot import decode_spot
from ..samplers.standard import decode_standard_stream
from ..drafter.features import (TEMPERATURE_FEATURE, TOPK, RootView, check_topk, coupled_candidates, n_features,
                       position_features)
from ..drafter.losses import keep_logits, pointer_loss, set_inclusion, teacher_forced_pointer, teacher_forced_scores
from ..drafter.model import DrafterConfig, SpotDrafter
from ..drafter.numpy_forward import STALE_SLOPE
from ..drafter.proposers import Calibrated, SpotProposer

MAX_DEPTH = 16
# the scalar heads that light calibration refits for a new target (everything else stays frozen)
CALIBRATED_PARAMETERS = ("alpha", "alpha_t", "rank_bias", "mix", "runner_up", "set_alpha", "set_alpha_t", "set_bias", "set_temp",
                         "set_mix", "keep_rel")


@dataclass
class DrafterTrainConfig:
    model: str
    out: str
    n_prompts: int = 120
    gen_length: int = 128
    temperatures: tuple = (0.0, 1.0)
    threshold: float = 0.9
    epochs: int = 12
    batch_size: int = 128
    lr: float = 2e-3
    seed: int = 0
    val_fraction: float = 0.1
    topk: int = TOPK  # the root's top-k probabilities per position the drafter reads
    threshold_prompts: int = 0  # prompts of the threshold trajectories (SPOT-Sets); 0: n_prompts
    jobs: int = 1  # worker processes that collect trajectories side by side (one torch thread each)
    save_trajectories: bool = False  # also write the collected trajectories to out/trajectories.safetensors
    trajectories: str | None = None  # train on trajectories saved before instead of collecting
    mix_prompts: int = 40  # validation prompts whose SPOT passes choose the pointer mixture (0: validation accuracy)
    mix_budget: int = 32  # the tree size those decodes use
    prompts_file: str | None = None  # one's own prompts (embedded/prompts.load_prompts' format); None: the corpus's

    def __post_init__(self):
        """Checked when made (worded with train-drafter's flags): a bad setting fails before any model loads."""
        import os

        from ..errors import DecodeError, worded_with_flags

        try:
            check_topk(self.topk)
        except ValueError as e:
            raise ValueError(f"--{e}") from None
        try:
            DecodeConfig(gen_length=self.gen_length, threshold=self.threshold)
        except DecodeError as e:
            raise worded_with_flags(e, {"gen_length": "--gen-length", "threshold": "--threshold"}) from None
        if self.threshold_prompts < 0:
            raise ValueError(f"--threshold-prompts must be 0 (as --n-prompts) or more, got {self.threshold_prompts}")
        if self.trajectories and not Path(self.trajectories).is_file():
            raise ValueError(f"--trajectories: no such file: {self.trajectories}")
        if self.mix_prompts < 0 or self.mix_budget < 2:
            raise ValueError(f"--mix-prompts must be 0 or more and --mix-budget 2 or more, got {self.mix_prompts} "
                             f"and {self.mix_budget}")
        cores = os.cpu_count() or 1
        if not 1 <= self.jobs <= cores:
            raise ValueError(f"--jobs must be 1 to this machine's {cores} cores, got {self.jobs}")


# ------------------------------------------------------------------------------------------ collect
def collect(target, prompts: list[str], mode: str, temperature: float, threshold: float, gen_length: int,
            seed: int = 0, log=print, topk: int = TOPK, progress=None) -> dict:
    """Per-pass drafter inputs and labels from standard-decoder trajectories (tensors stacked over passes).
    `progress` (eval/progress.EtaProgress) is ticked once per prompt."""
    W = target.info.block_size
    feats, logcs, valid, orders, keeps, seconds, sets, depth_valid = [], [], [], [], [], [], [], []
    t0 = time.time()
    for i, prompt in enumerate(prompts):
        cfg = DecodeConfig(mode=mode, temperature=temperature, threshold=threshold, seed=seed + i,
                           gen_length=gen_length)
        records = []
        from ..noise import GumbelNoise

        noise = GumbelNoise(seed + i, target.info.vocab_size)
        for pr in decode_standard_stream(target, prompt, cfg, record_logits=True):
            if pr.record is None:
                break
            lo, hi = pr.extra["lo"], pr.extra["hi"]
            state = torch.tensor(pr.tokens)
            view = RootView(lo=lo, hi=hi, state=state, logp=masked_log_softmax(pr.extra["logits"], target.info.mask_id),
                            masked=state[lo:hi] == target.info.mask_id,
                            first=[c.position - lo for c in pr.record.commits], step=pr.extra["step"] + 1,
                            rule=cfg.rule, noise=noise)
            tok1, tok2, logc = coupled_candidates(view, MAX_DEPTH)
            records.append((view, position_features(view, topk), tok1, tok2, logc, pr.record))
        # labels: the decisions of the following passes in the same window
        for k, (view, f, tok1, tok2, logc, _) in enumerate(records):
            w = view.width
            order = torch.full((MAX_DEPTH,), -1, dtype=torch.long)
            keep = torch.zeros(MAX_DEPTH)
            second = torch.zeros(MAX_DEPTH)  # the target's token is the coupled runner-up
            cset = torch.zeros(MAX_DEPTH, W)
            dv = torch.zeros(MAX_DEPTH)
            for d in range(MAX_DEPTH):
                if k + 1 + d >= len(records):
                    break
                nxt = records[k + 1 + d]
                if nxt[0].lo != view.lo:
                    break
                commits = nxt[5].commits
                offs = [c.position - view.lo for c in commits]
                if mode == "exact":
                    order[d] = offs[0]
                    keep[d] = float(int(tok1[d, offs[0]]) == commits[0].token)
                    second[d] = float(int(tok2[d, offs[0]]) == commits[0].token)
                cset[d, offs] = 1.0
                dv[d] = 1.0
            if dv.sum() == 0:
                continue
            pad = W - w
            feats.append(F.pad(f, (0, 0, 0, pad)))
            logcs.append(F.pad(logc, (0, pad)))
            valid.append(F.pad(view.masked, (0, pad)))
            orders.append(order)
            keeps.append(keep)
            seconds.append(second)
            sets.append(cset)
            depth_valid.append(dv)
        if progress is not None:
            progress.tick()
        if (i + 1) % 20 == 0:
            log(_collected_line(i + 1, len(prompts), mode, temperature, t0, progress))
    if not feats:  # no pass had a later one in its window (e.g. a chunk of very short decodes)
        return {"feats": torch.zeros(0, W, n_features(topk)), "logc": torch.zeros(0, MAX_DEPTH, W),
                "masked": torch.zeros(0, W, dtype=torch.bool), "order": torch.zeros(0, MAX_DEPTH, dtype=torch.long),
                "keep": torch.zeros(0, MAX_DEPTH), "second": torch.zeros(0, MAX_DEPTH),
                "sets": torch.zeros(0, MAX_DEPTH, W), "depth_valid": torch.zeros(0, MAX_DEPTH)}
    return {"feats": torch.stack(feats), "logc": torch.stack(logcs), "masked": torch.stack(valid),
            "order": torch.stack(orders), "keep": torch.stack(keeps), "second": torch.stack(seconds),
            "sets": torch.stack(sets),
            "depth_valid": torch.stack(depth_valid)}


def _collected_line(done: int, total: int, mode: str, temperature: float, t0: float, progress=None) -> str:
    return (f"  collected {done}/{total} prompts ({mode}, T={temperature}) in {time.time() - t0:.0f}s"
            + (f"  [collection {progress.eta()}]" if progress is not None else ""))


_worker_target: dict = {}  # a collecting worker's target, loaded once per process


def _collect_chunk(job: tuple) -> dict:
    """One worker's share: `collect` on a run of consecutive prompts (their seeds as in one serial run); numpy out."""
    model, prompts, mode, temperature, threshold, gen_length, seed, topk = job
    if model not in _worker_target:
        from ..registry import load_target

        torch.set_num_threads(1)
        _worker_target.clear()
        _worker_target[model] = load_target(model)
    d = collect(_worker_target[model], prompts, mode, temperature, threshold, gen_length, seed=seed,
                log=lambda *a: None, topk=topk)
    return {k: v.numpy() for k, v in d.items()}


def collect_parallel(pool, model: str, prompts: list[str], mode: str, temperature: float, threshold: float,
                     gen_length: int, seed: int = 0, log=print, topk: int = TOPK, progress=None, jobs: int = 2) -> dict:
    """`collect` spread over the worker processes of `pool` (each loads `model` once, one torch thread):
    consecutive runs of prompts, prompt i still decoded with seed + i, the pieces joined in order, so the result
    equals one serial `collect` call."""
    size = max(1, min(20, math.ceil(len(prompts) / (4 * jobs))))
    pieces = [(model, prompts[a:a + size], mode, temperature, threshold, gen_length, seed + a, topk)
              for a in range(0, len(prompts), size)]
    parts, done, t0 = [], 0, time.time()
    for job, part in zip(pieces, pool.imap(_collect_chunk, pieces)):
        parts.append({k: torch.from_numpy(v) for k, v in part.items()})
        done += len(job[1])
        if progress is not None:
            progress.tick(len(job[1]))
        log(_collected_line(done, len(prompts), mode, temperature, t0, progress))
    return _cat(parts)


def _cat(parts: list[dict]) -> dict:
    return {k: (torch.cat([p[k] for p in parts]) if torch.is_tensor(parts[0][k]) else parts[0][k]) for k in parts[0]}


def remaining_masks(data: dict) -> torch.Tensor:
    """[N, D, W]: positions still masked before depth d (masked in s1, not committed at earlier depths)."""
    committed_before = torch.cumsum(data["sets"], 1) - data["sets"]
    return data["masked"].unsqueeze(1) & (committed_before == 0)


# -------------------------------------------------------------------------------------------- train
def _losses(model: SpotDrafter, b: dict, mode: str) -> dict:
    out = model(b["feats"], None)
    rem = remaining_masks(b)
    if mode == "exact":
        lp = pointer_loss(out, b["logc"], b["order"], rem, b["depth_valid"])
        kl = keep_logits(out, b["order"])
        lk = (F.binary_cross_entropy_with_logits(kl, b["keep"], reduction="none") * b["depth_valid"]).sum() \
            / b["depth_valid"].sum().clamp_min(1)
        flip = b["depth_valid"] * (1 - b["keep"])  # the stale token went stale: was the runner-up the new one?
        ru = out["runner_up"].view(-1, 1).expand_as(flip).clamp(1e-6, 1 - 1e-6)
        lr_ = (F.binary_cross_entropy(ru, b["second"], reduction="none") * flip).sum() / flip.sum().clamp_min(1)
        return {"loss": lp + 0.5 * lk + 0.1 * lr_, "pointer": lp, "keep": lk, "runner_up": lr_}
    q = set_inclusion(out, b["logc"], b["tau"]).clamp(1e-6, 1 - 1e-6)
    m = rem & (b["depth_valid"] > 0).unsqueeze(-1)
    ls = (F.binary_cross_entropy(q, b["sets"], reduction="none") * m).sum() / m.sum().clamp_min(1)
    return {"loss": ls, "set": ls}


def figures(d: dict) -> str:
    """A validation record for the log: "pos_acc@1 0.775 · keep_acc 0.981 · mix T=0 0.8, T=1 0.95" (no dicts)."""
    def one(v):
        if isinstance(v, dict):
            return ", ".join(f"T={k:g} {x:g}" if isinstance(k, float) else f"{k} {one(x)}" for k, x in v.items())
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    return " · ".join(f"{k} {one(v)}" for k, v in d.items() if k != "mix_passes")  # (its own log line said those)


@torch.no_grad()
def evaluate_drafter(model: SpotDrafter, data: dict, mode: str) -> dict:
    """Exact: top-1 accuracy of the drafted position at depth 1 and k (teacher forcing), keep accuracy.
    Threshold: exact-set accuracy at depth 1 and 2. A depth no trajectory reaches (a block shorter than it) has no
    entry (its mean would be NaN, which JSON cannot hold)."""
    model.eval()
    out = model(data["feats"], None)
    rem = remaining_masks(data)
    res = {}
    if mode == "exact":
        order = data["order"]
        pred = teacher_forced_pointer(out, data["logc"], order, rem).argmax(-1)
        stale = data["logc"].masked_fill(~rem, -1e9).argmax(-1)
        for d in (1, 2, 4, 8):
            v = data["depth_valid"][:, d - 1] > 0
            if not v.any():
                continue
            res[f"pos_acc@{d}"] = float((pred[v, d - 1] == order[v, d - 1]).float().mean())
            res[f"stale_pos_acc@{d}"] = float((stale[v, d - 1] == order[v, d - 1]).float().mean())
        kl = keep_logits(out, order)
        v = data["depth_valid"] > 0
        res["keep_acc"] = float(((kl > 0).float() == data["keep"])[v].float().mean())
        res["keep_rate"] = float(data["keep"][v].mean())
    else:
        qr = set_inclusion(out, data["logc"], data["tau"]).masked_fill(~rem, -1.0)
        pred = (qr > 0.5) | (F.one_hot(qr.argmax(-1), qr.shape[-1]).bool() & rem)  # never empty, as in the tree
        for d in (1, 2):
            v = data["depth_valid"][:, d - 1] > 0
            if not v.any():
                continue
            res[f"set_acc@{d}"] = float((pred[v, d - 1] == (data["sets"][v, d - 1] > 0)).all(-1).float().mean())
    model.train()
    return res


def fit(model: SpotDrafter, train: dict, val: dict, mode: str, epochs: int, lr: float, batch_size: int,
        params=None, log=print) -> dict:
    if params is None:  # full training: the scalar heads learn 5x faster (they move a long way from their init)
        params = list(model.parameters())
        heads = [p for n_, p in model.named_parameters() if n_ in CALIBRATED_PARAMETERS]
        rest = [p for p in params if not any(p is h for h in heads)]
        groups, max_lr = [{"params": rest}, {"params": heads}], [lr, 5 * lr]
    else:
        params = list(params)
        groups, max_lr = [{"params": params}], lr
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=0.01)
    n = train["feats"].shape[0]
    steps = max(1, epochs * math.ceil(n / batch_size))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=steps, pct_start=0.1)
    g = torch.Generator().manual_seed(0)
    model.train()
    from tqdm import tqdm

    bar = tqdm(total=steps, desc=f"train drafter ({mode})", disable=None, mininterval=2)
    for ep in range(epochs):
        perm = torch.randperm(n, generator=g)
        for i in range(0, n, batch_size):
            idx = perm[i : i + batch_size]
            b = {k: (v[idx] if torch.is_tensor(v) else v) for k, v in train.items()}
            loss = _losses(model, b, mode)["loss"]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            bar.update(1)
        if ep == epochs - 1 or ep % 4 == 0:
            log(f"  epoch {ep + 1}/{epochs}: train loss {loss.item():.3f}  validation (the learned heads alone): "
                f"{figures(evaluate_drafter(model, val, mode))}")
    bar.close()
    return evaluate_drafter(model, val, mode)


@torch.no_grad()
def tune_mix(model: SpotDrafter, val: dict, depths: int = 4, log=print) -> dict:
    """Choose the pointer's mixture weight (learned scores vs the stale order) per temperature for the tree.

    Likelihood training sets `mix` to fit every depth's distribution; a draft tree instead needs the true position
    ranked first, or at least among the few positions it branches on. So on validation data, for each
    temperature present, pick the weight that maximises (top-1 + top-4 accuracy) / 2 over the first `depths`
    depths, and set mix so that sigmoid(mix0 + mix1 * T) hits it. Returns {temperature: weight}."""
    model.eval()
    out = model(val["feats"], None)
    rem = remaining_masks(val)
    order = val["order"]
    learned = torch.softmax(teacher_forced_scores(out, val["logc"], order, rem), -1)
    stale = torch.softmax(val["logc"].masked_fill(~rem, -1e9), -1)
    temps = val["feats"][:, 0, TEMPERATURE_FEATURE]
    grid = [i / 20 for i in range(1, 20)]
    chosen = {}
    for t in sorted(set(temps.tolist())):
        rows = temps == t
        best = (-1.0, 0.5)
        for lam in grid:
            p = lam * learned[rows] + (1 - lam) * stale[rows]
            score, n = 0.0, 0
            for d in range(min(depths, order.shape[1])):
                v = val["depth_valid"][rows, d] > 0
                if not bool(v.any()):
                    continue
                top = p[v, d].topk(min(4, p.shape[-1]), -1).indices
                o = order[rows][v, d].unsqueeze(1)
                score += 0.5 * float((top[:, :1] == o).float().mean() + (top == o).any(1).float().mean())
                n += 1
            if n and score / n > best[0]:
                best = (score / n, lam)
        chosen[float(t)] = best[1]
    set_mix_line(model, chosen)
    log("  pointer mixture weight per temperature (the learned order's share against the stale one): "
        + ", ".join(f"T={t:g} {w:g}" for t, w in chosen.items()))
    model.train()
    return chosen


def set_mix_line(model: SpotDrafter, chosen: dict) -> None:
    """Set the pointer's mixture so that sigmoid(mix0 + mix1 * T) equals chosen[T] at the first and the last
    temperature of `chosen` ({T: weight}; a line in logit space, flat for one temperature). The two parameters are
    rounded to bfloat16, as the drafter is saved: what is tuned with them is what ships."""
    def logit(q):
        return math.log(q / (1 - q))

    ts = sorted(chosen)
    if ts:
        slope = 0.0 if len(ts) == 1 else (logit(chosen[ts[-1]]) - logit(chosen[ts[0]])) / (ts[-1] - ts[0])
        line = torch.tensor([logit(chosen[ts[0]]) - slope * ts[0], slope])
        model.mix.data.copy_(line.to(torch.bfloat16).float())


MIX_GRID = (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95)  # the pointer mixture weights tune_mix_by_passes tries


def tune_mix_by_passes(model: SpotDrafter, target, prompts: list[str], temperatures, partner=None, budget: int = 32,
                       gen_length: int = 128, grid=MIX_GRID, prefer: dict | None = None, keep: dict | None = None,
                       log=print) -> tuple[dict, dict]:
    """Choose the pointer's mixture weight per temperature by what the draft tree does with it: for every weight of
    `grid`, decode `prompts` with SPOT (exact mode, trees of `budget` nodes, the drafter beside `partner` as it
    ships) and count the target passes; the fewest wins (a tie goes to the weight nearest prefer[T], e.g. the
    accuracy criterion's choice). Passes are counted, not timed: the choice does not depend on the machine's load.
    Temperatures are tuned in turn, each on the mixture line through the weights already chosen (set_mix_line), so
    the passes reported for a chosen weight are those of the drafter as saved (its parameters are rounded to
    bfloat16 first, as SpotDrafter.save stores them). `keep` ({T: weight}): weights at
    other temperatures that the line goes on passing through (retuning one temperature of a trained drafter).

    Validation accuracy is the cheaper proxy (tune_mix) but not the same thing: on math-bd the accuracy criterion
    chose 0.35 at T = 0 where 0.95 saves 9% of the passes on validation problems (docs/DESIGN.md section 4).
    Returns ({T: weight}, {T: {weight: passes}}) and leaves the model's mixture at the chosen weights."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for q in model.parameters():
            q.copy_(q.to(torch.bfloat16).float())
    from ..eval.progress import EtaProgress

    chosen, table = dict(keep or {}), {}
    progress = EtaProgress(len(temperatures) * len(grid) * len(prompts), "choose the pointer mixture")
    try:
        for t in temperatures:
            t = float(t)
            table[t] = {}
            for lam in grid:
                set_mix_line(model, chosen | {t: lam})
                proposer = SpotProposer(model, partner=partner)
                table[t][lam] = 0
                for i, p in enumerate(prompts):
                    table[t][lam] += len(decode_spot(target, p, DecodeConfig(mode="exact", temperature=t, seed=i,
                                                                              gen_length=gen_length, budget=budget,
                                                                              drafter="spot"), proposer).passes)
                    progress.tick()
                log(f"  T={t:g}, weight {lam:g}: {table[t][lam]} passes ({progress.eta()})")
            near = (prefer or {}).get(t, grid[len(grid) // 2])
            chosen[t] = min(grid, key=lambda lam: (table[t][lam], abs(lam - near)))
            log(f"  pointer mixture at T={t:g}: target passes on {len(prompts)} validation prompts per weight "
                + ", ".join(f"{lam:g}: {n}" for lam, n in table[t].items()) + f" -> {chosen[t]:g}")
    finally:
        progress.close()
    set_mix_line(model, chosen)
    model.train(was_training)
    return chosen, table


def mix_record(chosen: dict, table: dict, n_prompts: int, budget: int) -> dict:
    """What a drafter's validation record keeps of tune_mix_by_passes: the weights and the passes per weight."""
    return {"mix": chosen, "mix_passes": {"prompts": n_prompts, "budget": budget,
                                          "passes": {str(t): {f"{lam:g}": n for lam, n in row.items()}
                                                     for t, row in table.items()}}}


def calibrate_template(exact: dict, thresh: dict | None, max_rank: int = 8) -> dict:
    """The calibrated baseline's static template from calibration trajectories."""
    rem = remaining_masks(exact)
    order = exact["order"]
    D = order.shape[1]
    rank_probs = []
    for d in range(D):
        v = exact["depth_valid"][:, d] > 0
        conf = exact["logc"][:, d].masked_fill(~rem[:, d], -1e9)
        ranks = conf.argsort(-1, descending=True).argsort(-1)  # rank of each position
        r_true = ranks.gather(1, order[:, d].clamp_min(0).unsqueeze(1)).squeeze(1)
        hit = exact["keep"][:, d] > 0  # stale token right
        row = [float(((r_true == r) & hit & v).sum() / v.sum().clamp_min(1)) for r in range(max_rank)]
        rank_probs.append(row)
    set_params = []
    if thresh is not None:
        rem_t = remaining_masks(thresh)
        for d in range(D):
            m = rem_t[:, d] & (thresh["depth_valid"][:, d] > 0).unsqueeze(-1)
            x = (thresh["logc"][:, d] - math.log(thresh["tau"]))[m]
            y = thresh["sets"][:, d][m]
            ab = torch.tensor([STALE_SLOPE, 0.0], requires_grad=True)
            opt = torch.optim.LBFGS([ab], max_iter=50)

            def closure():
                opt.zero_grad()
                loss = F.binary_cross_entropy_with_logits(ab[0] * x + ab[1], y)
                loss.backward()
                return loss

            if len(y):
                opt.step(closure)
            set_params.append([float(ab[0].detach()), float(ab[1].detach())])
    return {"rank_probs": rank_probs, "set_params": set_params or [[STALE_SLOPE, 0.0]]}


TRAJECTORIES = "trajectories.safetensors"  # --save-trajectories writes it into --out


def prompt_pool(cfg: DrafterTrainConfig, target, n: int | None = None) -> list[str]:
    """The training prompts the trajectories are collected on (exact mode takes the first n_prompts, threshold
    mode the first threshold_prompts)."""
    from ..embedded.prompts import corpus_of, training_prompts

    n = n if n is not None else max(cfg.n_prompts, cfg.threshold_prompts or cfg.n_prompts)
    if cfg.prompts_file:  # one's own prompts: the file's first n (the rest are the validation prompts)
        from ..embedded.prompts import load_prompts

        return load_prompts(cfg.prompts_file)[:n]
    pool = training_prompts(n, seed=cfg.seed + 17, corpus=corpus_of(target))
    random.Random(cfg.seed).shuffle(pool)
    return pool


def validation_prompts(cfg: DrafterTrainConfig, target, n: int, n_pool: int) -> list[str]:
    """Up to n prompts from the training distribution that none of the drafter's n_pool training prompts is
    (another draw; the held-out prompts the benchmark reports on are never used for training choices)."""
    from ..embedded.prompts import corpus_of, training_prompts

    if cfg.prompts_file:  # the file's prompts after the training ones (none left: the accuracy criterion decides)
        from ..embedded.prompts import load_prompts

        return load_prompts(cfg.prompts_file)[n_pool:n_pool + n]
    seen = set(prompt_pool(cfg, target, n_pool))
    fresh = [p for p in training_prompts(2 * n, seed=cfg.seed + 29, corpus=corpus_of(target)) if p not in seen]
    return list(dict.fromkeys(fresh))[:n]


def collect_all(cfg: DrafterTrainConfig, target, topk: dict, log=print) -> dict:
    """{mode: trajectories} for both modes, every temperature of `cfg` (on one process or cfg.jobs workers)."""
    from ..eval.progress import EtaProgress, duration, unit_seconds

    n_sets = cfg.threshold_prompts or cfg.n_prompts
    pool = prompt_pool(cfg, target)
    prompts_of = {"exact": pool[: cfg.n_prompts], "threshold": pool[:n_sets]}
    decodes = len(cfg.temperatures) * (cfg.n_prompts + n_sets)
    unit_s = unit_seconds(target, pool[0], cfg.gen_length)
    unit_t = unit_seconds(target, pool[0], cfg.gen_length, mode="threshold")  # several commits per pass
    expected = len(cfg.temperatures) * (cfg.n_prompts * unit_s + n_sets * unit_t) / cfg.jobs
    log(f"estimate: collecting {decodes} standard decodes of {cfg.gen_length} tokens takes ~{duration(expected)} "
        f"(one takes {unit_s:.1f} s here, {unit_t:.1f} s in threshold mode); progress and ETA follow")
    if cfg.mix_prompts:
        n_mix = len(cfg.temperatures) * len(MIX_GRID) * cfg.mix_prompts
        log(f"then fitting, then choosing the pointer mixture: {n_mix} SPOT decodes at budget {cfg.mix_budget} "
            f"(on a CPU each costs more than a standard decode: often the longest part; its own ETA follows then; "
            f"--mix-prompts 0 chooses by validation accuracy instead)")
    progress = EtaProgress(decodes, "collect trajectories", expected)
    workers = None
    if cfg.jobs > 1:  # spawned workers (a fork would inherit torch's thread pools)
        import multiprocessing as mp

        workers = mp.get_context("spawn").Pool(cfg.jobs)
        log(f"collecting in {cfg.jobs} worker processes, one torch thread each")
    collected = {}
    try:
        for mode in ("exact", "threshold"):
            parts = []
            for j, t in enumerate(cfg.temperatures):
                log(f"collecting {mode} trajectories at T={t} on {len(prompts_of[mode])} prompts")
                if workers is None:
                    parts.append(collect(target, prompts_of[mode], mode, t, cfg.threshold, cfg.gen_length, seed=1000 * j,
                                         log=log, topk=topk[mode], progress=progress))
                else:
                    parts.append(collect_parallel(workers, cfg.model, prompts_of[mode], mode, t, cfg.threshold,
                                                  cfg.gen_length, seed=1000 * j, log=log, topk=topk[mode],
                                                  progress=progress, jobs=cfg.jobs))
            collected[mode] = _cat(parts)
    finally:
        if workers is not None:
            workers.terminate()
        progress.close()
    return collected


def save_trajectories(path: Path, collected: dict, meta: dict) -> None:
    """The collected trajectories as one safetensors file (tensors "<mode>/<name>", the run's settings as metadata)."""
    from safetensors.torch import save_file

    save_file({f"{mode}/{k}": v.contiguous() for mode, d in collected.items() for k, v in d.items()}, str(path),
              metadata={"spotviz": "drafter-trajectories", "settings": json.dumps(meta)})


def load_trajectories(path: str, expect: dict) -> tuple[dict, dict]:
    """Trajectories saved by `save_trajectories` and the settings they were collected with, checked against this
    run's (a drafter trained on them must read the same inputs and imitate the same decoder)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except (OSError, SafetensorError) as e:
        raise ValueError(f"--trajectories: cannot read {path}: {e}") from None
    if meta.get("spotviz") != "drafter-trajectories":
        raise ValueError(f"--trajectories: {path} is not a file of drafter trajectories (train-drafter --save-trajectories)")
    saved = json.loads(meta.get("settings", "{}"))
    differ = [k for k in ("model", "gen_length", "threshold", "temperatures", "topk") if saved.get(k) != expect[k]]
    if differ:
        raise ValueError(f"--trajectories: {path} was collected with other settings ("
                         + ", ".join(f"{k} {saved.get(k)!r}, here {expect[k]!r}" for k in differ) + ")")
    collected = {}
    for key, v in tensors.items():
        mode, name = key.split("/", 1)
        collected.setdefault(mode, {})[name] = v
    return collected, saved


def train_drafter(cfg: DrafterTrainConfig, calibrate_from: str | None = None, log=print) -> dict:
    from ..registry import DEFAULT_MODEL, load_target

    if not calibrate_from:
        check_topk(cfg.topk)
    torch.manual_seed(cfg.seed)
    target = load_target(cfg.model)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    stage = staging_folder(out)  # the drafters are written here and replace out's only once all are trained
    subs = {"exact": "spot", "threshold": "spot-sets"}
    # the input width per mode: a calibrated drafter keeps its source's (which may differ between the two heads)
    topk = {m: SpotDrafter.load(Path(calibrate_from) / sub).cfg.topk if calibrate_from else cfg.topk
            for m, sub in subs.items()}
    n_sets = cfg.threshold_prompts or cfg.n_prompts
    meta = {"model": str(cfg.model or DEFAULT_MODEL), "gen_length": cfg.gen_length, "threshold": cfg.threshold,
            "temperatures": list(cfg.temperatures), "seed": cfg.seed, "n_prompts": cfg.n_prompts,
            "threshold_prompts": n_sets, "topk": topk}
    if cfg.trajectories:
        collected, saved = load_trajectories(cfg.trajectories, meta)
        meta["n_prompts"], meta["threshold_prompts"] = saved["n_prompts"], saved["threshold_prompts"]
        log(f"trajectories from {cfg.trajectories} (collection skipped: {meta['n_prompts']} prompts, "
            f"{meta['threshold_prompts']} in threshold mode)")
    else:
        collected = collect_all(cfg, target, topk, log=log)
        if cfg.save_trajectories:
            save_trajectories(out / TRAJECTORIES, collected, meta)
            log(f"trajectories saved to {out / TRAJECTORIES} (reuse: --trajectories)")
    torch.manual_seed(cfg.seed)  # the same drafters from collected or reloaded trajectories
    log(f"training: {'a short calibration' if calibrate_from else f'{cfg.epochs} epochs'} per drafter")
    data = {}
    for mode in ("exact", "threshold"):
        d = collected[mode]
        d["tau"] = cfg.threshold
        n = d["feats"].shape[0]
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(cfg.seed))
        n_val = max(1, int(n * cfg.val_fraction))
        data[mode] = ({k: (v[perm[n_val:]] if torch.is_tensor(v) else v) for k, v in d.items()},
                      {k: (v[perm[:n_val]] if torch.is_tensor(v) else v) for k, v in d.items()})
        log(f"{mode}: {n} training passes")
    report = {"model": cfg.model, "n_prompts": meta["n_prompts"], "threshold_prompts": meta["threshold_prompts"],
              "gen_length": cfg.gen_length,
              "topk": {sub: topk[m] for m, sub in subs.items()}}
    # the calibrated template first: it is the SPOT drafter's partner in the decodes that choose its mixture
    template = calibrate_template(_cat(list(data["exact"])), _cat(list(data["threshold"])))
    (stage / "calibrated.json").write_text(json.dumps(template, indent=1))
    partner = Calibrated(template)
    mix_prompts = (validation_prompts(cfg, target, cfg.mix_prompts,
                                      max(meta["n_prompts"], meta["threshold_prompts"])) if cfg.mix_prompts else [])

    def choose_mix(model, val):
        mix = tune_mix(model, val, log=log)  # the accuracy criterion; the passes on validation prompts decide
        if not mix_prompts:
            return {"mix": mix}
        log(f"choosing the pointer mixture by SPOT's passes on {len(mix_prompts)} validation prompts "
            f"(budget {cfg.mix_budget}; {len(MIX_GRID)} weights x {len(mix)} temperatures: "
            f"{len(MIX_GRID) * len(mix)} decodes per prompt)")
        mix, table = tune_mix_by_passes(model, target, mix_prompts, sorted(mix), partner=partner,
                                        budget=cfg.mix_budget, gen_length=cfg.gen_length, prefer=mix, log=log)
        return mix_record(mix, table, len(mix_prompts), cfg.mix_budget)
    for mode, sub in subs.items():
        train, val = data[mode]
        if calibrate_from:
            model = SpotDrafter.load(Path(calibrate_from) / sub)
            model.cfg.target = cfg.model
            before = evaluate_drafter(model, val, mode)
            params = [p for n_, p in model.named_parameters() if n_ in CALIBRATED_PARAMETERS]
            for p in model.parameters():
                p.requires_grad_(any(p is q for q in params))
            res = fit(model, train, val, mode, epochs=max(2, cfg.epochs // 3), lr=cfg.lr * 5,
                      batch_size=cfg.batch_size, params=params, log=log)
            if mode == "exact":  # then pick the tree's mixture weight per temperature
                mix = choose_mix(model, val)
                res = evaluate_drafter(model, val, mode) | mix
            report[sub] = {"before_calibration": before, "after_calibration": res}
        else:
            model = SpotDrafter(DrafterConfig(n_features=n_features(topk[mode]), target=cfg.model,
                                              vocab_size=target.info.vocab_size, block_size=target.info.block_size,
                                              max_depth=MAX_DEPTH))
            log(f"drafter {sub}: {model.n_params():,} parameters")
            res = fit(model, train, val, mode, cfg.epochs, cfg.lr, cfg.batch_size, log=log)
            if mode == "exact":  # then pick the tree's mixture weight per temperature
                mix = choose_mix(model, val)
                res = evaluate_drafter(model, val, mode) | mix
            report[sub] = res
        model.save(stage / sub, extra={"validation": res, "calibrated_from": calibrate_from or ""})
        log(f"{sub}: validation, as saved (with its mixture: what the tree drafts from): {figures(res)}")
    report["n_params"] = SpotDrafter(DrafterConfig(n_features=n_features(topk["exact"]))).n_params()
    (stage / "training.json").write_text(json.dumps(report, indent=1))
    publish(stage, out)
    return report


def staging_folder(out: Path) -> Path:
    """An empty folder beside `out` for a run's drafters (a stopped or failed run's leftovers are cleared): a
    run that does not finish leaves `out`'s drafters as they were, never half replaced."""
    stage = out.parent / f".{out.name}.partial"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    return stage


def publish(stage: Path, out: Path) -> None:
    """Move a finished run's files from `stage` into `out`, each replacing its namesake (other files in `out`,
    such as saved trajectories, stay)."""
    for item in sorted(stage.iterdir()):
        dest = out / item.name
        if dest.is_dir():
            shutil.rmtree(dest)
        elif dest.exists():
            dest.unlink()
        item.rename(dest)
    stage.rmdir()
