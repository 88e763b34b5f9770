"""Evaluation: the benchmark and the statistics it reports (built on the decoders, never used by them)."""
