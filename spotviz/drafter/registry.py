"""The proposer registry: every drafter the library knows, by name, with the modes it serves and how to load it.

One table replaces the lists and if-chains that front ends would otherwise repeat (the CLI's --drafter choices,
the app's menu, the bench's choice of the learned drafter per mode, the store's loader). Importing it is cheap:
loaders import their modules when called.

A drafter of your own joins the table with register_proposer (then DecodeConfig(drafter=name) runs it through
engine.decode like a built-in one, and the trace names it); its candidates are checked at every node
(proposers/checked.py), since a wrong candidate would otherwise make a wrong tree silently:

    from spotviz.drafter.registry import register_proposer
    register_proposer("left-to-right", lambda target, mode, folder: LeftToRight(), modes=("exact",))
"""
from __future__ import annotations

import hashlib
import inspect
import sys
from dataclasses import dataclass
from typing import Callable

from ..errors import DecodeError


@dataclass(frozen=True)
class ProposerSpec:
    name: str
    modes: tuple[str, ...]  # decision-rule modes it drafts for
    help: str
    load: Callable  # (target, mode, folder or None) -> Proposer
    learned: bool = False  # a trained drafter shipped per target (assets/drafters/<model>/<name>/)
    fitted: bool = False  # reads files fitted to a target (a learned drafter's weights, the calibrated template)
    checked: bool = False  # registered from outside the library: its candidates are checked (proposers/checked.py)


def _training_free(target, mode, folder):
    from .proposers import TrainingFree

    return TrainingFree()


def _calibrated(target, mode, folder):
    from .store import load_calibrated

    return load_calibrated(target, folder)


def _learned(name):
    def load(target, mode, folder):
        from .store import load_learned

        return load_learned(name, target, folder, mode)

    return load


PROPOSERS: dict[str, ProposerSpec] = {p.name: p for p in (
    ProposerSpec("spot", ("exact",), "the learned SPOT drafter (pointer head, hedged by the calibrated template): "
                 "exact mode", _learned("spot"), learned=True, fitted=True),
    ProposerSpec("spot-sets", ("threshold",), "the learned SPOT-Sets drafter (set head, hedged by the stale rule): "
                 "threshold mode", _learned("spot-sets"), learned=True, fitted=True),
    ProposerSpec("training-free", ("exact", "threshold"), "stale-confidence order from the previous pass",
                 _training_free),
    ProposerSpec("calibrated", ("exact", "threshold"), "a static draft-graph template calibrated offline",
                 _calibrated, fitted=True),
)}


BUILT_IN = tuple(PROPOSERS)
MODES = ("exact", "threshold")


def register_proposer(name: str, load: Callable, modes: tuple = ("exact",), help: str = "") -> ProposerSpec:
    """Make a drafter of your own known by `name`: `load(target, mode, folder)` returns a ready Proposer
    (drafter/tree.Proposer: prepare and children; folder is DecodeConfig.drafter_dir, None by default), for the
    decision-rule `modes` it drafts for. Registering a name again replaces it; the built-in names and "none" are
    refused. Returns its spec."""
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise DecodeError(f"a drafter's name must be a non-empty string without surrounding spaces, got {name!r}")
    if name == "none" or name in BUILT_IN:
        raise DecodeError(f"{name!r} is a built-in drafter's name; register yours under another")
    if not callable(load):
        raise DecodeError(f"load must be a function (target, mode, folder) -> Proposer, got {type(load).__name__}")
    try:
        inspect.signature(load).bind(None, None, None)
    except TypeError:
        if isinstance(load, type):  # (the class itself, where a loader of it was meant)
            raise DecodeError(f"load must be a function (target, mode, folder) -> Proposer, got the class "
                              f"{load.__name__} (e.g. lambda target, mode, folder: {load.__name__}())") from None
        raise DecodeError(f"load must take three arguments (target, mode, folder), got {load!r}") from None
    except ValueError:  # (a builtin without a signature: let the call say)
        pass
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    if not modes or any(m not in MODES for m in modes):
        raise DecodeError(f"modes must name some of {', '.join(MODES)}, got {modes!r}")
    spec = ProposerSpec(name, modes, help, load, checked=True)
    PROPOSERS[name] = spec
    return spec


def registered(mode: str | None = None) -> list[str]:
    """The drafters register_proposer added, in the order they came (those that draft in `mode`, if given)."""
    return [n for n, p in PROPOSERS.items() if p.checked and (mode is None or mode in p.modes)]


def unregister_proposer(name: str) -> None:
    """Forget a drafter that register_proposer added (the built-in ones stay)."""
    if name in BUILT_IN:
        raise DecodeError(f"{name!r} is a built-in drafter; it cannot be unregistered")
    PROPOSERS.pop(name, None)


def import_drafters(path) -> list[str]:
    """Run the Python file `path`, which registers drafters of its own (register_proposer): the command line's
    --plugin. It runs as a module of its own, its folder on sys.path (as for a script run from there: its neighbours
    import). Returns the names it registered; a file that is missing, fails or registers none raises DecodeError,
    and one that fails leaves nothing it registered or imported behind."""
    import importlib.util
    from pathlib import Path

    file = Path(path).expanduser()
    if not file.is_file() or file.suffix != ".py":
        raise DecodeError(f"{path}: not a Python file (a .py file that calls register_proposer)")
    before, modules = dict(PROPOSERS), set(sys.modules)
    folder = str(file.resolve().parent)
    # (a module name of its own per file: two plugins of one name in two folders are two modules)
    name = f"spotviz_plugin_{file.stem}_{hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (as an import does: dataclasses and pickling look the module up there)
    added_path = folder not in sys.path
    if added_path:  # (the file's neighbours import, then and later, as for a script run from its folder)
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # (the file's own error, said in one line: it is the user's code; nothing it registered
        # or imported stays)
        for m in set(sys.modules) - modules:
            sys.modules.pop(m, None)
        if added_path:
            sys.path.remove(folder)
        for n in set(PROPOSERS) - set(before):
            PROPOSERS.pop(n)
        PROPOSERS.update({n: p for n, p in before.items() if PROPOSERS.get(n) is not p})
        raise DecodeError(f"{path} failed: {type(e).__name__}: {e}") from None
    added = [n for n, p in PROPOSERS.items() if before.get(n) is not p]
    if not added:
        raise DecodeError(f"{path} registered no drafter (call spotviz.drafter.registry.register_proposer in it)")
    return added


def check_drafter(name: str, mode: str) -> ProposerSpec:
    """The spec of `name`, or a DecodeError saying which drafter serves `mode`."""
    spec = PROPOSERS.get(name)
    if spec is None:
        raise DecodeError(f"unknown drafter {name!r}; choose one of none, {', '.join(PROPOSERS)} (a drafter of "
                          f"your own: register_proposer, or the command line's --plugin FILE.py)")
    if mode not in spec.modes:
        other = [p.name for p in PROPOSERS.values() if mode in p.modes and p.learned == spec.learned]
        yours = " (register_proposer's modes says which: exact by default)" if spec.checked else ""
        raise DecodeError(f"drafter {name!r} is for {' or '.join(spec.modes)} mode{yours}; "
                          f"use {' or '.join(other)} in {mode} mode")
    return spec


def learned_drafter(mode: str) -> str:
    """The name of the learned drafter for a mode (spot in exact mode, spot-sets in threshold mode)."""
    return next(p.name for p in PROPOSERS.values() if p.learned and mode in p.modes)


def load_proposer(name: str, target, mode: str, folder=None):
    """A ready proposer for `target` in `mode` (folder: a drafter folder other than the shipped one); a registered
    one wrapped in its checks."""
    spec = check_drafter(name, mode)
    proposer = spec.load(target, mode, folder)
    if not spec.checked:
        return proposer
    from .proposers.checked import CheckedProposer

    return CheckedProposer(proposer, name, target.info.vocab_size, target.info.mask_id)
