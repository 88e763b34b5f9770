"""Command line: decode, trace, bench, cost-curve, train-target, train-drafter, accuracy.

    python -m spotviz decode --prompt "Sam has 8 marbles. He finds 5 more. How many marbles does Sam have now?"
    python -m spotviz decode --prompt "ROMEO." --model shakespeare-bd --drafter spot --budget 32 [--json]
    python -m spotviz trace run.json [--json]      # check a trace file (as the app's Replay does) and summarise it
    python -m spotviz bench --n-prompts 2          # every decoder on held-out prompts (prints an estimate first)
    python -m spotviz cost-curve                   # (re)measure the forward cost f(N) that --budget auto uses
    python -m spotviz train-drafter --out DIR      # train the drafters of a model (never over assets/ unless --force)
    python -m spotviz train-target --out DIR       # train an embedded target model (resumable)
    python -m spotviz accuracy                     # answer accuracy of math-bd on held-out word problems

Every command but trace runs torch on --threads N threads (else $SPOTVIZ_THREADS, else 1; 0 = all cores). Errors are one
`error: ...` line, exit code 2 (Ctrl-C: one line, exit code 130; an interrupted bench keeps its finished rows).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

from .errors import IdentityWarning, PromptTruncatedWarning, worded_with_flags


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default, unless the help already names it or there is none."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (not action.option_strings or "default" in text or action.default is None or action.default is False
                or action.default is argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)".lstrip()


class _Parser(argparse.ArgumentParser):
    """argparse with the defaults shown in --help, and every usage error as one `error: ...` line, exit 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs):
        default = kwargs.get("default")
        if kwargs.get("help") is None and default is not None and default is not False and args[0].startswith("-"):
            kwargs["help"] = "(default: %(default)s)"  # an option without help still shows its default
        return super().add_argument(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"error: {self.prog.removeprefix('python -m ')}: {' '.join(message.split())} (see --help)\n")


def _budget(s: str):
    """A budget flag's value: a whole number, else the text as given (auto, or wrong: DecodeConfig and BenchConfig
    check it and say so in the same words as for a number out of range)."""
    try:
        return int(s)
    except ValueError:
        return s.strip().lower() if s.strip().lower() == "auto" else s


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F) if c not in (0x09, 0x0A)}


def _terminal(text: str) -> str:
    """Text for the terminal: control characters (escape sequences, carriage returns ...) shown as \\xNN, so a
    prompt or an output cannot move the cursor or recolour the terminal (--json output escapes them anyway)."""
    return text.translate(_CONTROL)


def _writable(path: str | None, option: str, force: bool = False, folder: bool = False, mkdir: bool = False,
              hint: bool | None = None) -> None:
    """Fail before any work when `path` cannot be written: its folder is missing, or it lies under assets/ (the
    shipped models, drafters, prompts and traces) and --force was not given (`hint`: whether the command has
    --force to suggest; default: the output folders of the training commands do)."""
    if not path:
        return
    import os
    from pathlib import Path

    from .paths import ASSETS

    p = Path(path).expanduser().resolve()
    parent = p if folder and p.is_dir() else p.parent
    if not folder and p.is_dir():
        raise ValueError(f"{option} {path}: is a folder; give a file name")
    if folder or mkdir:  # (a file where the folder, or a folder above it, would be made)
        above = [p, *p.parents] if folder else list(p.parents)
        clash = next((q for q in above if q.exists() and not q.is_dir()), None)
        if clash is not None:
            raise ValueError(f"{option} {path}: " + ("it is a file; give a folder" if clash == p else
                                                       f"{clash} is a file, not a folder"))
    if not parent.is_dir() and not (folder or mkdir):
        raise ValueError(f"{option} {path}: the folder {parent} does not exist")
    if parent.is_dir() and not os.access(parent, os.W_OK):
        raise ValueError(f"{option} {path}: the folder {parent} is not writable")
    if (p == ASSETS or ASSETS in p.parents) and not force:
        raise ValueError(f"{option} {path} would write into assets/ (the shipped files); write elsewhere "
                         f"(e.g. under runs/){' or add --force' if (folder if hint is None else hint) else ''}")


def _prompt_file(path: str, option: str = "--prompts") -> list[str]:
    """The prompts of a prompt file given by `option` (embedded/prompts.load_prompts; its errors name the flag)."""
    from .embedded.prompts import load_prompts

    return load_prompts(path, what=option)


def _add_threads(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", default=None, metavar="N",
                   help="torch CPU threads: 1 to this machine's cores, 0 = all of them (default: $SPOTVIZ_THREADS, "
                        "else 1: these models are small)")


def _add_block_size(p) -> None:
    p.add_argument("--block-size", type=int, default=None, metavar="N",
                   help="a published model's block (SDAR) or window (LLaDA, Dream) size instead of its config's "
                        "(default: the config's, else 32; an embedded model refuses it: it decodes at the block size "
                        "it was trained with)")


def _add_decode_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompt", required=True, help="text to continue")
    p.add_argument("--model", default=None, help="embedded model name, published model name or local folder "
                                                 "(default: math-bd)")
    p.add_argument("--mode", choices=["exact", "threshold"], default="exact",
                   help="exact: one position per pass; threshold: every position whose confidence reaches tau")
    p.add_argument("--threshold", type=float, default=0.9, help="tau for threshold mode")
    p.add_argument("--temperature", type=float, default=0.0, help="0: argmax; > 0: Gumbel-max sampling")
    p.add_argument("--seed", type=int, default=0, help="seed of the step-indexed Gumbel noise")
    p.add_argument("--gen-length", type=int, default=128, help="tokens to generate")
    p.add_argument("--drafter", default="none", help="none (the standard decoder), spot, spot-sets, "
                                                     "training-free, calibrated, or one a --plugin registers")
    p.add_argument("--drafter-dir", default=None, metavar="DIR",
                   help="drafters trained by train-drafter (its --out) for this model (default: the model's shipped "
                        "ones, else shakespeare-bd's, which transfer)")
    p.add_argument("--budget", type=_budget, default="auto",
                   help="states each pass verifies (the tree may hold more: states an earlier pass computed cost "
                        "none): a number, or auto (per pass, from the measured cost curve and the drafter's "
                        "probabilities)")
    p.add_argument("--min-path-prob", type=float, default=0.0,
                   help="prune draft nodes less likely than this to be accepted (0: always fill the budget)")
    p.add_argument("--no-coupled-noise", action="store_true", help="ablation: drafter does not share the noise")
    p.add_argument("--no-cross-window", action="store_true",
                   help="ablation: draft trees stop at the end of their window (exact mode; threshold trees always do)")
    p.add_argument("--device", default="auto", help="auto (cuda when available, else cpu), cpu, cuda, cuda:N or mps")
    _add_block_size(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--trace-out", default=None, help="write the trace (JSON) to this file")
    _add_plugin(p)
    _add_threads(p)


FLAGS = {"gen_length": "--gen-length", "min_path_prob": "--min-path-prob", "temperature": "--temperature",
         "seed": "--seed", "budget": "--budget", "threshold": "--threshold",
         "drafter_dir": "--drafter-dir"}  # DecodeConfig's fields as flags


def _import_plugins(a) -> None:
    """--plugin FILE (repeatable): Python files that register drafters of one's own, run before any name is checked."""
    from .drafter.registry import import_drafters
    from .errors import DecodeError

    for path in a.plugin or []:
        try:
            import_drafters(path)
        except DecodeError as e:
            raise ValueError(f"--plugin {e}") from None


def _add_plugin(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plugin", action="append", metavar="FILE.py",
                   help="a Python file that registers drafters of your own (spotviz.drafter.registry."
                        "register_proposer; docs/INSTALL.md), named then like the built-in ones; repeatable")


def cmd_decode(a) -> int:
    from .drafter.registry import PROPOSERS
    from .engine import decode
    from .registry import load_target
    from .samplers.config import AUTO, DecodeConfig, DecodeError

    _import_plugins(a)
    drafters = ("none", *PROPOSERS)
    if a.drafter not in drafters:
        raise ValueError(f"--drafter: unknown drafter {a.drafter!r}; choose one of {', '.join(drafters)} (a drafter "
                         f"of your own: --plugin FILE.py registers it)")
    if not a.prompt.strip():
        raise ValueError("--prompt is empty: give some text to continue")
    _writable(a.trace_out, "--trace-out", mkdir=True)  # (Trace.save makes its folder)
    try:
        cfg = DecodeConfig(mode=a.mode, threshold=a.threshold, temperature=a.temperature, seed=a.seed,
                           gen_length=a.gen_length, drafter=a.drafter, budget=a.budget,
                           coupled_noise=not a.no_coupled_noise, cross_window=not a.no_cross_window,
                           min_path_prob=a.min_path_prob, drafter_dir=a.drafter_dir)
        for note in ignored_settings(cfg):  # (valid settings this run does not read: said, not silently dropped)
            print(f"note: {note}", file=sys.stderr)
        target = load_target(a.model, device=a.device, block_size=a.block_size)
        asked, cfg = cfg.gen_length, _fit_gen_length(target, a.prompt, cfg)
        with warnings.catch_warnings():  # (the command says it below, in its own words, once)
            warnings.simplefilter("ignore", IdentityWarning)
            warnings.simplefilter("ignore", PromptTruncatedWarning)
            trace = decode(target, a.prompt, cfg)
    except DecodeError as e:
        raise worded_with_flags(e, FLAGS) from None
    if a.trace_out:
        trace.save(a.trace_out)
    c = trace.counters
    if a.json:
        print(json.dumps({
            "text": trace.text, "tokens": trace.tokens, "target_passes": c.target_passes, "commits": c.commits,
            "generated_tokens": c.generated_tokens, "wall_s": c.wall_s, "tokens_per_s": c.tokens_per_s,
            "accepted_lengths": [len(p.commits) for p in trace.passes], "drafter": cfg.drafter,
            "walk_ends": trace.walk_ends(), "mean_accepted_length": c.mean_accepted_length, "model": trace.meta.model,
            "prompt_truncated": trace.meta.prompt_truncated, "identity_guaranteed": trace.meta.identity_guaranteed,
            "drafters": trace.meta.drafters or None, "reached_gen_length": c.generated_tokens >= cfg.gen_length,
            "gen_length": cfg.gen_length, "gen_length_asked": asked,
        }, ensure_ascii=False))
    else:
        if trace.meta.prompt_truncated and asked == cfg.gen_length:  # (else the lowering's note said it)
            print(f"note: the prompt was longer than the context allows with --gen-length {cfg.gen_length} (the "
                  f"model's context is {target.info.max_length} tokens): its beginning was dropped; the model saw its "
                  f"last {len(trace.meta.prompt_tokens)} tokens (shown after the …)", file=sys.stderr)
        if not trace.meta.identity_guaranteed:
            print(f"warning: {target.info.extra.get('invariance', 'identity not guaranteed: batch invariance was not checked')}; "
                  f"speculative output may differ from the standard decoder's", file=sys.stderr)
        used = trace.meta.drafters
        if used:
            from .drafter.store import uses_fallback

            hint = ("; train your own: train-drafter --out DIR, then --drafter-dir DIR"
                    if uses_fallback(target.info.name, cfg.drafter_dir) else "")
            print(f"note: drafting with {used}{hint}", file=sys.stderr)
        shown = ("…" + target.decode(list(trace.meta.prompt_tokens)) if trace.meta.prompt_truncated
                 else target.format_prompt(trace.meta.prompt))  # (what the model saw)
        print(_terminal(shown + trace.text))
        if c.generated_tokens >= cfg.gen_length:
            print(f"note: stopped at --gen-length {cfg.gen_length}, before the end of the text", file=sys.stderr)
        drafted = sum(len(p.tree) > 1 for p in trace.passes)
        if cfg.drafter != "none" and cfg.budget == AUTO and c.target_passes >= 10 and drafted < 0.1 * c.target_passes:
            rest = "the other passes were standard ones" if drafted else "every pass was a standard one"
            print(f"note: --budget auto drafted on {f'only {drafted}' if drafted else 'none'} of the "
                  f"{c.target_passes} passes: on this machine a pass over several states costs more than the commits "
                  f"a tree would add were worth here, so {rest} (a fixed --budget, e.g. --budget 8, drafts every pass "
                  "and shows the passes it saves; `python -m spotviz cost-curve` prints what a pass costs here)",
                  file=sys.stderr)
        tokens = f"{c.generated_tokens} token{'' if c.generated_tokens == 1 else 's'} of text"
        marks = (", counting the end-of-text marks that fill the last block" if c.commits > c.generated_tokens
                 else "")  # (a run stopped by the length has none)
        print(f"\n[{trace.meta.model} | {cfg.mode} | drafter {cfg.drafter} | {tokens} | "
              f"{c.commits} positions committed in {c.target_passes} target passes ({c.mean_accepted_length:.2f} per "
              f"pass{marks}) | {c.tokens_per_s:.1f} tokens/s]", file=sys.stderr)
    return 0


def _fit_gen_length(target, prompt: str, cfg):
    """cfg with --gen-length lowered to the longest generation the model's context leaves after the prompt (as the
    app's slider offers), so that a long generation does not silently cut the prompt's beginning; a note says so
    (a prompt too long for even samplers/config.MIN_ROOM tokens of answer loses its beginning, and that note too)."""
    from dataclasses import replace

    from .samplers.config import check_prompt, longest_generation

    check_prompt(prompt)
    most = longest_generation(target, prompt, cfg.gen_length)
    if most >= cfg.gen_length:
        return cfg
    n_prompt, ctx = len(target.encode(prompt)), target.info.max_length
    why = (f"the most {target.info.name}'s context of {ctx} tokens leaves after this prompt ({n_prompt} tokens)"
           if ctx - n_prompt >= most else f"this prompt ({n_prompt} tokens) leaves no room in {target.info.name}'s "
           f"context of {ctx} tokens, so it loses its beginning to leave {most} tokens for the answer")
    print(f"note: --gen-length {cfg.gen_length} lowered to {most}: {why}", file=sys.stderr)
    return replace(cfg, gen_length=most)


def ignored_settings(cfg) -> list[str]:
    """What a decode's (valid) settings ask for that the run will not do (notes for stderr): a budget or a tree's
    settings given to the standard decoder, a budget of 1 (which drafts nothing), a drafter folder to the drafter
    that reads none, tau in exact mode, --no-cross-window in threshold mode."""
    from .samplers.config import AUTO, DecodeConfig

    notes = []
    if cfg.drafter == "none" and cfg.budget != AUTO:
        notes.append(f"--budget {cfg.budget} has no effect with --drafter none: the standard decoder checks one state "
                     "a pass (choose a drafter to draft trees)")
    elif cfg.drafter != "none" and cfg.budget == 1:
        notes.append("--budget 1 checks the root state alone: nothing is drafted, so the run makes the standard "
                     "decoder's passes")
    if cfg.drafter == "none":
        tree_flags = [flag for flag, given in (
            (f"--drafter-dir {cfg.drafter_dir}", bool(cfg.drafter_dir)), ("--no-coupled-noise", not cfg.coupled_noise),
            ("--no-cross-window", not cfg.cross_window),
            (f"--min-path-prob {cfg.min_path_prob:g}", cfg.min_path_prob > 0)) if given]
        if tree_flags:
            notes.append(f"{', '.join(tree_flags)} {'has' if len(tree_flags) == 1 else 'have'} no effect with "
                         "--drafter none: they shape draft trees (choose a drafter)")
    elif cfg.drafter_dir and cfg.drafter == "training-free":
        notes.append(f"--drafter-dir {cfg.drafter_dir} has no effect with --drafter training-free: it reads no files")
    if cfg.mode == "exact" and cfg.threshold != DecodeConfig.threshold:
        notes.append(f"--threshold {cfg.threshold:g} is read in threshold mode only (--mode threshold)")
    if cfg.temperature == 0 and not cfg.coupled_noise and cfg.drafter != "none":
        notes.append("--no-coupled-noise has no effect at --temperature 0: greedy decoding draws no noise")
    if cfg.mode == "threshold" and not cfg.cross_window and cfg.drafter != "none":
        notes.append("--no-cross-window has no effect in threshold mode: its trees always stop at their window's end")
    return notes


def cmd_trace(a) -> int:
    """Load and validate a trace file (size limit, JSON, schema version, counters) and print a summary."""
    from .trace import Trace

    from pathlib import Path

    from .trace import TraceError

    _writable(a.html, "--html", mkdir=True)
    if Path(a.file).is_dir():
        raise ValueError(f"{a.file} is a folder: give a trace file (decode --trace-out, or the app's download)")
    try:
        trace = Trace.load(a.file)
    except TraceError as e:
        raise TraceError(f"{a.file}: {e}") from None
    m, c = trace.meta, trace.counters
    if a.baseline and not a.html:
        raise ValueError("--baseline is used only with --html")
    if a.html:
        from .views.report import report_html

        try:
            baseline = Trace.load(a.baseline) if a.baseline else None
        except TraceError as e:
            raise TraceError(f"--baseline {a.baseline}: {e}") from None
        if baseline is not None:
            from .views import same_run

            if m.drafter == "none":
                raise ValueError(f"{a.file} is itself a standard-decoder run: --baseline compares a drafter's run "
                                 "with the standard decoder's (give the drafter's trace first)")
            if baseline.meta.drafter != "none":
                raise ValueError(f"--baseline {a.baseline} is a run of the {_terminal(baseline.meta.drafter)} drafter: "
                                 "give the standard decoder's trace of the same run (decode --drafter none "
                                 "--trace-out ...)")
            if not same_run(trace, baseline):
                raise ValueError(f"--baseline {a.baseline} decoded another run than {a.file} (model, prompt, seed, "
                                 "block size, mode, temperature, generation length and, in threshold mode, tau must "
                                 "match): nothing to compare")
        Path(a.html).parent.mkdir(parents=True, exist_ok=True)
        Path(a.html).write_text(report_html(trace, baseline), encoding="utf-8")
        print(f"wrote {a.html}", file=sys.stderr)
    if a.json:
        print(json.dumps({"model": m.model, "drafter": m.drafter, "mode": m.mode, "seed": m.seed,
                          "prompt": m.prompt, "text": trace.text, "tokens": trace.tokens,
                          "target_passes": c.target_passes, "commits": c.commits,
                          "accepted_lengths": [len(p.commits) for p in trace.passes],
                          "walk_ends": trace.walk_ends(), "drafters": m.drafters or None,
                          "identity_guaranteed": m.identity_guaranteed, "version": trace.version}, ensure_ascii=False))
    else:
        ends = trace.walk_ends()
        print(f"{a.file}: spotviz trace v{trace.version} | {m.model} | {m.mode} | drafter {m.drafter} | seed {m.seed} | "
              f"{c.generated_tokens} tokens | {c.target_passes} target passes | {c.commits} commits"
              + (" | walks stopped: " + ", ".join(f"{k} {n}" for k, n in ends.items()) if ends else "")
              + ("" if m.identity_guaranteed else " | identity not guaranteed on this device/dtype"))
        if ends:  # (what the counts mean: a line each, as the bench's table explains them)
            from .trace import WALK_ENDS

            print("where the tree passes' acceptance walks stopped:\n" + "\n".join(
                f"  {k} ({n} pass{'es' * (n != 1)}): {WALK_ENDS[k]}" for k, n in ends.items() if k in WALK_ENDS))
    return 0


def cmd_train_target(a) -> int:
    from .training.target import TrainTargetConfig, check_config, train_target

    cfg = TrainTargetConfig(out=a.out, attention=a.attention, hidden_size=a.hidden_size,
                            num_hidden_layers=a.layers, num_attention_heads=a.heads,
                            intermediate_size=a.intermediate_size, seq_len=a.seq_len, batch_size=a.batch_size,
                            lr=a.lr, max_steps=a.max_steps, minutes=a.minutes, threads=a.threads, seed=a.seed,
                            vocab_size=a.vocab_size, corpus_fraction=a.corpus_fraction, corpus=a.corpus,
                            init_from=a.init_from or "", amp=a.amp, block_size=a.block_size,
                            context=a.context, problems=a.problems, drills=a.drills,
                            result_weight=a.result_weight, result_focus=a.result_focus,
                            batch_tokens=a.batch_tokens, small_numbers=a.small_numbers,
                            reword=a.reword, stories=a.stories, device=a.device, data_workers=a.data_workers,
                            eval_every=a.eval_every, checkpoint_every=a.checkpoint_every)
    if not cfg.max_steps and not cfg.minutes and not a.prepare_only:
        raise ValueError("give --max-steps N or --minutes M (training stops at the first reached; 0 = no limit)")
    _writable(a.out, "--out", force=a.force, folder=True)
    if a.prepare_only:
        from pathlib import Path

        from .training.target_data import prepare_data

        check_config(cfg)
        Path(a.out).mkdir(parents=True, exist_ok=True)
        _, train, _ = prepare_data(cfg, Path(a.out))
        print(f"corpus ready in {a.out}: {len(train[0] if isinstance(train, tuple) else train)} training "
              f"{'problems' if isinstance(train, tuple) else 'tokens'}; the same command without --prepare-only, "
              f"with --max-steps N or --minutes M, trains on it")
        return 0
    res = train_target(cfg)
    if not a.skip_eval:
        from .registry import load_embedded
        from .eval.stats import stale_agreement

        target = load_embedded(f"{a.out}/final")
        gen = min(64, target.info.max_length // 2)  # (a short context leaves half for the prompt)
        st = stale_agreement(target, n_prompts=a.eval_prompts, gen_length=gen)
        print(f"previous-pass prediction == committed token: {100 * st['stale_agreement']:.1f}% "
              f"(exact decoding, T=0, {gen} tokens per prompt, {st['decisions']} decisions)")
    print(json.dumps({k: v for k, v in res.items() if k != "config"}))
    return 0


def cmd_train_drafter(a) -> int:
    from .training.drafter import DrafterTrainConfig, train_drafter
    from .paths import ASSETS

    if not a.out:
        raise ValueError(f"--out is required: the folder to write the drafters to (e.g. --out runs/drafters/{a.model}); "
                         f"to replace the shipped ones give --out {ASSETS.name}/drafters/{a.model} --force")
    _writable(a.out, "--out", force=a.force, folder=True)
    out = a.out
    if a.n_prompts < 2:
        raise ValueError(f"--n-prompts must be at least 2 (training prompts), got {a.n_prompts}")
    if a.epochs < 1 and not a.calibrate:
        raise ValueError(f"--epochs must be at least 1, got {a.epochs}")
    if a.prompts_file:  # read before the model loads: a bad file fails at once
        n_file = len(_prompt_file(a.prompts_file))
        if n_file < 2:
            raise ValueError(f"--prompts {a.prompts_file}: holds fewer than 2 prompts")
        for flag, attr in (("--n-prompts", "n_prompts"), ("--threshold-prompts", "threshold_prompts")):
            if getattr(a, attr) > n_file:
                print(f"note: {flag} {getattr(a, attr)}: the file holds {n_file} prompts; training on {n_file}",
                      file=sys.stderr)
                setattr(a, attr, n_file)
        left = n_file - max(a.n_prompts, a.threshold_prompts)  # (validation prompts follow the training ones)
        if a.mix_prompts > left:
            print(f"note: --mix-prompts {a.mix_prompts}: the file has "
                  + (f"{left} prompt{'s' * (left != 1)} after the training ones, which choose the pointer mixture"
                     if left else "no prompt after the training ones: the pointer mixture is chosen by validation "
                                  "accuracy instead"), file=sys.stderr)
            a.mix_prompts = left
    # (the other settings are checked as the config is made: DrafterTrainConfig.__post_init__)
    cfg = DrafterTrainConfig(model=a.model, out=out, n_prompts=a.n_prompts, gen_length=a.gen_length,
                             threshold=a.threshold, epochs=a.epochs, topk=a.topk,
                             threshold_prompts=a.threshold_prompts, jobs=a.jobs,
                             save_trajectories=a.save_trajectories, trajectories=a.trajectories,
                             mix_prompts=a.mix_prompts, mix_budget=a.mix_budget, prompts_file=a.prompts_file)
    src = None
    if a.calibrate:
        from pathlib import Path

        src = Path(a.calibrate).expanduser()
        if not src.is_dir():
            raise ValueError(f"--calibrate {a.calibrate}: no such folder (give a drafter folder, e.g. "
                             "assets/drafters/shakespeare-bd)")
        for sub in ("spot", "spot-sets"):  # (checked before the output folder is made)
            if not all((src / sub / f).is_file() for f in ("drafter.json", "drafter.safetensors")):
                raise ValueError(f"--calibrate {a.calibrate}: no drafter in {src / sub} (needs drafter.json and "
                                 "drafter.safetensors: give a folder train-drafter --out wrote)")
    report = train_drafter(cfg, calibrate_from=str(src) if src else None)
    print(json.dumps(report, indent=1))
    from .registry import DEFAULT_MODEL

    print(f"use them: python -m spotviz decode --model {cfg.model or DEFAULT_MODEL} --drafter spot --drafter-dir {out} "
          f"--prompt ...", file=sys.stderr)
    return 0


def cmd_bench(a) -> int:
    from dataclasses import asdict

    from .eval.bench import BenchConfig, BenchInterrupted, run_bench, save, to_markdown

    def budget_list(s):  # budgets separated by commas: whole numbers and "auto" (BenchConfig checks them); a
        return tuple(dict.fromkeys(_budget(x.strip()) for x in s.split(",") if x.strip()))  # repeat runs once

    def temperature_list(s):  # (BenchConfig checks the range)
        try:
            return tuple(dict.fromkeys(float(x) for x in s.split(",") if x.strip()))
        except ValueError:
            raise ValueError(f"--temperatures: give numbers separated by commas, got {s}") from None

    _import_plugins(a)
    budgets, temperatures = budget_list(a.budgets), temperature_list(a.temperatures)
    other = budget_list(a.other_budgets) if a.other_budgets else None
    if a.prompts:  # read before the model loads: a bad file fails at once
        from pathlib import Path

        if a.prompts.strip().isdigit() and not Path(a.prompts).exists():
            raise ValueError(f"--prompts {a.prompts}: no such file (--prompts takes a prompt file; --n-prompts "
                             "sets how many prompts)")
        _prompt_file(a.prompts)
    cfg = BenchConfig(a.model, a.prompts, a.n_prompts, a.gen_length, budgets, temperatures, a.threshold,
                      transfer=not a.no_transfer, other_budgets=other, prune=a.prune,
                      modes=tuple(dict.fromkeys(m.strip() for m in a.modes.split(",") if m.strip())),
                      drafters=tuple(dict.fromkeys(d.strip() for d in a.drafters.split(",") if d.strip())),
                      simulate_curve=a.simulate_curve, drafter_dir=a.drafter_dir, block_size=a.block_size,
                      plugins=tuple(a.plugin or ()))
    _writable(a.out, "--out", folder=True, hint=False)
    try:
        res = run_bench(cfg, log=lambda *x: print(*x, file=sys.stderr if a.json else sys.stdout, flush=True))
    except BenchInterrupted as stop:  # (Ctrl-C: the rows finished so far are kept, marked as such)
        if not stop.result.rows:
            raise KeyboardInterrupt("no bench row had finished; nothing written") from None
        written = save(stop.result, a.out)
        raise KeyboardInterrupt(f"the {len(stop.result.rows)} row(s) finished by then are in {written} and its "
                                ".json") from None
    written = save(res, a.out)
    print(json.dumps(asdict(res)) if a.json else to_markdown(res))
    print(f"wrote {written} and its .json", file=sys.stderr)
    return 0


def cmd_accuracy(a) -> int:
    """Answer accuracy of a word-problem model on generated held-out problems (per split and per family)."""
    from .eval.answers import answer_accuracy, heldout_problems, to_markdown
    from .registry import load_target

    if a.per_family < 1:
        raise ValueError(f"--per-family must be at least 1, got {a.per_family}")
    from .errors import worded_with_flags
    from .samplers.config import DecodeConfig, DecodeError

    try:  # (checked before the model loads and the run starts)
        DecodeConfig(gen_length=a.gen_length)
    except DecodeError as e:
        raise worded_with_flags(e, FLAGS) from None
    _writable(a.out, "--out", mkdir=True)
    target = load_target(a.model)
    from .embedded.prompts import trained_corpus

    corpus = trained_corpus(target)
    if corpus not in (None, "math"):  # (a published model has no record: it may well answer word problems)
        raise ValueError(f"accuracy measures word-problem models; {a.model} was trained on the {corpus} corpus "
                         "(a model trained with train-target --corpus math, e.g. math-bd, or a published chat model)")
    res = answer_accuracy(target, heldout_problems(a.per_family, a.seed), a.gen_length,
                          log=lambda m: print(m, file=sys.stderr))
    if a.out:
        from pathlib import Path

        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k != "outputs"}) if a.json else to_markdown(res))
    return 0


def cmd_cost_curve(a) -> int:
    """(Re)measure the target's forward cost curve f(N) (cached per model, device and CPU kernels, dtype, threads)."""
    from .registry import load_target
    from .samplers.forward_cost import cacheable, cost_curve

    target = load_target(a.model, device=a.device, block_size=a.block_size)
    curve = cost_curve(target, remeasure=True)
    ratios = curve.ratios(tuple(curve.sizes))
    if a.json:
        print(json.dumps({"model": target.info.name, "device": curve.device, "threads": curve.threads,
                          "clock": curve.clock, "dtype": curve.dtype, "sizes": curve.sizes, "seconds": curve.seconds,
                          "ratios": [ratios[n] for n in curve.sizes], "fused_sizes": curve.fused_sizes,
                          "fused_seconds": curve.fused_seconds}))
    else:
        print(f"{target.info.name} on {curve.device} ({curve.dtype}, {curve.threads} thread(s), {curve.clock} time): "
              f"one target pass over N states")
        print("     N   f(N) ms   f(N)/f(1) = commits per pass a SPOT pass over N states needs to break even")
        for n, t in zip(curve.sizes, curve.seconds):
            print(f"  {n:4d}  {1000 * t:8.2f}  {ratios[n]:6.2f}")
        if curve.fused_sizes:
            print("fused pass (this window and the next), f/f(1): " + "  ".join(
                f"N={n}: {t / curve.seconds[0]:.2f}" for n, t in zip(curve.fused_sizes, curve.fused_seconds)))
        print("zero-overhead ceiling of a run, as this curve predicts it = its commits per pass r over f(N)/f(1), the "
              "two-window forwards that both decoders make once per window counted at their width (bench prints it "
              "per row in brackets, beside the ceiling priced with the forwards its runs timed)")
    if curve.cached:  # (otherwise the measurement said why, busy machine or unwritable folder: forward_cost.NOTICE)
        print(f"cached under {os.path.dirname(curve.cached)}", file=sys.stderr)
    elif not cacheable(target):
        print("not cached: a model folder's curve is measured in each process", file=sys.stderr)
    return 0


def _add_trace_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a trace written by decode --trace-out or downloaded from the app")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--html", default=None, metavar="OUT.html",
                   help="write a standalone page: counters, token canvas and the animated commit order, draft trees "
                         "and speed-up (plotly.js embedded: opens offline)")
    p.add_argument("--baseline", default=None, metavar="STANDARD_TRACE",
                   help="with --html: the standard run's trace of the same prompt and seed, for the speed-up and the "
                         "identity check")


def _add_cost_curve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="embedded model name, published model name or folder "
                   "(default: math-bd)")
    p.add_argument("--device", default="auto", help="auto (cuda when available, else cpu), cpu, cuda, cuda:N or mps")
    _add_block_size(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_threads(p)


def _add_train_target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder for the run: OUT/checkpoint (resumed when present) and OUT/final (the model)")
    p.add_argument("--force", action="store_true", help="allow --out inside assets/ (the shipped models)")
    p.add_argument("--corpus", choices=["shakespeare", "python", "math"], default="shakespeare",
                   help="training text: Shakespeare's plays, the Python standard library, or generated math word problems")
    p.add_argument("--init-from", default=None, help="continue from an exported model folder (keeps its tokenizer)")
    p.add_argument("--block-size", type=int, default=16, help="block size of block-diffusion models")
    p.add_argument("--amp", choices=["auto", "bf16", "fp32"], default="auto",
                   help="bf16 autocast for training matmuls; auto: only on CPUs with native bf16")
    p.add_argument("--attention", choices=["block", "full"], default="block")
    p.add_argument("--hidden-size", type=int, default=256)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--intermediate-size", type=int, default=704)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--context", type=int, default=0,
                   help="the model's context (max positions); 0: the training length --seq-len")
    p.add_argument("--problems", type=int, default=300_000, help="math corpus: generated training problems")
    p.add_argument("--drills", type=float, default=0.0,
                   help="math corpus: share of the training problems that are bare arithmetic drills ('What is 48 + 25?')")
    p.add_argument("--result-weight", type=float, default=1.0,
                   help="math corpus: loss weight of the digits of each computed result (a op b = c); others weigh 1")
    p.add_argument("--batch-tokens", type=int, default=0,
                   help="math corpus: a batch of short rows holds max(--batch-size, N // row length) rows (0: off)")
    p.add_argument("--result-focus", type=float, default=0.0,
                   help="math corpus: share of rows noised as decoding meets a result (one result masked, all else given)")
    p.add_argument("--small-numbers", type=float, default=0.0,
                   help="math corpus: share of training problems with all numbers drawn small ('8 + 5', not '48 + 25')")
    p.add_argument("--reword", type=float, default=0.0,
                   help="math corpus: share of training questions reworded by synonym swaps that keep the problem "
                        "(embedded/reword.py)")
    p.add_argument("--stories", type=float, default=0.0, metavar="SHARE",
                   help="math corpus: share of the training word problems drawn from compositional stories, chains "
                        "of known steps that never make a held-out family's combination (embedded/stories.py)")
    p.add_argument("--device", default="auto",
                   help="where the training steps run: auto (cuda when available, else cpu), cpu, cuda, cuda:N or mps")
    p.add_argument("--data-workers", type=int, default=0,
                   help="math corpus: draw and tokenize the training problems in chunks over N processes "
                        "(the same corpus for any N > 0; 0: one sequential draw)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--vocab-size", type=int, default=1024)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no step limit)")
    p.add_argument("--minutes", type=float, default=0.0,
                   help="time budget; the learning-rate schedule follows it (0: no time limit; give one of the two)")
    p.add_argument("--eval-every", type=int, default=200, help="steps between validation lines")
    p.add_argument("--checkpoint-every", type=int, default=100,
                   help="steps between checkpoints (OUT/checkpoint; raise it where a step takes milliseconds)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus-fraction", type=float, default=1.0)
    p.add_argument("--eval-prompts", type=int, default=20,
                   help="held-out prompts for the previous-pass agreement measured after training")
    p.add_argument("--skip-eval", action="store_true", help="skip that measurement")
    p.add_argument("--prepare-only", action="store_true",
                   help="draw and tokenize the corpus into OUT, then stop (e.g. on a CPU before a GPU run)")
    _add_threads(p)


def _add_train_drafter_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="the target whose decoding the drafters learn (default: math-bd)")
    p.add_argument("--out", default=None, metavar="DIR", help="output folder (required; e.g. runs/drafters/MODEL)")
    p.add_argument("--force", action="store_true",
                   help="allow --out to overwrite the shipped drafters in assets/drafters/MODEL")
    p.add_argument("--prompts", default=None, metavar="FILE", dest="prompts_file",
                   help="your own prompts (a JSON list of strings, or paragraphs separated by blank lines): the first "
                        "--n-prompts train, the next --mix-prompts choose the pointer's mixture (default: prompts drawn "
                        "from the model's corpus)")
    p.add_argument("--n-prompts", dest="n_prompts", type=int, default=120, metavar="N",
                   help="number of training prompts")
    p.add_argument("--threshold-prompts", type=int, default=0, metavar="N",
                   help="training prompts of the SPOT-Sets drafter (threshold decoding, several commits per pass: "
                        "fewer passes per prompt, cheaper to collect); 0: as --n-prompts")
    p.add_argument("--gen-length", type=int, default=128)
    p.add_argument("--threshold", type=float, default=0.9)
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--topk", type=int, default=8,
                   help="how many of the root's top probabilities per position the drafter reads (2-64; the paper's "
                        "drafter reads 32)")
    p.add_argument("--calibrate", default=None, metavar="DRAFTER_DIR",
                   help="light calibration: refit the scalar heads of an existing drafter on this target")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="collect the trajectories in N worker processes side by side, one torch thread each (the "
                        "same data as one process; training then runs on --threads)")
    p.add_argument("--save-trajectories", action="store_true",
                   help="also write the collected trajectories to OUT/trajectories.safetensors (to train other "
                        "drafters on them without collecting again)")
    p.add_argument("--trajectories", default=None, metavar="FILE",
                   help="train on trajectories saved by --save-trajectories instead of collecting (the model, "
                        "length, tau, temperatures and top-k must match)")
    p.add_argument("--mix-prompts", type=int, default=40, metavar="N",
                   help="choose the SPOT drafter's mixture with the training-free order by its target passes on N "
                        "validation prompts (trees of --mix-budget nodes; 7 weights x temperatures x N decodes, "
                        "often the longest part of a run on a CPU); 0: by validation accuracy alone")
    p.add_argument("--mix-budget", type=int, default=32, metavar="NODES")
    _add_threads(p)


def _add_bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="embedded model name, published model name or folder "
                   "(default: math-bd)")
    p.add_argument("--prompts", default=None, metavar="FILE",
                   help="prompt file: a JSON list of strings (.json), or text with one prompt per blank-line-separated "
                        "paragraph; default: the model's held-out set in assets/prompts")
    p.add_argument("--n-prompts", type=int, default=20, help="how many of those prompts to use (the first N)")
    p.add_argument("--gen-length", type=int, default=128)
    p.add_argument("--budgets", default="auto,2,4,8,16,32",
                   help="budgets swept in the first mode at the first temperature (numbers and auto)")
    p.add_argument("--other-budgets", default=None, help="budgets for the other mode/temperature pairs "
                                                          "(default: --budgets)")
    p.add_argument("--temperatures", default="0,1", help="decoding temperatures, separated by commas")
    p.add_argument("--threshold", type=float, default=0.9)
    p.add_argument("--modes", default="exact,threshold",
                   help="decoding modes benchmarked, separated by commas (exact, threshold)")
    p.add_argument("--drafters", default="spot,training-free,calibrated",  # (eval/bench.BENCH_DRAFTERS)
                   help="drafters benchmarked, separated by commas (spot, training-free, calibrated, and those a "
                        "--plugin registers)")
    _add_plugin(p)
    _add_block_size(p)
    p.add_argument("--drafter-dir", default=None, metavar="DIR",
                   help="drafters trained by train-drafter (its --out) for this model (default: the model's shipped "
                        "ones, else shakespeare-bd's, which transfer)")
    p.add_argument("--simulate-curve", default=None, metavar="FILE",
                   help="charge every target forward at another device's measured cost curve (a cost-curve JSON, "
                        "or scripts/gpu_cost_curve.py's result such as docs/gpu-h200.json) on a virtual clock: the "
                        "wall-clock columns then model that device (drafter and bookkeeping at this CPU's cost)")
    p.add_argument("--no-transfer", action="store_true",
                   help="skip the rows that use the other embedded models' drafters on this model")
    p.add_argument("--prune", type=float, default=0.0,
                   help="also run SPOT with draft nodes below this path probability pruned, at the budgets above 2 "
                        "(0: off)")
    p.add_argument("--out", default="runs/bench", help="folder for bench-<model>.json and .md")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    _add_threads(p)


def _add_accuracy_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="a word-problem model (default: math-bd)")
    p.add_argument("--per-family", type=int, default=4, help="problems per family in each held-out split")
    p.add_argument("--seed", type=int, default=1, help="seed of the generated held-out problems")
    p.add_argument("--gen-length", type=int, default=128)
    p.add_argument("--out", default=None, help="write every output and the summary (JSON) to this file")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    _add_threads(p)


# every command: its one-line help, the function that adds its options, the function that runs it
COMMANDS = {
    "decode": ("decode a prompt (standard or speculative)", _add_decode_args, cmd_decode),
    "trace": ("check a trace file (as the app's Replay does), summarise it, or render it as a page of animated "
              "Plotly figures", _add_trace_args, cmd_trace),
    "cost-curve": ("measure the target's forward cost f(N) for N states (used by --budget auto)",
                   _add_cost_curve_args, cmd_cost_curve),
    "train-target": ("train an embedded masked-diffusion model (word problems, Shakespeare or Python code)",
                     _add_train_target_args, cmd_train_target),
    "train-drafter": ("train the SPOT / SPOT-Sets drafters (or --calibrate one for a new target)",
                      _add_train_drafter_args, cmd_train_drafter),
    "bench": ("benchmark every decoder on the held-out prompts", _add_bench_args, cmd_bench),
    "accuracy": ("answer accuracy of a word-problem model (math-bd) on held-out problems (held-out problems, the same "
                 "reworded, held-out phrasings, held-out families)", _add_accuracy_args, cmd_accuracy),
}


def main(argv=None) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS (the drafter): before numpy is imported
    ap = _Parser(prog="python -m spotviz", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="command")
    for name, (about, add_args, _) in COMMANDS.items():
        add_args(sub.add_parser(name, help=about))

    a, unknown = ap.parse_known_args(argv)
    if unknown:  # (blamed on the command, not on spotviz)
        sub.choices[a.cmd].error(f"unrecognized arguments: {' '.join(unknown)}")
    from .registry import DEFAULT_MODEL

    if hasattr(a, "model") and a.model is None:
        a.model = DEFAULT_MODEL
    if hasattr(a, "model") and not a.model.strip():
        print("error: --model is empty: give a model name or folder (default: math-bd when --model is left out)",
              file=sys.stderr)
        return 2

    def command() -> int:
        if a.cmd != "trace":  # one thread policy for every command (spotviz/threads.py), before anything loads
            from .threads import set_threads

            a.threads = set_threads(a.threads, "--threads")
            from .samplers import forward_cost

            forward_cost.NOTICE = lambda message: print(message, file=sys.stderr, flush=True)
        return COMMANDS[a.cmd][2](a)

    return reporting_errors(command)


INTERRUPTED = 130  # the status after Ctrl-C (128 + SIGINT, as a shell reports a process that SIGINT ended)


def exit_with(status: int):
    """End the process with `status` (a command's, from main or reporting_errors); after Ctrl-C (INTERRUPTED) by
    SIGINT itself, as Python ends on an interrupt it does not catch, so that a shell loop around the command stops
    too (bash goes on after a child that merely exited 130). The one-line message was printed already."""
    if status == INTERRUPTED and os.name == "posix":
        import signal

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    raise SystemExit(status)


def reporting_errors(command) -> int:
    """command() (an exit status) with the command line's one shape of error: bad input, a model that cannot be
    loaded, a bad trace or file, or running out of memory print one line `error: ...` and give status 2; Ctrl-C prints
    one line too (with what was kept, where a command keeps something) and gives 130 (SPOTVIZ_DEBUG=1: the whole
    traceback). scripts/gpu_cost_curve.py and scripts/profile_pass.py report theirs through it too."""
    from .registry import ModelLoadError
    from .samplers.config import DecodeError
    from .trace import TraceError

    try:
        return command()
    except (DecodeError, ModelLoadError, TraceError, ValueError, OSError) as e:
        if os.environ.get("SPOTVIZ_DEBUG"):  # (a ValueError may also be a bug: the whole traceback, for a report)
            raise
        print("error: " + " ".join(str(e).split()), file=sys.stderr)  # one line, even if e spans several
        return 2
    except KeyboardInterrupt as e:  # (Ctrl-C: one line, and what was kept, not a traceback; status 130 as a shell's)
        if os.environ.get("SPOTVIZ_DEBUG"):
            raise
        print("error: interrupted (Ctrl-C)" + (f": {e}" if str(e) else ""), file=sys.stderr, flush=True)
        return INTERRUPTED
    except (MemoryError, RuntimeError) as e:  # (torch.OutOfMemoryError is a RuntimeError)
        if not isinstance(e, MemoryError) and type(e).__name__ != "OutOfMemoryError" or os.environ.get("SPOTVIZ_DEBUG"):
            raise
        print(f"error: out of memory ({type(e).__name__}): a shorter --gen-length, a smaller --budget or "
              "--batch-tokens, or a smaller model needs less", file=sys.stderr)
        return 2

