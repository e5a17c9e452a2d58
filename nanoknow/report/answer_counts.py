"""Capped and uncapped answer frequency side by side (``nanoknow count`` in the built rows).

The qrels give each supported question's answer frequency among BM25's top-k documents
(capped: at most k, 100 in the released data); ``nanoknow count`` gives the documents of the
whole corpus that hold a gold answer under the stage-1 rule (``substring``) and the
``has_answer`` token rule (``token``). Samples carry both when the tasks read a build made with
``nanoknow build --counts`` (or ``--metadata '{"answer_counts": ...}'``).
"""

from __future__ import annotations

import statistics

from nanoknow_tasks.task_specs import EXPOSURES

#: the frequency axes ``nanoknow report --frequency-axis`` can draw
AXES = ("qrels", "substring", "token")
FREQUENCY_CONDITIONS = ("closedbook", "oracle", "original")


def sample_frequencies(task, axis: str) -> list:
    """Per sample: the qrels answer frequency, or the whole-corpus count of ``axis``."""
    if axis == "qrels":
        return list(task.frequencies)
    docs = [(s.get("doc") or {}).get("corpus_answer_docs") for s in task.samples or []]
    return [d.get(axis) if isinstance(d, dict) else None for d in docs]


def with_axis(tasks, axis: str):
    """``tasks`` whose ``frequencies`` are those of ``axis`` (the qrels ones are left as they are)."""
    if axis != "qrels":
        for task in tasks:
            task.frequencies = sample_frequencies(task, axis)
    return tasks


def _median(values: list) -> float | str:
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.median(values) if values else ""


def cap_rows(tasks, top_k: int = 100) -> list[dict]:
    """Per model and supported task: questions at the top-k cap, and capped vs uncapped medians."""
    rows = []
    for task in tasks:
        info = task.info
        if info.split != "supported" or info.exposure in EXPOSURES or info.condition not in FREQUENCY_CONDITIONS:
            continue
        capped = [f for f in task.frequencies if isinstance(f, int)]
        substring = sample_frequencies(task, "substring")
        token = sample_frequencies(task, "token")
        counted = [s for s in substring if isinstance(s, int)]
        rows.append({"model": task.model, "dataset": info.dataset, "task": info.name, "n": len(task.frequencies),
                     "at_cap": sum(f >= top_k for f in capped), "top_k": top_k,
                     "median_capped": _median(capped), "with_counts": len(counted),
                     "median_uncapped_substring": _median(substring), "median_uncapped_token": _median(token),
                     "above_cap_uncapped": sum(s > top_k for s in counted)})
    return rows
