"""Where drafters live: shipped under assets/drafters/<model>/, found by drafter name and target."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..errors import DecodeError
from ..paths import ASSETS
from .proposers import Calibrated, SpotProposer, TrainingFree

DRAFTER_DIR = ASSETS / "drafters"
# Drafters for targets without their own: the block model's drafter transfers (features carry no token ids).
FALLBACK_TARGET = "shakespeare-bd"


def shipped_folder(target_name: str) -> Path | None:
    """The drafters shipped for the model of this name, None if none are (a model named by its path, as a folder that
    copies a shipped model's name is, has none)."""
    own = DRAFTER_DIR / target_name
    return own if Path(target_name).name == target_name and own.is_dir() else None


def drafter_folder(target_name: str) -> Path:
    return shipped_folder(target_name) or DRAFTER_DIR / FALLBACK_TARGET


def uses_fallback(target_name: str, folder: str | Path | None = None) -> bool:
    """Whether a run of `target_name` drafts with the fallback's drafters: no folder given, none shipped for it."""
    return not folder and shipped_folder(target_name) is None


def drafters_used(target_name: str, folder: str | Path | None = None) -> str:
    """Where a run's drafters come from, in words: the folder given (train-drafter's --out), the model's shipped
    ones, or the fallback's, which transfer (a drafter reads only the target's distributions)."""
    if folder:
        trained_for = _trained_for(folder)
        other = (f" (trained for {trained_for}: they transfer)"  # (a model given by its path is not compared)
                 if trained_for and trained_for != target_name and "/" not in trained_for and "\\" not in trained_for
                 else "")
        return f"drafters from {folder}{other}"
    if uses_fallback(target_name):
        return f"{FALLBACK_TARGET}'s drafters, transferred (none trained for {target_name})"
    return f"{target_name}'s shipped drafters"


def _trained_for(folder: str | Path) -> str:
    """The model a drafter folder was trained for, as its training.json says ("" where it says nothing)."""
    import json

    try:
        model = json.loads((Path(folder).expanduser() / "training.json").read_text()).get("model", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return model if isinstance(model, str) else ""


def load_calibrated(target, folder: str | Path | None = None) -> Calibrated:
    f = (Path(folder).expanduser() if folder else drafter_folder(target.info.name)) / "calibrated.json"
    if not f.is_file():
        raise DecodeError(f"no calibrated template at {f}; train one: python -m spotviz train-drafter --model "
                          f"{target.info.name} --out DIR (then --drafter-dir DIR)")
    return Calibrated.load(f)


def load_learned(name: str, target, folder: str | Path | None = None, mode: str = "exact") -> SpotProposer:
    """A trained SPOT drafter: <folder or the target's drafter folder>/<name>/drafter.{json,safetensors}, with its
    partner for `mode` (proposers/spot.py): in exact mode the calibrated template of the same folder (none if the
    folder has no calibrated.json), in threshold mode the stale threshold rule."""
    base = Path(folder).expanduser() if folder else drafter_folder(target.info.name)
    sub = base / name
    try:
        drafter, fast = _load_drafter(str(sub), _mtime(sub / "drafter.safetensors"), _mtime(sub / "drafter.json"))
    except ValueError as e:
        raise DecodeError(f"cannot load drafter {name!r}: {e}") from None
    if drafter.cfg.max_width < target.info.block_size:
        raise DecodeError(f"drafter {name!r} handles windows up to {drafter.cfg.max_width} positions; "
                          f"{target.info.name} uses {target.info.block_size}")
    partner = None
    if mode == "threshold":
        partner = TrainingFree()
    elif (base / "calibrated.json").is_file():
        try:
            partner = load_calibrated(target, base)
        except ValueError as e:
            raise DecodeError(f"cannot load the partner of drafter {name!r}: {e}") from None
    return SpotProposer(drafter, fast=fast, partner=partner)


def _mtime(p: Path) -> float:
    return p.stat().st_mtime if p.exists() else 0.0


@lru_cache(maxsize=16)
def _load_drafter(folder: str, weights_mtime: float, config_mtime: float):
    """Drafters are small and read-only at inference: load each file once (reloaded if it changes)."""
    from .model import SpotDrafter
    from .numpy_forward import NumpyDrafter

    drafter = SpotDrafter.load(folder)
    return drafter, NumpyDrafter(drafter)
