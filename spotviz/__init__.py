"""spotviz: lossless speculative decoding (SPOT) for diffusion language models, and its visualisation."""
__version__ = "0.1.0"

from .embedded import modeling  # noqa: F401  (registers the embedded architecture with the transformers Auto classes)
