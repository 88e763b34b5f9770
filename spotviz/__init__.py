"""spotviz: lossless speculative decoding (SPOT) for diffusion language models, and its visualisation.

Importing the package is cheap (no torch, no transformers): the command line's --help answers at once. The
embedded architecture registers itself with the transformers Auto classes when spotviz.embedded.modeling is
imported, which every loader of a model does (registry.load_embedded, targets.embedded, targets.families)."""
__version__ = "0.1.0"
