"""Benchmarks that reproduce the source texts' figures; results go to ``benchmarks/results/``."""
