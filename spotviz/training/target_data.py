"""The corpus an embedded target trains on, cached in the run's folder (`--out`): a tokenizer and the token ids of
its training and validation text (Shakespeare, Python: one stream each, cut into random windows), or for the math
corpus the rows of generated word problems (one problem a row, end-of-text padded, with the position where its
answer starts: only the answer is noised). data.json records the settings the cache was drawn with, and a run with
other settings is refused rather than trained on the old corpus under the new one's name. `sample_windows` draws a
training batch from either."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch

from .target_config import TrainTargetConfig

MIN_VOCAB = 260  # a byte-level BPE's floor: the 256 bytes and the special tokens (EOT, MASK, PAD), then merges
CHUNK_PROBLEMS = 50_000  # the unit of a parallel corpus draw (data_workers > 0)


def prepare_data(cfg: TrainTargetConfig, out: Path):
    """Tokenizer + token ids of train/val, cached in `out` (npy, no pickle); the corpus identity in source.json.

    With `init_from` the tokenizer of that model folder is reused (its embeddings are tied to it)."""
    from transformers import AutoTokenizer

    from ..embedded.corpus import split_named_corpus
    from ..embedded.tokenizer import encode_corpus, train_tokenizer

    check_cached_data(cfg, out)
    if cfg.corpus == "math":
        return prepare_problem_data(cfg, out)
    tok_dir = out / "tokenizer"
    if not (out / "train_ids.npy").exists():
        parts = split_named_corpus(cfg.corpus)
        train_text = parts["train"][: int(len(parts["train"]) * cfg.corpus_fraction)]
        if cfg.init_from:
            tok = AutoTokenizer.from_pretrained(cfg.init_from, trust_remote_code=False)
        else:
            tok = train_tokenizer(train_text, cfg.vocab_size)
        tok.save_pretrained(str(tok_dir))
        np.save(out / "train_ids.npy", np.asarray(encode_corpus(tok, train_text), dtype=np.int32))
        np.save(out / "val_ids.npy", np.asarray(encode_corpus(tok, parts["val"]), dtype=np.int32))
        (out / "source.json").write_text(json.dumps(parts["source"], indent=1))
    tok = AutoTokenizer.from_pretrained(str(tok_dir), trust_remote_code=False)
    train = torch.from_numpy(np.load(out / "train_ids.npy", allow_pickle=False).astype(np.int64))
    val = torch.from_numpy(np.load(out / "val_ids.npy", allow_pickle=False).astype(np.int64))
    return tok, train, val


DATA_FILE = "data.json"  # the settings a folder's cached corpus was drawn with


def data_settings(cfg: TrainTargetConfig) -> dict:
    """The settings that decide a run's cached corpus and tokenizer (what prepare_data writes to `out`)."""
    keys = ["corpus", "init_from"] + ([] if cfg.init_from else ["vocab_size"])
    if cfg.corpus == "math":
        keys += ["problems", "drills", "seed", "small_numbers", "reword", "stories", "seq_len"]
    else:
        keys += ["corpus_fraction"]
    out = {k: getattr(cfg, k) for k in keys}
    if cfg.init_from:  # (one folder however it is spelled)
        out["init_from"] = str(Path(cfg.init_from).expanduser().resolve())
    if cfg.corpus == "math":
        out["data_workers"] = bool(cfg.data_workers)  # (a parallel draw is another corpus than the sequential one)
    return out


def check_cached_data(cfg: TrainTargetConfig, out: Path) -> None:
    """Refuse to train on a corpus that `out` holds from a run with other data settings (prepare_data reuses the
    cached token ids and tokenizer as they are); record the settings when `out` holds no corpus yet."""
    cached = (out / "train_rows.npy").exists() or (out / "train_ids.npy").exists()
    want = data_settings(cfg)
    if not cached:
        out.mkdir(parents=True, exist_ok=True)
        (out / DATA_FILE).write_text(json.dumps(want, indent=1))
        return
    if (out / DATA_FILE).is_file():
        have = json.loads((out / DATA_FILE).read_text())
    else:  # (a folder from before data.json: its corpus at least)
        src = json.loads((out / "source.json").read_text()) if (out / "source.json").is_file() else {}
        have = {**want, "corpus": src.get("corpus", want["corpus"])}
    diff = [k for k in want if k in have and have[k] != want[k]]
    if diff:
        def said(k, v):  # (as the command line spells it)
            return ("some" if v else "none") if k == "data_workers" else repr(v)

        raise ValueError(f"--out {cfg.out} holds a corpus drawn with other settings ("
                         + ", ".join(f"--{k.replace('_', '-')} {said(k, have[k])} there, {said(k, want[k])} here"
                                     for k in diff)
                         + "): give the same settings to resume it, or another --out to start afresh")


def prepare_problem_data(cfg: TrainTargetConfig, out: Path):
    """The math corpus as rows: token ids [n, seq_len] (one problem each, EOT-padded) and each row's answer start.

    Returns (tokenizer, train, val) where train / val are (rows, answer_start, blocks) triples of tensors."""
    from transformers import AutoTokenizer

    from ..embedded.corpus import EOT
    from ..embedded.tokenizer import train_tokenizer
    from ..embedded.wordproblems import CHAT_TEMPLATE, HELDOUT_FAMILIES, generate

    tok_dir = out / "tokenizer"
    if not (out / "train_rows.npy").exists():
        n_drill = int(round(cfg.problems * cfg.drills))
        n = cfg.problems - n_drill
        train = None if cfg.data_workers else training_problems(cfg, n, n_drill, 0)
        if cfg.init_from:
            tok = AutoTokenizer.from_pretrained(cfg.init_from, trust_remote_code=False)
        else:  # a new tokenizer learns from the first 40,000 problems (of the first chunk in a parallel draw)
            sample = train if train is not None else training_problems(cfg, min(CHUNK_PROBLEMS, n), 0, 1)
            tok = train_tokenizer(EOT.join(p.text for p in sample[:40_000]), cfg.vocab_size, split_digits=True)
        tok.chat_template = CHAT_TEMPLATE
        tok.save_pretrained(str(tok_dir))
        if cfg.data_workers:  # chunks of CHUNK_PROBLEMS, each drawn and tokenized by a worker process
            import multiprocessing as mp

            jobs = [(cfg, str(tok_dir), min(CHUNK_PROBLEMS, n - a), 0, k + 1) for k, a in
                    enumerate(range(0, n, CHUNK_PROBLEMS))]
            jobs += [(cfg, str(tok_dir), 0, min(CHUNK_PROBLEMS, n_drill - a), k + 1) for k, a in
                     enumerate(range(0, n_drill, CHUNK_PROBLEMS))]
            with mp.get_context("fork" if os.name == "posix" else "spawn").Pool(cfg.data_workers) as pool:
                parts = pool.map(_chunk_rows, jobs)
            train_rows = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                          max(p[2] for p in parts))
        else:
            train_rows = problem_rows(train, tok, cfg.seq_len)
        val_rows = problem_rows(generate(2000, "heldout-problems", seed=cfg.seed), tok, cfg.seq_len)
        for name, (rows, start, _) in (("train", train_rows), ("val", val_rows)):
            np.save(out / f"{name}_rows.npy", rows)
            np.save(out / f"{name}_start.npy", start)
        (out / "source.json").write_text(json.dumps({
            "corpus": "math", "generator": "spotviz.embedded.wordproblems", "train_problems": len(train_rows[0]),
            "val_problems": len(val_rows[0]), "drill_problems": n_drill, "seed": cfg.seed,
            "small_numbers": cfg.small_numbers, "reworded": cfg.reword,
            "stories": cfg.stories,
            "chunked": CHUNK_PROBLEMS if cfg.data_workers else 0,
            "heldout_families": list(HELDOUT_FAMILIES), "longest_row": train_rows[2]}, indent=1))
    tok = AutoTokenizer.from_pretrained(str(tok_dir), trust_remote_code=False)

    def load(name):
        rows = torch.from_numpy(np.load(out / f"{name}_rows.npy", allow_pickle=False).astype(np.int64))
        start = torch.from_numpy(np.load(out / f"{name}_start.npy", allow_pickle=False).astype(np.int64))
        length = (rows != tok.eos_token_id).sum(1) + 1  # the problem and its end-of-text token
        return rows, start, (length + cfg.block_size - 1) // cfg.block_size

    return tok, load("train"), load("val")


def training_problems(cfg: TrainTargetConfig, n: int, n_drill: int, chunk: int) -> list:
    """The math corpus's training problems: `n` word problems (a `cfg.stories` share of them compositional stories,
    spread evenly among the others; a `cfg.reword` share of all of them reworded), then `n_drill` arithmetic
    drills. chunk 0 is the one sequential draw seeded by cfg.seed; chunk k > 0 is the k-th chunk of a parallel
    draw, seeded by (cfg.seed, k)."""
    from ..embedded.reword import reworded
    from ..embedded.wordproblems import DRILL, generate

    seed = cfg.seed if chunk == 0 else cfg.seed * 1_000_003 + chunk
    n_story = int(round(n * cfg.stories))
    out = generate(n - n_story, "train", seed=seed, small=cfg.small_numbers) if n - n_story else []
    if n_story:  # story j goes at position i where the running share of stories reaches j + 1
        from ..embedded import stories

        told, plain = iter(stories.generate(n_story, seed=seed)), iter(out)
        out = [next(told) if (i + 1) * n_story // n > i * n_story // n else next(plain) for i in range(n)]
    if cfg.reword and out:
        out = reworded(out, cfg.reword, seed)
    if n_drill:
        out += generate(n_drill, "train", seed=seed, families=(DRILL.name,), small=cfg.small_numbers)
    return out


def problem_rows(problems: list, tok, seq_len: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(rows int16 [n, seq_len] (each problem's tokens, end-of-text padded), answer starts int16 [n], the longest
    problem in tokens)."""
    rows = np.full((len(problems), seq_len), tok.eos_token_id, dtype=np.int16)
    start = np.zeros(len(problems), dtype=np.int16)
    enc = tok([p.text for p in problems], add_special_tokens=False)["input_ids"]
    enc_q = tok([p.prompt for p in problems], add_special_tokens=False)["input_ids"]
    for i, (ids, q) in enumerate(zip(enc, enc_q)):
        if ids[: len(q)] != q:
            raise ValueError(f"the prompt of problem {i} does not tokenize as the start of its text")
        ids = ids[: seq_len - 1]  # at least one EOT
        rows[i, : len(ids)] = ids
        start[i] = len(q)
    return rows, start, int(max(map(len, enc), default=0))


def _chunk_rows(job) -> tuple[np.ndarray, np.ndarray, int]:
    """One chunk of a parallel corpus draw (a worker process): its problems as problem_rows."""
    from transformers import AutoTokenizer

    cfg, tok_dir, n, n_drill, chunk = job
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(tok_dir, trust_remote_code=False)
    return problem_rows(training_problems(cfg, n, n_drill, chunk), tok, cfg.seq_len)


def sample_windows(ids, n: int, seq_len: int, gen: torch.Generator, block: int = 16, tokens: int = 0):
    """A batch: random windows of a token stream, or random rows of a row corpus ((rows, answer_start, blocks)
    triple; then also the mask of the positions that may be noised). Rows are drawn from one length bucket (the
    rows that end, with their first end-of-text token, in the same number of blocks) and cut to that length, so
    a batch of short problems costs what short problems cost; with `tokens` > 0 a batch holds
    max(n, tokens // length) rows, so that short rows come in larger batches of about the same cost."""
    dev = gen.device
    if isinstance(ids, tuple):
        rows, start, blocks = ids
        pick = blocks[torch.randint(0, len(rows), (1,), generator=gen, device=dev)]
        members = (blocks == pick).nonzero().squeeze(1)
        if tokens:
            n = max(n, tokens // (min(seq_len, int(pick) * block)))
        idx = members[torch.randint(0, len(members), (n,), generator=gen, device=dev)]
        x = rows[idx, : min(seq_len, int(pick) * block)]
        return x, torch.arange(x.shape[1], device=dev).unsqueeze(0) >= start[idx].unsqueeze(1)
    starts = torch.randint(0, len(ids) - seq_len - 1, (n,), generator=gen, device=dev)
    return torch.stack([ids[s : s + seq_len] for s in starts.tolist()]), None
