"""Where drafters live: shipped under assets/drafters/<model>/, found by drafter name and target."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..paths import ASSETS
from .proposers import Calibrated, SpotProposer, TrainingFree

DRAFTER_DIR = ASSETS / "drafters"
# Drafters for targets without their own: the block model's drafter transfers (features carry no token ids).
FALLBACK_TARGET = "shakespeare-bd"


def drafter_folder(target_name: str) -> Path:
    own = DRAFTER_DIR / target_name
    return own if own.is_dir() else DRAFTER_DIR / FALLBACK_TARGET


def load_proposer(name: str, target, mode: str, folder: str | Path | None = None):
    from ..samplers.common import DecodeError

    if name == "training-free":
        return TrainingFree()
    base = Path(folder) if folder else drafter_folder(target.info.name)
    if name == "calibrated":
        f = base / "calibrated.json"
        if not f.is_file():
            raise DecodeError(f"no calibrated template at {f}; run: python -m spotviz train-drafter --model "
                              f"{target.info.name}")
        return Calibrated.load(f)
    if name in ("spot", "spot-sets"):
        if name == "spot" and mode != "exact" or name == "spot-sets" and mode != "threshold":
            raise DecodeError(f"drafter {name!r} is for {'exact' if name == 'spot' else 'threshold'} mode; "
                              f"use {'spot-sets' if name == 'spot' else 'spot'} in {mode} mode")
        sub = base / name
        try:
            drafter = _load_drafter(str(sub), _mtime(sub / "drafter.safetensors"), _mtime(sub / "drafter.json"))
        except ValueError as e:
            raise DecodeError(f"cannot load drafter {name!r}: {e}") from None
        if drafter.cfg.max_width < target.info.block_size:
            raise DecodeError(f"drafter {name!r} handles windows up to {drafter.cfg.max_width} positions; "
                              f"{target.info.name} uses {target.info.block_size}")
        return SpotProposer(drafter)
    raise DecodeError(f"unknown drafter {name!r}")


def _mtime(p: Path) -> float:
    return p.stat().st_mtime if p.exists() else 0.0


@lru_cache(maxsize=16)
def _load_drafter(folder: str, weights_mtime: float, config_mtime: float):
    """Drafters are small and read-only at inference: load each file once (reloaded if it changes)."""
    from .model import SpotDrafter

    return SpotDrafter.load(folder)
