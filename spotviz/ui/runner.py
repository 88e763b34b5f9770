"""Decoding for the app: model loading (injectable), and the decode generator that streams plain events.

`decode_events` is the only function that touches the model. On a ZeroGPU Space it runs under `spaces.GPU`
(in a forked worker), so its arguments (plain values and a RunPlan of frozen DecodeConfigs) and every event it
yields are picklable, the events plain data (str, int, float, list, dict): the UI turns them back into traces and
views. Elsewhere the decorator is a no-op.

Events (dicts, key "type"):
  measure {run}                             before the first run, while the model's cost curve is measured
                                            (again every HEARTBEAT_S): budget auto needs it and it is not known
                                            yet, or the app's start-up measurement of it is still running (every
                                            run waits for that)
  start  {run, meta}                        before the first pass (meta = RunMeta fields)
  pass   {run, record, counters, token_text} after every target pass (PassRecord / Counters as dicts)
  done   {run, trace}                       the finished trace (Trace.to_dict())
  error  {run, message, where}              where = "input" (nothing can run), "model", "drafter" or "internal"
`run` is "main" (the chosen drafter), a race drafter's name, or "baseline" (the standard decoder on the same
prompt and seed); see inputs.RunPlan.
"""
from __future__ import annotations

import itertools
import logging
import os
import threading
import traceback
from dataclasses import asdict
from typing import Callable, Iterator

log = logging.getLogger("spotviz.app")

try:  # the `spaces` package: GPU allocation on ZeroGPU Spaces, a no-op decorator elsewhere
    import spaces  # type: ignore

    _gpu = spaces.GPU
except Exception:  # pragma: no cover - spaces not installed
    spaces = None

    def _gpu(fn=None, **kw):
        return fn if fn is not None else (lambda f: f)


def on_zerogpu() -> bool:
    return os.environ.get("SPACES_ZERO_GPU", "").lower() in ("1", "true")


def has_gpu() -> bool:
    if on_zerogpu():
        return True
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # pragma: no cover
        return False


class ModelStore:
    """Loads targets by name with `loader` (default: spotviz.registry.load_target) and keeps them.

    Failed loads are not cached, so a model that appears later (e.g. when training finishes) loads then."""

    def __init__(self, loader: Callable[[str], object] | None = None, drafter_dirs: dict | None = None):
        self.loader = loader
        self.drafter_dirs = drafter_dirs or {}  # model -> the folder of its own drafters (the banner says whose run)
        self._cache: dict[str, object] = {}
        self._lock = threading.Lock()  # guards the two dicts, never held during a load
        self._loading: dict[str, threading.Lock] = {}  # one per name: a load waits only for a load of the same model

    def get(self, name: str):
        with self._lock:
            if name in self._cache:
                return self._cache[name]
            loading = self._loading.setdefault(name, threading.Lock())
        with loading:  # (a published model loads for minutes: other sessions' models and questions do not wait)
            with self._lock:
                if name in self._cache:
                    return self._cache[name]
            if self.loader is None:
                from ..registry import load_target

                target = load_target(name)
            else:
                target = self.loader(name)
            with self._lock:
                self._cache[name] = target
            return target

    def loaded(self, name: str) -> bool:
        """Whether `name` is loaded already (asking loads nothing)."""
        with self._lock:
            return name in self._cache

    def describe(self, name: str) -> str:
        """One line about a loaded model, or raises its load error."""
        t = self.get(name)
        info = t.info
        n_params = ""
        model = getattr(t, "model", None)
        if model is not None:
            try:
                n_params = f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters · "
            except Exception:  # pragma: no cover
                n_params = ""
        from ..threads import threads_in_use

        from ..drafter.store import drafters_used, uses_fallback

        own = self.drafter_dirs.get(name)  # (the banner names drafters other than the model's own shipped ones)
        drafters = f" · {drafters_used(info.name, own)}" if own or uses_fallback(info.name) else ""
        return (f"{info.name} · {n_params}{info.attention} attention · block/window {info.block_size} · "
                f"vocab {info.vocab_size} · context {info.max_length} · on {t.device}"
                + (f" · {threads_in_use()} CPU thread(s)" if str(t.device) == "cpu" else "") + drafters)


def measure_cost_curve_ahead(store: ModelStore, model: str) -> threading.Thread | None:
    """Measure the cost curve of `model` (what budget auto sizes trees by) in a background thread, so that a fresh
    app's first auto run does not wait for it: a Space restarts with an empty cache (math-bd: 6-15 s on a CPU). A
    run pressed meanwhile waits for this measurement (decode_events), so that no decode runs beside it. None where
    the curve is known, the model is not loaded, or on ZeroGPU (the model reaches its GPU inside a run only)."""
    from ..samplers.forward_cost import cost_curve, known_curve

    if on_zerogpu() or not store.loaded(model):
        return None
    target = store.get(model)
    if known_curve(target) is not None:
        return None

    def measure():
        try:
            cost_curve(target)
        except Exception:  # noqa: BLE001 - a run measures it again and reports what fails
            log.warning("measuring %s's cost curve ahead failed:\n%s", model, traceback.format_exc())

    thread = threading.Thread(target=measure, name="spotviz-cost-curve", daemon=True)
    _AHEAD[id(target)] = thread  # (the store keeps the target, so its id stays its own)
    thread.start()
    return thread


_AHEAD: dict[int, threading.Thread] = {}  # id(target) -> its curve measured ahead (decode_events waits for it)


_STORES: dict[int, ModelStore] = {}
_ids = itertools.count(1)


def register_store(store: ModelStore) -> int:
    """A small integer naming `store` (so the GPU function receives only plain arguments)."""
    key = next(_ids)
    _STORES[key] = store
    return key


def _one_run(target, prompt: str, cfg, run: str) -> Iterator[dict]:
    from ..engine import decode_stream

    mask = int(target.info.mask_id)
    known: set[int] = {mask}
    for prog in decode_stream(target, prompt, cfg, start_event=True):
        if prog.kind == "start":  # the engine's own RunMeta (prompt tokens, truncation, auto budget)
            known |= set(prog.meta.prompt_tokens)
            texts = target.display_strings(known)
            yield {"type": "start", "run": run, "meta": asdict(prog.meta),
                   "token_text": {str(k): v for k, v in texts.items()}}
            continue
        if prog.trace is not None:
            yield {"type": "done", "run": run, "trace": prog.trace.to_dict()}
            return
        rec = prog.record
        ids = {c.token for c in rec.commits}
        for n in rec.tree:
            ids.update(n.tokens)
            ids.update(n.target_tokens)
        new = ids - known
        known |= new
        yield {"type": "pass", "run": run, "record": asdict(rec), "counters": asdict(prog.counters),
               "token_text": {str(k): v for k, v in target.display_strings(new).items()} if new else {}}


HEARTBEAT_S = 0.25  # a wait inside a run yields this often


def _while_running(work: Callable[[], None], run: str) -> Iterator[dict]:
    """Do `work` in a thread of its own, yielding a "measure" event now and every HEARTBEAT_S until it is done (its
    error raised here). Gradio takes a Stop between a run's yields: while a wait of seconds held the run inside one
    call, Stop reached the page but not the run, which kept the page's Run button pending, so a Run pressed after
    such a Stop did nothing (session 47's "a Run after a stopped race did not finish within a minute")."""
    failed: list[BaseException] = []

    def do():
        try:
            work()
        except BaseException as e:  # noqa: BLE001 - raised in the run's own thread below
            failed.append(e)

    worker = threading.Thread(target=do, name="spotviz-wait", daemon=True)
    worker.start()
    yield {"type": "measure", "run": run}
    while worker.is_alive():
        worker.join(HEARTBEAT_S)
        if worker.is_alive():
            yield {"type": "measure", "run": run}
    if failed:
        raise failed[0]


def _error(run: str, where: str, e: BaseException) -> dict:
    from ..registry import ModelLoadError
    from ..samplers.config import DecodeError
    from ..trace import TraceError

    if isinstance(e, (DecodeError, ModelLoadError, TraceError)):
        message = str(e)
    elif isinstance(e, ImportError):
        message = f"this drafter is not available in this build ({e})"
        where = "drafter" if where != "model" else where
    else:
        log.error("decode failed:\n%s", traceback.format_exc())
        message = f"{type(e).__name__}: {e}"
        if where != "drafter":
            where = "internal"
    return {"type": "error", "run": run, "where": where, "message": message}


GPU_SECONDS_PER_SLOT = {"embedded": 0.02, "published": 0.08}  # generous per committed slot and run (passes <= slots)
GPU_SECONDS_LOAD = 60  # a published model the worker has not loaded yet is loaded inside the GPU call
GPU_SECONDS_MAX = 120


def gpu_seconds(store_key: int, model: str, prompt: str, plan) -> int:
    """The GPU time a ZeroGPU Space asks for a decode_events call (`spaces.GPU(duration=...)` calls this with the
    same arguments). ZeroGPU refuses a call that asks for more than the visitor's remaining daily quota (a couple of
    minutes for anonymous visitors) and queues shorter requests first, so the request follows the work: the runs of
    the plan times the slots each may commit, at a generous cost per slot (a standard pass of an embedded model
    takes milliseconds on a GPU), plus the loading of a published model not loaded yet; between 10 s and
    GPU_SECONDS_MAX (an embedded model: 11 s for a standard run of 64 tokens, 50 s for a race of 512)."""
    from ..registry import is_embedded

    kind = "embedded" if is_embedded(model) else "published"
    store = _STORES.get(store_key)
    loading = kind == "published" and not (store is not None and store.loaded(model))
    slots = sum(cfg.gen_length for _, cfg in plan.runs)
    seconds = 10 + slots * GPU_SECONDS_PER_SLOT[kind] + (GPU_SECONDS_LOAD if loading else 0)
    return int(min(GPU_SECONDS_MAX, seconds))


@_gpu(duration=gpu_seconds)
def decode_events(store_key: int, model: str, prompt: str, plan) -> Iterator[dict]:
    """Decode `prompt` with every run of `plan` (inputs.RunPlan: its configs are validated already), one after
    another on the same prompt and seed; yield plain events (see the module docstring)."""
    from ..samplers.config import encode_prompt
    from ..samplers.forward_cost import cost_curve, known_curve

    try:
        target = _STORES[store_key].get(model)
    except Exception as e:  # noqa: BLE001 - shown to the user
        yield _error("main", "model", e)
        return
    try:
        encode_prompt(target, prompt, plan.cfg.gen_length)
    except Exception as e:  # noqa: BLE001
        yield _error("main", "input", e)
        return
    ahead = _AHEAD.get(id(target))
    auto = [run for run, c in plan.runs if c.drafter != "none" and c.budget == "auto"]
    if (ahead is not None and ahead.is_alive()) or (auto and known_curve(target) is None):
        # (every run waits for a measurement started at the app's start, so that no decode runs beside it: it would
        # skew the curve, and the run's own timings, and the app decodes one run at a time on a CPU)
        def measured():
            if ahead is not None:
                ahead.join()
            if auto:
                cost_curve(target)

        try:
            yield from _while_running(measured, plan.runs[0][0])
        except Exception as e:  # noqa: BLE001 - shown to the user (the runs would only meet it again)
            yield _error(auto[0] if auto else plan.runs[0][0], "internal", e)
            return
    for run, run_cfg in plan.runs:
        try:
            yield from _one_run(target, prompt, run_cfg, run)
        except GeneratorExit:
            raise
        except Exception as e:  # noqa: BLE001 - a failing drafter must not take the app down
            yield _error(run, "drafter" if run_cfg.drafter != "none" else "internal", e)
