"""Per-sample scoring hooks used by the task YAML files (``process_results``)."""

from __future__ import annotations

from nanoknow_tasks.exact_match import has_answer


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    """Exact match (DPR ``has_answers`` rule) of the first generation against ``doc["answers"]``."""
    prediction = results[0] if results else ""
    return {"exact_match": float(has_answer(prediction, doc["answers"]))}
