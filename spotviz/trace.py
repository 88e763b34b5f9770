"""The trace: a versioned, JSON-serialisable record of one decode (DESIGN.md section 5).

It is the contract between the engine and the views: views are pure functions of a Trace, and a saved trace
replays in the app without a model. `Trace.from_json` validates the schema and the counters and raises
TraceError with a clear message on malformed input.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

TRACE_FORMAT = "spotviz-trace"
TRACE_VERSION = 1
MAX_TRACE_BYTES = 20 * 1024 * 1024
# Why a tree pass's acceptance walk stopped (PassRecord.walk_end; samplers/verify.walk_end), in plain words
WALK_ENDS = {
    "window": "it completed the window, and the tree held no guess past it",
    "budget": "the model's decision there was a guess the budget had no room for (or the budget ran out first)",
    "position": "the model committed a slot that no guess at that state named",
    "token": "the guesses named the right slot but another token (the model changed its mind there)",
    "end": "the text was complete (its end, or the length limit)",
}


class TraceError(ValueError):
    """A trace file that cannot be used, with the reason."""


@dataclass
class RunMeta:
    model: str
    tokenizer: str
    attention: str
    mode: str
    threshold: float  # the tau the run's rule held (an exact run: the default, whatever its config said)
    temperature: float
    seed: int
    drafter: str
    budget: int
    block_size: int
    gen_length: int
    prompt: str
    prompt_tokens: list[int]
    coupled_noise: bool = True
    cross_window: bool = True  # draft trees could go on past a window's end (where the target allows it)
    min_path_prob: float = 0.0
    device: str = "cpu"
    mask_id: int = -1
    spotviz_version: str = ""
    prompt_truncated: bool = False
    budget_auto: bool = False  # the tree size was chosen per pass from the cost curve (PassRecord.budget)
    cost_curve: list = field(default_factory=list)  # [[states, seconds per target pass]] used by the auto budget
    cost_curve_two_windows: list = field(default_factory=list)  # the same for a forward over two windows
    threads: int = 0  # torch CPU threads of the run (0: not recorded)
    # target forward calls made for this run outside `counters.target_passes`: measuring the cost curve (budget
    # auto, the first run of a model on a machine) and checking a batch shape the first time it is used
    # (targets/invariance.py check_pass)
    forward_calls_outside: int = 0
    # wall seconds of that one-time work (and of loading the drafter), kept out of the passes' and the run's
    # wall time: a first run in a process is timed like any other
    outside_s: float = 0.0
    # True only where proven: the target's probe found its float32 batched passes bit-identical to one-row passes
    # (targets/invariance.py); False: not proven (failed, low precision or unchecked), so speculative output is
    # not guaranteed to equal the standard decoder's
    identity_guaranteed: bool = True
    # whose trained drafters drafted (drafter/store.drafters_used: the model's shipped ones, another model's
    # transferred, or a folder's); "" for the standard decoder and training-free, and in traces written before it
    drafters: str = ""


@dataclass
class Commit:
    position: int
    token: int
    step: int  # decision index (the noise step)
    confidence: float = 0.0
    drafted: bool = False  # True: accepted from the draft tree; False: the pass's own (bonus) decision


@dataclass
class TreeNode:
    id: int  # 0 is the root of the tree (the state after the free first decision)
    parent: int  # -1 for the root
    depth: int
    positions: list[int]  # the drafted decision on the edge parent -> node (empty for the root)
    tokens: list[int]
    prob: float = 1.0  # drafter probability of this edge
    path_prob: float = 1.0  # chance the walk reaches the node (the product along its path; summed over merged paths)
    accepted: bool = False
    target_positions: list[int] = field(default_factory=list)  # the target's own decision at this node (if evaluated)
    target_tokens: list[int] = field(default_factory=list)
    merged_from: list[int] = field(default_factory=list)  # other parents whose drafted edge reaches the same state
    known: bool = False  # the edge is the target's own decision at the parent, known from an earlier pass's logits
    near: bool = False  # a likely edge: the target's decision at an evaluated state one or two commits above the parent
    found: bool = False  # no drafted edge: the walk followed the target's decision to this state, drafted on another branch
    reused: bool = False  # a known state: an earlier pass of the window evaluated it, so this pass's batch left it
    # out and its decision came from those logits (it cost no budget)


@dataclass
class PassRecord:
    index: int
    kind: str  # "decode" (standard), "verify" (SPOT tree pass)
    window: list[int]  # [lo, hi): the window this pass decided in (a fused pass's bonus lies in the next window)
    states: int  # batch size of the forward
    commits: list[Commit]
    tree: list[TreeNode] = field(default_factory=list)
    accepted_path: list[int] = field(default_factory=list)  # node ids from the root
    wall_s: float = 0.0
    budget: int = 0  # states the pass may evaluate (the fixed budget, or auto's largest); `states`: the number it
                     # evaluated (chosen by auto, or fewer than allowed; the tree may hold more nodes: its known
                     # states, `reused`, are not evaluated); 0: standard pass
    two_windows: bool = False  # its forward evaluated two windows: the next one too (a SPOT node completed this
                               # window: the fused pass), or the finished one before it (a standard decoder's first
                               # pass in a window: the finished window's keys and values enter the cache then)
    walk_end: str = ""  # a tree pass: why its acceptance walk stopped (a key of WALK_ENDS); "": no tree
    forward_s: float = 0.0  # wall time of its target forward (0: not recorded, a trace of an earlier version):
                            # what cost_model.observed_ceiling prices the run's passes with


@dataclass
class Counters:
    target_passes: int = 0
    commits: int = 0
    generated_tokens: int = 0
    drafted_nodes: int = 0
    accepted_drafts: int = 0  # slots committed by accepted drafted decisions (vLLM: num_accepted_tokens)
    mean_accepted_length: float = 0.0  # commits per pass
    acceptance_per_depth: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    tokens_per_s: float = 0.0


@dataclass
class Trace:
    meta: RunMeta
    passes: list[PassRecord]
    tokens: list[int]  # generated token ids (up to the end of text)
    text: str
    counters: Counters
    token_text: dict[str, str] = field(default_factory=dict)  # id -> display string for every id in the trace
    format: str = TRACE_FORMAT
    version: int = TRACE_VERSION

    # ------------------------------------------------------------------ json
    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def save(self, path: str | Path) -> None:
        """Write the trace as JSON (its folder made if missing); Trace.load reads it back, checked."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_dict(cls, d) -> "Trace":
        if not isinstance(d, dict):
            raise TraceError("a trace must be a JSON object")
        if d.get("format") != TRACE_FORMAT:
            raise TraceError("not a spotviz trace (" + ("no \"format\" field" if d.get("format") is None else
                                                          f"its format is {d.get('format')!r}")
                             + f", expected {TRACE_FORMAT!r})")
        if d.get("version") != TRACE_VERSION:
            raise TraceError(f"unsupported trace version {d.get('version')!r} (this spotviz reads {TRACE_VERSION})")
        try:
            meta = _build(RunMeta, d["meta"], "meta")
            passes = []
            for i, p in enumerate(_as_list(d["passes"], "passes")):
                p = dict(_as_dict(p, f"passes[{i}]"))
                p["commits"] = [_build(Commit, c, f"passes[{i}].commits") for c in _as_list(p.get("commits"), "commits")]
                p["tree"] = [_build(TreeNode, n, f"passes[{i}].tree") for n in _as_list(p.get("tree", []), "tree")]
                passes.append(_build(PassRecord, p, f"passes[{i}]"))
            trace = cls(meta=meta, passes=passes, tokens=[int(t) for t in _as_list(d["tokens"], "tokens")],
                        text=str(d["text"]), counters=_build(Counters, d["counters"], "counters"),
                        token_text={str(k): str(v) for k, v in _as_dict(d.get("token_text", {}), "token_text").items()})
        except KeyError as e:
            raise TraceError(f"trace is missing the field {e.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            if isinstance(e, TraceError):
                raise
            raise TraceError(f"malformed trace: {e}") from None
        trace.validate()
        return trace

    @classmethod
    def from_json(cls, text: str | bytes) -> "Trace":
        if len(text) > MAX_TRACE_BYTES:
            raise TraceError(f"trace is {len(text) / 1e6:.1f} MB; the limit is {MAX_TRACE_BYTES / 1e6:.0f} MB")
        try:
            # A trace is UTF-8 text (RFC 8259); decoding it here, not in json.loads, keeps binary that happens to
            # start with a zero byte from being guessed as UTF-16 and reported as a different error.
            d = json.loads(text.decode("utf-8-sig") if isinstance(text, bytes) else text)
        except json.JSONDecodeError as e:  # (where, in words: "Expecting value: line 1 column 1 (char 0)" is Python's)
            where = f"the first error at line {e.lineno}, column {e.colno}"
            raise TraceError(f"trace is not valid JSON ({where})") from None
        except UnicodeDecodeError:
            raise TraceError("trace is not valid JSON: the file is not UTF-8 text") from None
        except RecursionError:
            raise TraceError("trace is not valid JSON: nested too deeply") from None
        return cls.from_dict(d)

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        """A trace file, checked (size limit, JSON, format and version, every field's type, the counters against
        the passes): TraceError with a plain message otherwise."""
        if not isinstance(path, (str, os.PathLike)):
            raise TraceError(f"a trace file's path must be a str or a path, got {type(path).__name__}")
        p = Path(path)
        if not p.is_file():
            raise TraceError(f"no trace file at {p}")
        if p.stat().st_size > MAX_TRACE_BYTES:
            raise TraceError(f"trace file is {p.stat().st_size / 1e6:.1f} MB; the limit is {MAX_TRACE_BYTES / 1e6:.0f} MB")
        return cls.from_json(p.read_bytes())

    # ------------------------------------------------------------ checks
    def validate(self) -> None:
        """Counters must agree with the pass records; every position is committed at most once."""
        c = self.counters
        n_commits = sum(len(p.commits) for p in self.passes)
        if c.target_passes != len(self.passes):
            raise TraceError(f"inconsistent counters: target_passes={c.target_passes} but {len(self.passes)} passes recorded")
        if c.commits != n_commits:
            raise TraceError(f"inconsistent counters: commits={c.commits} but {n_commits} commits recorded")
        seen = set()
        for p in self.passes:
            if p.walk_end and p.walk_end not in WALK_ENDS:
                raise TraceError(f"pass {p.index}: unknown walk_end {p.walk_end!r} (one of {sorted(WALK_ENDS)})")
            ids = {n.id for n in p.tree}
            if any(n.parent != -1 and n.parent not in ids or not set(n.merged_from) <= ids for n in p.tree) \
                    or not set(p.accepted_path) <= ids | ({0} if not p.tree else set()):
                raise TraceError(f"pass {p.index}: its tree names a node it does not hold (a parent, a merged edge "
                                 "or the accepted path)")
            for cm in p.commits:
                if cm.position in seen:
                    raise TraceError(f"position {cm.position} is committed twice")
                seen.add(cm.position)
        for v in (c.mean_accepted_length, c.wall_s, c.tokens_per_s):
            if not math.isfinite(v) or v < 0:
                raise TraceError("inconsistent counters: negative or non-finite value")
        if self.token_text:  # (a trace lists the text of every id it holds: an id without one was not decoded)
            stray = next((t for t in [*self.tokens, *(cm.token for p in self.passes for cm in p.commits)]
                          if str(t) not in self.token_text), None)
            if stray is not None:
                raise TraceError(f"token id {stray} is not among the trace's token_text ids: not a token this run "
                                 "decoded")

    # ----------------------------------------------------------- helpers
    def label(self, token: int) -> str:
        return self.token_text.get(str(token), f"#{token}")

    def walk_ends(self) -> dict[str, int]:
        """How many tree passes' acceptance walks stopped for each reason (WALK_ENDS order; reasons seen only)."""
        return walk_end_counts(self.passes)


def walk_end_counts(passes) -> dict[str, int]:
    """{reason: count} over the tree passes among `passes` (WALK_ENDS order; reasons seen only)."""
    seen = [p.walk_end for p in passes if p.walk_end]
    return {k: seen.count(k) for k in WALK_ENDS if k in seen}


def _as_list(v, name):
    if not isinstance(v, list):
        raise TraceError(f"field {name!r} must be a list")
    return v


def _as_dict(v, name):
    if not isinstance(v, dict):
        raise TraceError(f"field {name!r} must be an object")
    return v


def _build(cls, d, name):
    d = _as_dict(d, name)
    names = {f.name for f in fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise TraceError(f"unknown field(s) in {name}: {sorted(unknown)}")
    obj = cls(**d)
    for f in fields(cls):  # light type check of scalar fields
        v = getattr(obj, f.name)
        t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        if t == "int" and not (isinstance(v, int) and not isinstance(v, bool)):
            raise TraceError(f"{name}.{f.name} must be an integer")
        if t == "float" and not (isinstance(v, (int, float)) and not isinstance(v, bool)):
            raise TraceError(f"{name}.{f.name} must be a number")
        if t == "float" and not math.isfinite(v):
            raise TraceError(f"{name}.{f.name} must be a finite number, got {v}")
        if t == "bool" and not isinstance(v, bool):
            raise TraceError(f"{name}.{f.name} must be true or false")
        if t == "str" and not isinstance(v, str):
            raise TraceError(f"{name}.{f.name} must be a string")
        if t.startswith("list") and not isinstance(v, list):
            raise TraceError(f"{name}.{f.name} must be a list")
        if t == "list[int]" and not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise TraceError(f"{name}.{f.name} must be a list of integers")
    return obj
