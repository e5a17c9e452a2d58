"""Projection of QA benchmarks onto a pre-training corpus, and the NanoKnow data layer."""
