"""Per-sample scoring hooks used by the task YAML files (``process_results``)."""

from __future__ import annotations

from nanoknow_tasks.judge.metric import judge_metrics
from nanoknow_tasks.has_answer import has_answer

#: The metric's name. Not ``exact_match``: in lm-eval's own tasks that means string equality.
METRIC = "has_answer"


def process_results(doc: dict, results: list[str]) -> dict:
    """``has_answer`` (the paper's "exact match": the DPR ``has_answers`` rule) of the first
    generation against ``doc["answers"]``.

    When an LLM judge is configured (:mod:`nanoknow_tasks.judge.metric`), also the per-sample items of
    ``llm_judge`` and ``llm_judge_unparseable``, which the task's aggregation judges in one batch.
    """
    prediction = results[0] if results else ""
    scores = {METRIC: float(has_answer(prediction, doc["answers"]))}
    scores.update(judge_metrics(doc, prediction))
    return scores
