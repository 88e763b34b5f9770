"""Targets: every diffusion model behind one interface (base.DiffusionTarget); adapters in embedded.py (spotviz's
own models) and adapters.py (SDAR, LLaDA, Dream, masked LMs; published.py names them, families.py and hub.py load
them). Nothing is imported here, so that importing the
interface does not import transformers."""
