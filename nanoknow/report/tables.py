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
from nanoknow_tasks.task_specs import POSITIONS, TaskSpec
from nanoknow.report.stats import (BUCKETS, METRIC, OLD_METRIC, Score, bucket_of, has_answer_values,
                                   judge_values, score)

log = logging.getLogger(__name__)

#: the position column of the k = 0 row (no distractors, nothing to be placed among)
K0_POSITION = "none (oracle alone)"
#: conditions drawn per frequency bucket (supported questions)
FREQUENCY_CONDITIONS = ("closedbook", "oracle", "original")


@dataclass
class TaskScores:
    """Per-sample scores of one task of one model."""

    model: str
    run: TaskRun
    has_answer: list[float]
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
        return self.has_answer


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
            task = TaskScores(model_runs.model, run, has_answer_values(samples, where),
                              [(s.get("doc") or {}).get("answer_frequency") for s in samples], samples=samples)
            task.llm_judge, task.judge_note = judge_values(samples, judge_cache)
            if task.judge_note:
                notes.append(f"{model_runs.model}: {name}: llm_judge left out: {task.judge_note}")
            reported = _reported(run, METRIC)
            mine = sum(task.has_answer) / len(task.has_answer)
            if isinstance(reported, (int, float)) and not math.isclose(reported, mine, abs_tol=1e-9):
                notes.append(f"{model_runs.model}: {name}: {METRIC} from samples ({mine:.4f}) differs from "
                             f"lm-eval's results file ({reported:.4f}); the samples' value is reported")
            scored.append(task)
    for note in notes:
        log.warning(note)
    return scored, notes


def _reported(run: TaskRun, metric: str):
    """lm-eval's own number for ``metric`` (``exact_match`` in runs made before the rename)."""
    value = run.reported.get(f"{metric},none")
    if value is None and metric == METRIC:
        value = run.reported.get(f"{OLD_METRIC},none")
    return value


def _score_fields(s: Score) -> dict:
    low, high = s.ci
    return {"n": s.n, "correct": s.correct, "accuracy_pct": _round(s.pct),
            "ci_low_pct": _round(low), "ci_high_pct": _round(high)}


def _round(value: float) -> float:
    return value if math.isnan(value) else round(value, 4)


def summary_rows(tasks: list[TaskScores]) -> list[dict]:
    """One row per model x task x metric (``has_answer``, and ``llm_judge`` when available)."""
    rows = []
    for task in tasks:
        info = task.info
        metrics = [(METRIC, task.has_answer)]
        if task.llm_judge is not None:
            metrics.append(("llm_judge", task.llm_judge))
        for metric, values in metrics:
            reported = _reported(task.run, metric)
            rows.append({"model": task.model, "dataset": info.dataset, "split": info.group,
                         "condition": info.condition, "paper_condition": info.paper_condition,
                         "k": info.k if info.k is not None else "", "position": info.position or "",
                         "task": info.name, "metric": metric, **_score_fields(score(values)),
                         "lm_eval_reported_pct": _round(100 * reported) if isinstance(reported, (int, float)) else "",
                         "results_file": str(task.run.results_file)})
    return rows


def frequency_rows(tasks: list[TaskScores]) -> tuple[list[dict], list[str]]:
    """``has_answer`` per answer-frequency bucket (supported) plus unsupported reference rows."""
    rows, notes = [], []
    for task in tasks:
        info = task.info
        if info.condition not in FREQUENCY_CONDITIONS or info.exposure:
            continue
        base = {"model": task.model, "dataset": info.dataset, "split": info.split, "condition": info.condition,
                "paper_condition": info.paper_condition, "task": info.name}
        if info.split == "unsupported":
            rows.append({**base, "bucket": "unsupported (all)", **_score_fields(score(task.has_answer))})
            continue
        labels = [bucket_of(f) for f in task.frequencies]
        unbucketed = sum(label is None for label in labels)
        if unbucketed:
            notes.append(f"{task.model}: {info.name}: {unbucketed} of {len(labels)} samples have no answer "
                         "frequency >= 1 and are left out of the frequency buckets")
        if unbucketed == len(labels):
            continue
        for label, _, _ in BUCKETS:
            values = [v for v, b in zip(task.has_answer, labels) if b == label]
            rows.append({**base, "bucket": label, **_score_fields(score(values))})
    for note in notes:
        log.warning(note)
    return rows, notes


def distractor_rows(tasks: list[TaskScores]) -> list[dict]:
    """``has_answer`` per k and oracle position of the distractor grid; k = 0 (the grid passage
    alone, position ``none (oracle alone)``) is the grid's baseline."""
    rows = []
    for task in tasks:
        info = task.info
        if info.condition != "distractors" or info.split != "supported":
            continue
        rows.append({"model": task.model, "dataset": info.dataset, "k": info.k,
                     "position": info.position or K0_POSITION, "task": info.name,
                     **_score_fields(score(task.has_answer))})
    order = {m: i for i, m in enumerate(dict.fromkeys(t.model for t in tasks))}
    place = {p: i for i, p in enumerate((K0_POSITION, *POSITIONS))}
    rows.sort(key=lambda r: (order[r["model"]], r["dataset"], r["k"], place[r["position"]]))
    return rows
