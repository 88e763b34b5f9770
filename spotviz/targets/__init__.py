"""Targets: every diffusion model behind one interface (base.DiffusionTarget); adapters in embedded.py (spotviz's
own models) and published.py (SDAR, LLaDA, Dream, masked LMs). Nothing is imported here, so that importing the
interface does not import transformers."""
