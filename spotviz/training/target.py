"""Train an embedded masked-diffusion target model on word problems, Shakespeare or Python code (resumable,
CPU-friendly; --device cuda on a GPU).

    python -m spotviz train-target --corpus shakespeare --attention block --out runs/shakespeare-bd --minutes 90
    python -m spotviz train-target --corpus python --vocab-size 2048 --out runs/python-bd --minutes 90
    python -m spotviz train-target --corpus python --init-from assets/models/python-bd --out runs/more --minutes 60
    python -m spotviz train-target --corpus math --vocab-size 1024 --seq-len 128 --context 256 --out runs/math-bd

The "math" corpus is not a text stream but a set of documents (generated word problems, wordproblems.py): each
training row is one problem at position 0 (as at inference: the templated question, then the answer), padded
with end-of-text tokens to the row length, and only answer positions are noised (the question is always given,
as a prompt is). Its tokenizer writes every digit as its own token.

Block models (attention="block") are trained BD3-LM style: the noised sequence is concatenated with the clean
sequence; a noised block attends to itself and to the clean earlier blocks, a clean block attends block-causally
to clean blocks. Every block gets its own mask ratio. Full-attention models (MDLM/LLaDA style) mix uniform random
masking with "semi-autoregressive" states (clean prefix, partly masked current window, fully masked future),
the states that semi-AR decoding visits. Loss: mean cross-entropy over masked positions.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..threads import set_threads
from ..embedded.modeling import SpotDLMConfig, SpotDLMForMaskedLM
from .objective import ResultDigits, block_training_mask, evaluate, masked_loss, noise_batch
from .target_config import TrainTargetConfig
from .target_data import MIN_VOCAB, prepare_data, sample_windows


def cpu_has_native_bf16() -> bool:
    """True on CPUs with bf16 dot-product instructions (AVX512-BF16 or AMX). Elsewhere (AVX2-only CPUs) bf16
    matmuls are emulated and measured 6-10x slower than fp32."""
    cpu = getattr(torch, "cpu", None)
    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        fn = getattr(cpu, probe, None)
        try:
            if fn is not None and fn():
                return True
        except Exception:  # pragma: no cover - probe missing in this torch build
            pass
    return False


def training_dtype(amp: str, device: str = "cpu") -> str:
    """Resolve the --amp choice to "bfloat16" (autocast) or "float32"."""
    if amp not in ("auto", "bf16", "fp32"):
        raise ValueError(f"amp must be auto, bf16 or fp32, got {amp!r}")
    if amp == "auto":
        return "bfloat16" if (device != "cpu" or cpu_has_native_bf16()) else "float32"
    return "bfloat16" if amp == "bf16" else "float32"


# -------------------------------------------------------------------------------------------- train
def lr_at(cfg: TrainTargetConfig, step: int, progress: float) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    return cfg.lr * (cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


def export_model(model: SpotDLMForMaskedLM, tok, folder: Path, dtype: str) -> None:
    """Write a Hugging Face folder: config.json, model.safetensors, tokenizer files."""
    from transformers.utils import logging as hf_logging

    folder.mkdir(parents=True, exist_ok=True)
    hf_logging.disable_progress_bar()  # (no "Writing model shards" bar between the training lines)
    model.save_pretrained(str(folder), safe_serialization=True)
    if dtype == "bfloat16":  # halve the file; the model is run in float32 after loading
        sd = load_file(str(folder / "model.safetensors"))
        save_file({k: v.to(torch.bfloat16) for k, v in sd.items()}, str(folder / "model.safetensors"),
                  metadata={"format": "pt"})
    tok.save_pretrained(str(folder))


def device_name(device: torch.device) -> str:
    """"cpu", or the accelerator's type and name ("cuda (NVIDIA H200)")."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type


def _size(data) -> str:
    return f"{len(data[0])} training problems" if isinstance(data, tuple) else f"{len(data)} training tokens"


def check_config(cfg: TrainTargetConfig) -> None:
    """ValueError with the option's name for a setting out of range (training and --prepare-only both check), before
    any work: a corpus drawn or steps trained for a run that then fails costs minutes to hours."""
    for flag, value in (("--batch-size", cfg.batch_size), ("--hidden-size", cfg.hidden_size),
                        ("--layers", cfg.num_hidden_layers), ("--heads", cfg.num_attention_heads),
                        ("--intermediate-size", cfg.intermediate_size), ("--seq-len", cfg.seq_len),
                        ("--block-size", cfg.block_size), ("--eval-every", cfg.eval_every),
                        ("--checkpoint-every", cfg.checkpoint_every)):
        if value < 1:
            raise ValueError(f"{flag} {value}: give a whole number of at least 1")
    if cfg.hidden_size % cfg.num_attention_heads or (cfg.hidden_size // cfg.num_attention_heads) % 2:
        raise ValueError(f"--heads {cfg.num_attention_heads}: --hidden-size {cfg.hidden_size} must split into that "
                         "many heads of an even width (rotary position embeddings rotate pairs)")
    for flag, value in (("--max-steps", cfg.max_steps), ("--minutes", cfg.minutes)):
        if value < 0:
            raise ValueError(f"{flag} {value:g}: give 0 (no limit) or more")
    if cfg.context and cfg.context < cfg.seq_len:
        raise ValueError(f"--context {cfg.context}: give 0 (as --seq-len) or at least --seq-len {cfg.seq_len}")
    if cfg.attention == "block" and (cfg.seq_len % cfg.block_size or (cfg.context or cfg.seq_len) % cfg.block_size):
        raise ValueError(f"--block-size {cfg.block_size}: --seq-len {cfg.seq_len} and --context "
                         f"{cfg.context or cfg.seq_len} must be whole numbers of blocks")
    if cfg.vocab_size < MIN_VOCAB:
        raise ValueError(f"--vocab-size {cfg.vocab_size}: give at least {MIN_VOCAB} (the 256 bytes, the special "
                         "tokens and some merges)")
    if not 0.0 < cfg.corpus_fraction <= 1.0:
        raise ValueError(f"--corpus-fraction {cfg.corpus_fraction:g}: give a share in (0, 1]")
    if not 0 <= cfg.lr < math.inf:
        raise ValueError(f"--lr {cfg.lr:g}: give a learning rate of 0 or more")
    if cfg.corpus == "math" and cfg.problems < 100:
        raise ValueError(f"--problems {cfg.problems}: give at least 100 (a validation split is held out of them)")
    if cfg.init_from and not (Path(cfg.init_from) / "config.json").is_file():
        raise ValueError(f"--init-from {cfg.init_from}: not an exported model folder (no config.json there; "
                         "give OUT/final of an earlier run, or assets/models/NAME)")
    if not 0.0 <= cfg.small_numbers <= 1.0:
        raise ValueError(f"--small-numbers {cfg.small_numbers:g}: give a share in [0, 1]")
    if not 0.0 <= cfg.reword <= 1.0:
        raise ValueError(f"--reword {cfg.reword:g}: give a share in [0, 1]")
    if not 0.0 <= cfg.stories <= 1.0:
        raise ValueError(f"--stories {cfg.stories:g}: give a share in [0, 1]")
    if not 0.0 <= cfg.drills < 1.0:
        raise ValueError(f"--drills {cfg.drills:g}: give a share in [0, 1)")
    if cfg.result_weight <= 0:
        raise ValueError(f"--result-weight {cfg.result_weight:g}: give a positive weight")
    if cfg.batch_tokens < 0:
        raise ValueError(f"--batch-tokens {cfg.batch_tokens}: give 0 (fixed rows per batch) or a token count")
    if not 0.0 <= cfg.result_focus < 1.0:
        raise ValueError(f"--result-focus {cfg.result_focus:g}: give a share in [0, 1)")
    if cfg.data_workers < 0:
        raise ValueError(f"--data-workers {cfg.data_workers}: give 0 (one sequential draw) or a process count")
    if cfg.corpus != "math" and (cfg.drills or cfg.result_weight != 1.0 or cfg.result_focus or cfg.batch_tokens
                                 or cfg.small_numbers or cfg.reword or cfg.stories):
        raise ValueError("--drills, --result-weight, --result-focus, --batch-tokens, --small-numbers, --reword and "
                         "--stories apply to the math corpus only")


def train_target(cfg: TrainTargetConfig, log=print) -> dict:
    check_config(cfg)
    from ..targets.base import pick_device

    device = pick_device(cfg.device)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    set_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    dtype = training_dtype(cfg.amp, device.type)
    amp = dtype == "bfloat16"
    tok, train, val = prepare_data(cfg, out)
    train, val = (tuple(t.to(device) for t in d) if isinstance(d, tuple) else d.to(device) for d in (train, val))
    if cfg.init_from:  # continue from an exported model: its architecture, weights and tokenizer
        mcfg = SpotDLMConfig.from_json_file(str(Path(cfg.init_from) / "config.json"))
        if (mcfg.attention, mcfg.block_size) != (cfg.attention, cfg.block_size) or \
                mcfg.max_position_embeddings < cfg.seq_len:
            raise ValueError(f"--init-from {cfg.init_from}: its attention/block size/context "
                             f"({mcfg.attention}, {mcfg.block_size}, {mcfg.max_position_embeddings}) do not match "
                             f"this run ({cfg.attention}, {cfg.block_size}, {cfg.seq_len})")
    else:
        mcfg = SpotDLMConfig(
        vocab_size=len(tok), hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads, intermediate_size=cfg.intermediate_size,
        max_position_embeddings=cfg.context or cfg.seq_len, attention=cfg.attention, block_size=cfg.block_size,
        mask_token_id=tok.mask_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )
    model = SpotDLMForMaskedLM(mcfg)
    model.mark_residual_projections()
    model.apply(model._init_weights)
    if cfg.init_from and not (out / "checkpoint" / "model.safetensors").exists():
        sd = load_file(str(Path(cfg.init_from) / "model.safetensors"))
        missing, unexpected = model.load_state_dict({k: v.float() for k, v in sd.items()}, strict=False)
        if unexpected or [k for k in missing if k != "lm_head.weight"]:
            raise ValueError(f"--init-from {cfg.init_from}: weights do not match its config.json")
        model.tie_weights()
    model.to(device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98))
    state = {"step": 0, "elapsed": 0.0, "history": []}
    ckpt = out / "checkpoint"
    if (ckpt / "model.safetensors").exists():  # resume (our own files: safetensors + torch optimizer state)
        saved = SpotDLMConfig.from_json_file(str(ckpt / "config.json")) if (ckpt / "config.json").is_file() else mcfg
        shape = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                 "max_position_embeddings", "attention", "block_size")
        if any(getattr(saved, k) != getattr(mcfg, k) for k in shape):
            raise ValueError(f"--out {cfg.out} holds a checkpoint of another model ("
                             + ", ".join(f"{k} {getattr(saved, k)}" for k in shape if getattr(saved, k) != getattr(mcfg, k))
                             + " there): give the same settings to resume it, or another --out to start afresh")
        model.load_state_dict(load_file(str(ckpt / "model.safetensors")), strict=False)
        model.tie_weights()
        opt.load_state_dict(torch.load(ckpt / "optim.pt", weights_only=True))
        state = json.loads((ckpt / "state.json").read_text())
        log(f"resumed at step {state['step']} ({state['elapsed'] / 60:.1f} min trained)")
    gen = torch.Generator(device=device).manual_seed(cfg.seed * 7919 + state["step"])
    tmask = block_training_mask(cfg.seq_len, cfg.block_size, device) if cfg.attention == "block" else None
    results = ResultDigits(tok).to(device) if cfg.result_weight != 1.0 or cfg.result_focus else None
    n_params = sum(p.numel() for p in model.parameters())
    where = device_name(device)
    log(f"{cfg.corpus} {cfg.attention} model (block {mcfg.block_size}), {n_params / 1e6:.2f}M parameters, "
        f"{_size(train)}; on {where}, matmuls in {dtype}"
        f"{' (autocast)' if amp else ''}{'' if cfg.amp != 'auto' else ' (chosen for this device)'}"
        f"{'; initialised from ' + cfg.init_from if cfg.init_from and not state['step'] else ''}")
    limits = [f"{cfg.minutes:g} min" if cfg.minutes else "",
              f"{cfg.max_steps} step{'s' * (cfg.max_steps != 1)}" if cfg.max_steps else ""]
    if cfg.max_steps and state["step"] >= cfg.max_steps:
        log(f"note: the checkpoint is at step {state['step']}, already past --max-steps {cfg.max_steps}: it is exported "
            "as it is (a larger --max-steps trains on)")
    log(f"estimate: stops after {' or '.join(x for x in limits if x)}{' (the first reached)' if all(limits) else ''}, "
        f"then exports the model; a validation line every {cfg.eval_every} steps with the ETA")

    def progress() -> float:
        fr = []
        if cfg.max_steps:
            fr.append(state["step"] / cfg.max_steps)
        if cfg.minutes:
            fr.append(state["elapsed"] / (cfg.minutes * 60))
        return max(fr) if fr else 1.0

    def save_checkpoint():
        tmp = out / "checkpoint.tmp"
        tmp.mkdir(exist_ok=True)
        save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"},
                  str(tmp / "model.safetensors"))
        torch.save(opt.state_dict(), tmp / "optim.pt")
        (tmp / "state.json").write_text(json.dumps(state))
        mcfg.to_json_file(str(tmp / "config.json"))  # lets export_checkpoint rebuild the model exactly
        if ckpt.exists():
            shutil.rmtree(ckpt)
        os.replace(tmp, ckpt)
        on_disk["step"] = state["step"]

    on_disk = {"step": state["step"] if (ckpt / "model.safetensors").exists() else None}  # (the last checkpoint)
    model.train()
    t_last = time.time()
    from tqdm import tqdm

    bar = tqdm(total=1000, desc=f"train {cfg.attention}", unit="‰", mininterval=5, disable=None)
    ema = None
    try:
        while progress() < 1.0:
            for g in opt.param_groups:
                g["lr"] = lr_at(cfg, state["step"], progress())
            x, maskable = sample_windows(train, cfg.batch_size, cfg.seq_len, gen, cfg.block_size, cfg.batch_tokens)
            noised, m = noise_batch(cfg, x, mcfg.mask_token_id, gen, None if cfg.noise_questions else maskable)
            if tmask is not None and tmask.shape[-1] != 2 * x.shape[1]:  # rows of another length bucket
                tmask = block_training_mask(x.shape[1], cfg.block_size, device)
            runs = None if results is None else results.runs(x)  # (one scan of the rows serves focus and weights)
            if cfg.result_focus:
                focus = results.focus(x, cfg.result_focus, gen, runs)
                m = torch.where(focus.any(1, keepdim=True), focus, m)
                noised = torch.where(m, torch.full_like(x, mcfg.mask_token_id), x)
            weight = None if cfg.result_weight == 1.0 else 1.0 + (cfg.result_weight - 1.0) * runs[0].float()
            loss = masked_loss(model, x, noised, m, tmask, amp, weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            now = time.time()
            state["elapsed"] += now - t_last
            t_last = now
            state["step"] += 1
            ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item()
            bar.n = int(1000 * min(progress(), 1.0))
            bar.set_postfix(step=state["step"], loss=f"{ema:.3f}", refresh=False)
            bar.update(0)
            if state["step"] % cfg.eval_every == 0:
                vl = evaluate(model, val, cfg, amp=amp)
                state["history"].append({"step": state["step"], "minutes": state["elapsed"] / 60, "train_loss": ema,
                                         "val_loss": vl})
                done = max(progress(), 1e-9)
                log(f"step {state['step']}  {state['elapsed'] / 60:.1f} min  train {ema:.3f}  val {vl:.3f}"
                    f"  ({vl / math.log(2):.2f} bits/token)  [{100 * min(done, 1):.0f}% done, ETA "
                    f"{state['elapsed'] * (1 - min(done, 1)) / done / 60:.1f} min]")
                t_last = time.time()
            if state["step"] % cfg.checkpoint_every == 0:
                save_checkpoint()
                t_last = time.time()
    except KeyboardInterrupt:  # (Ctrl-C: not saved now, mid-step; the last checkpoint is what is kept)
        bar.close()
        if on_disk["step"] is not None and (ckpt / "model.safetensors").exists():
            raise KeyboardInterrupt(f"the checkpoint of step {on_disk['step']} in {ckpt} resumes it (the same "
                                    "command)") from None
        raise KeyboardInterrupt(f"no checkpoint kept (one is written every {cfg.checkpoint_every} steps)") from None
    bar.close()
    save_checkpoint()
    vl = evaluate(model, val, cfg, n=256)
    source = json.loads((out / "source.json").read_text()) if (out / "source.json").is_file() else {}
    result = {"val_masked_loss": vl, "val_bits_per_token": vl / math.log(2), "steps": state["step"],
              "minutes": state["elapsed"] / 60, "parameters": n_params, "training_dtype": dtype, "device": where,
              "corpus": source, "config": asdict(cfg)}
    if cfg.init_from:
        result |= lineage(cfg.init_from, state["step"], state["elapsed"] / 60)
    final = out / "final"
    export_model(model, tok, final, cfg.save_dtype)
    (final / "training.json").write_text(json.dumps(result | {"history": state["history"]}, indent=1))
    log(f"final: val masked-token loss {vl:.4f} nats = {vl / math.log(2):.3f} bits/token; exported to {final}")
    return result


def lineage(init_from: str | Path, steps: int, minutes: float) -> dict:
    """What a run continued from (`--init-from`): the parent's training record in brief, and the totals over
    both runs (the parent's own lineage included)."""
    f = Path(init_from) / "training.json"
    parent = json.loads(f.read_text()) if f.is_file() else {}
    brief = {k: parent[k] for k in ("steps", "minutes", "val_masked_loss", "continued_from") if k in parent}
    return {"continued_from": brief | {"folder": str(init_from)},
            "total_steps": parent.get("total_steps", parent.get("steps", 0)) + steps,
            "total_minutes": parent.get("total_minutes", parent.get("minutes", 0.0)) + minutes}


def export_checkpoint(out: str | Path, dest: str | Path, dtype: str = "bfloat16") -> Path:
    """Export the latest checkpoint of a (possibly still running) training to a Hugging Face folder."""
    from transformers import AutoTokenizer

    out = Path(out)
    ckpt = out / "checkpoint"
    sd = load_file(str(ckpt / "model.safetensors"))
    tok = AutoTokenizer.from_pretrained(str(out / "tokenizer"), trust_remote_code=False)
    cfg_file = ckpt / "config.json"
    if not cfg_file.is_file():
        raise ValueError(f"{ckpt} has no config.json (written with every checkpoint); cannot rebuild the model")
    mcfg = SpotDLMConfig.from_json_file(str(cfg_file))
    model = SpotDLMForMaskedLM(mcfg)
    model.load_state_dict(sd, strict=False)
    model.tie_weights()
    export_model(model, tok, Path(dest), dtype)
    state = json.loads((ckpt / "state.json").read_text()) if (ckpt / "state.json").is_file() else {}
    source = json.loads((out / "source.json").read_text()) if (out / "source.json").is_file() else {}
    (Path(dest) / "training.json").write_text(json.dumps({  # a snapshot: no final evaluation yet
        "snapshot_of": str(out), "steps": state.get("step"), "minutes": state.get("elapsed", 0) / 60,
        "history": state.get("history", []), "corpus": source,
        "config": {"corpus": source.get("corpus", "shakespeare")}}, indent=1))
    return Path(dest)
