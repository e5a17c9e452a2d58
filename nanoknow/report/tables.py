"""The report's tables (lists of row dicts), recomputed from per-sample scores.

:func:`score_runs` turns loaded runs into :class:`TaskScores`; :func:`summary_rows`,
:func:`frequency_rows` and :func:`distractor_rows` make the rows of ``summary.csv``,
``frequency.csv`` and ``distractors.csv``. Percentages throughout.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from nanoknow.report.load import ModelRuns, TaskRun
from nanoknow_tasks.task_specs import TaskSpec
from nanoknow.report.stats import BUCKETS, Score, bucket_of, exact_match_values, judge_values, score

log = logging.getLogger(__name__)

#: conditions drawn per frequency bucket (supported questions)
FREQUENCY_CONDITIONS = ("closedbook", "oracle", "original")


@dataclass
class TaskScores:
    """Per-sample scores of one task of one model."""

    model: str
    run: TaskRun
    exact_match: list[float]
    frequencies: list
    llm_judge: list[float] | None = None
    judge_note: str | None = None
    samples: list[dict] | None = None

    @property
    def info(self) -> TaskSpec:
        return self.run.info

    @property
    def values(self) -> list[float]:
        """The per-sample answer-match scores (the paper's "exact match")."""
        return self.exact_match


def score_runs(runs: list[ModelRuns], judge_cache: str | None = None) -> tuple[list[TaskScores], list[str]]:
    """Scores of every task that has samples; notes for the tasks left out or partly scored."""
    scored, notes = [], []
    for model_runs in runs:
        for name in sorted(model_runs.tasks, key=lambda n: model_runs.tasks[n].info.sort_key):
            run = model_runs.tasks[name]
            samples = run.samples()
            if not samples:
                if run.samples_file is not None:
                    notes.append(f"{model_runs.model}: {run.samples_file} has no samples; {name} is left out")
                continue
            where = str(run.samples_file)
            task = TaskScores(model_runs.model, run, exact_match_values(samples, where),
                              [(s.get("doc") or {}).get("answer_frequency") for s in samples], samples=samples)
            task.llm_judge, task.judge_note = judge_values(samples, judge_cache)
            if task.judge_note:
                notes.append(f"{model_runs.model}: {name}: llm_judge left out: {task.judge_note}")
            reported = run.reported.get("exact_match,none")
            mine = sum(task.exact_match) / len(task.exact_match)
            if isinstance(reported, (int, float)) and not math.isclose(reported, mine, abs_tol=1e-9):
                notes.append(f"{model_runs.model}: {name}: exact match from samples ({mine:.4f}) differs from "
                             f"lm-eval's results file ({reported:.4f}); the samples' value is reported")
            scored.append(task)
    for note in notes:
        log.warning(note)
    return scored, notes


def _score_fields(s: Score) -> dict:
    low, high = s.ci
    return {"n": s.n, "correct": s.correct, "accuracy_pct": _round(s.pct),
            "ci_low_pct": _round(low), "ci_high_pct": _round(high)}


def _round(value: float) -> float:
    return value if math.isnan(value) else round(value, 4)


def summary_rows(tasks: list[TaskScores]) -> list[dict]:
    """One row per model x task x metric (``exact_match``, and ``llm_judge`` when available)."""
    rows = []
    for task in tasks:
        info = task.info
        metrics = [("exact_match", task.exact_match)]
        if task.llm_judge is not None:
            metrics.append(("llm_judge", task.llm_judge))
        for metric, values in metrics:
            reported = task.run.reported.get(f"{metric},none")
            rows.append({"model": task.model, "dataset": info.dataset, "split": info.group,
                         "condition": info.condition, "paper_condition": info.paper_condition,
                         "k": info.k if info.k is not None else "", "position": info.position or "",
                         "task": info.name, "metric": metric, **_score_fields(score(values)),
                         "lm_eval_reported_pct": _round(100 * reported) if isinstance(reported, (int, float)) else "",
                         "results_file": str(task.run.results_file)})
    return rows


def frequency_rows(tasks: list[TaskScores]) -> tuple[list[dict], list[str]]:
    """Exact match per answer-frequency bucket (supported) plus unsupported reference rows."""
    rows, notes = [], []
    for task in tasks:
        info = task.info
        if info.condition not in FREQUENCY_CONDITIONS or info.exposure:
            continue
        base = {"model": task.model, "dataset": info.dataset, "split": info.split, "condition": info.condition,
                "paper_condition": info.paper_condition, "task": info.name}
        if info.split == "unsupported":
            rows.append({**base, "bucket": "unsupported (all)", **_score_fields(score(task.exact_match))})
            continue
        labels = [bucket_of(f) for f in task.frequencies]
        unbucketed = sum(label is None for label in labels)
        if unbucketed:
            notes.append(f"{task.model}: {info.name}: {unbucketed} of {len(labels)} samples have no answer "
                         "frequency >= 1 and are left out of the frequency buckets")
        if unbucketed == len(labels):
            continue
        for label, _, _ in BUCKETS:
            values = [v for v, b in zip(task.exact_match, labels) if b == label]
            rows.append({**base, "bucket": label, **_score_fields(score(values))})
    for note in notes:
        log.warning(note)
    return rows, notes


def distractor_rows(tasks: list[TaskScores]) -> list[dict]:
    """Exact match per k and oracle position; the oracle-only task as k = 0 (position ``none``)."""
    rows = []
    datasets = {(t.model, t.info.dataset) for t in tasks if t.info.condition == "distractors"}
    for task in tasks:
        info = task.info
        if (task.model, info.dataset) not in datasets or info.split != "supported" or info.exposure:
            continue
        if info.condition == "oracle":
            k, position = 0, "none (oracle only)"
        elif info.condition == "distractors":
            k, position = info.k, info.position
        else:
            continue
        rows.append({"model": task.model, "dataset": info.dataset, "k": k, "position": position,
                     "task": info.name, **_score_fields(score(task.exact_match))})
    order = {m: i for i, m in enumerate(dict.fromkeys(t.model for t in tasks))}
    rows.sort(key=lambda r: (order[r["model"]], r["dataset"], r["k"], r["position"]))
    return rows
