"""The ``llm_judge`` metric: :mod:`.metric` (configuration from lm-eval metadata or the
environment, per-sample items, batched aggregation), :mod:`.prompt` (the strict-JSON judge
prompt and its parser), :mod:`.cache` (SQLite cache of verdicts).
"""
