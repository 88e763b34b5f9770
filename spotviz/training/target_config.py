"""One `train-target` run end to end: the model's shape, the corpus and how it is drawn, the objective's options,
the schedule and where the run trains and writes (training/target.py trains it; training/target_data.py draws its
corpus; training/objective.py noises it and scores it)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainTargetConfig:
    out: str
    attention: str = "block"
    vocab_size: int = 1024
    hidden_size: int = 256
    num_hidden_layers: int = 6
    num_attention_heads: int = 8
    intermediate_size: int = 704
    block_size: int = 16
    seq_len: int = 256
    batch_size: int = 16
    lr: float = 2e-3
    min_lr_frac: float = 0.05
    warmup_steps: int = 200
    weight_decay: float = 0.1
    max_steps: int = 0  # 0: only the time budget ends training
    minutes: float = 0.0  # 0: only max_steps ends training
    eval_every: int = 200
    checkpoint_every: int = 100
    threads: int | None = None  # spotviz/threads.py: None = $SPOTVIZ_THREADS, else 1; 0 = all cores
    seed: int = 0
    corpus_fraction: float = 1.0  # tests train on a slice
    save_dtype: str = "bfloat16"
    corpus: str = "shakespeare"  # "shakespeare", "python" (see corpus.py) or "math" (wordproblems.py)
    context: int = 0  # the model's max_position_embeddings (0: seq_len)
    problems: int = 300_000  # math corpus: generated training problems
    # math corpus: noise the question too in training (the loss then also teaches copying inside questions, which
    # measured faster to learn than from the answers alone); validation always scores the answer only
    noise_questions: bool = True
    # math corpus: share of the training rows that are bare arithmetic drills ("What is 48 + 25?", the
    # wordproblems DRILL family), and the loss weight of the digits of a computed result (the `c` of an
    # `a op b = c` line; every other position weighs 1). Re-weighting positions leaves each position's best
    # prediction, and so the model's calibration, unchanged: it only moves capacity to the arithmetic.
    drills: float = 0.0
    result_weight: float = 1.0
    # math corpus: share of the training rows noised as the decoder meets a computed result: one result's
    # digits masked, everything else given (the block noise leaves a result's operands visible only ~1 time in 5)
    result_focus: float = 0.0
    # math corpus: share of training problems whose numbers are all drawn small (wordproblems.Draw), so that
    # "8 + 5" is practised as often as "48 + 25"
    small_numbers: float = 0.0
    # math corpus: share of training questions reworded (embedded/reword.py: synonym swaps that keep the problem),
    # so that the model learns the problem rather than its few phrasings' exact sentences
    reword: float = 0.0
    # math corpus: share of the training word problems drawn from embedded/stories.py's compositional stories
    # (chains of 2 to 4 known steps; never a combination a held-out family makes)
    stories: float = 0.0
    batch_tokens: int = 0  # math corpus: > 0, a batch of short rows holds more of them (see sample_windows)
    init_from: str = ""  # an exported model folder to start from (its tokenizer and architecture are kept)
    # bf16 autocast for the training matmuls ("auto": only where the CPU has native bf16, see training_dtype);
    # weights and optimizer state stay fp32
    amp: str = "auto"
    # where the training steps run: "cpu", "cuda", "cuda:N", "mps" or "auto" (cuda when available); the batches
    # are drawn and noised on that device too (with its own random generator)
    device: str = "cpu"
    # math corpus: > 0, generate and tokenize the training problems in chunks of CHUNK_PROBLEMS, each seeded by
    # (seed, chunk), spread over this many processes (the corpus is the same for any count > 0); 0: one
    # sequential draw (the corpus of the releases trained before workers existed)
    data_workers: int = 0
