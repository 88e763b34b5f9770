"""Evaluation: the benchmark and the statistics it reports, answer accuracy of word-problem
models, output quality checks and the long commands' progress lines (built on the decoders, never used by them)."""
