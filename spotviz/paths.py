"""Where the shipped assets live (models, drafters, prompts, example traces)."""
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "assets"
