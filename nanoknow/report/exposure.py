"""The report's exposure views: supported questions split by what each evaluated checkpoint read.

A model's exposure comes, in this order, from the report's own options (``--shards-seen``,
``--tokens-read``, ``--exposure-from``), from the exposure its tasks were run with (lm-eval
records a task's ``--metadata`` in the results file), or from its checkpoint's files when its
``pretrained`` is a local nanochat folder. Every sample carries ``qrels_shards`` (the shard of
each qrels document), so one run of the usual tasks can be split for any exposure.

Rows made here: :func:`exposure_rows` (accuracy of seen / uncertain / unseen questions per
task), :func:`frequency_read_rows` (per bucket of documents *read* beside documents in the
corpus) and :func:`dynamics_rows` (accuracy against training step for questions whose first
evidence shard was read by that step vs not yet, over several checkpoints of one run).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from nanoknow.report.load import ModelRuns
from nanoknow.report.stats import BUCKETS, bucket_of, score
from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

#: conditions split by exposure (supported questions)
EXPOSURE_CONDITIONS = ("closedbook", "oracle", "original")
STATUSES = ("seen", "uncertain", "unseen")


@dataclass
class ModelExposure:
    """One model's exposure and where it came from."""

    model: str
    exposure: object  # projection.exposure.Exposure
    origin: str
    run_key: str | None = None  # the checkpoint folder: models of one training run share it
    step: int | None = None


def _model_args(config: dict) -> dict:
    args = config.get("model_args")
    if isinstance(args, dict):
        return {k: str(v) for k, v in args.items()}
    if isinstance(args, str):
        return dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    return {}


def _task_metadata(run: ModelRuns) -> dict:
    """Exposure keys of the first task config that has any (lm-eval copies ``--metadata`` there)."""
    from projection.exposure import METADATA_KEYS

    for config in (run.task_configs or {}).values():
        metadata = (config or {}).get("metadata") or {}
        found = {k: metadata[k] for k in METADATA_KEYS if metadata.get(k) is not None}
        if found:
            return found
    return {}


def resolve_model_exposures(runs: list[ModelRuns], stated: dict | None) -> tuple[list[ModelExposure], list[str]]:
    """Each model's exposure (see the module docstring); notes for models without one."""
    from projection.exposure import resolve_exposure

    found, notes = [], []
    for run in runs:
        args = _model_args(run.config)
        checkpoint = args.get("pretrained")
        step = int(args["step"]) if args.get("step", "").isdigit() else None
        candidates = []
        if stated:
            candidates.append(("report options", stated))
        metadata = _task_metadata(run)
        if metadata:
            candidates.append(("the tasks' --metadata", metadata))
        if checkpoint and Path(checkpoint).is_dir() and any(Path(checkpoint).glob("meta_*.json")):
            candidates.append((f"checkpoint {checkpoint}", {"exposure_from": checkpoint, "exposure_step": step}))
        for origin, source in candidates:
            try:
                exposure = resolve_exposure(source)
            except NanoKnowInputError as err:
                notes.append(f"{run.model}: exposure from {origin} unusable: {err}")
                continue
            run_key = str(Path(checkpoint).resolve()) if checkpoint and Path(checkpoint).is_dir() else None
            found.append(ModelExposure(run.model, exposure, origin, run_key, exposure.step or step))
            break
        else:
            notes.append(f"{run.model}: no exposure known (give --shards-seen/--tokens-read/--exposure-from, or run "
                         "the tasks with it in --metadata); supported questions are not split into seen/unseen")
    return found, notes


def _statuses(task, exposure) -> list[str | None]:
    shards = [(s.get("doc") or {}).get("qrels_shards") for s in task.samples]
    return [exposure.status(x) if x else None for x in shards]


def _corpus_note(task, exposure) -> str | None:
    corpus = ((task.run.task_config or {}).get("metadata") or {}).get("corpus") or "fineweb-edu"
    mismatch = exposure.corpus_mismatch(corpus)
    return f"{task.model}: {task.info.name}: {mismatch}" if mismatch else None


def _eligible(task, exposures: dict) -> bool:
    return (task.model in exposures and task.info.split == "supported" and task.info.exposure is None
            and task.info.condition in EXPOSURE_CONDITIONS)


def exposure_rows(tasks, model_exposures: list[ModelExposure]) -> tuple[list[dict], list[str]]:
    """Accuracy (has_answer) of seen / uncertain / unseen supported questions, per model and task."""
    exposures = {m.model: m for m in model_exposures}
    rows, notes = [], []
    for task in tasks:
        if not _eligible(task, exposures):
            continue
        exposure = exposures[task.model].exposure
        note = _corpus_note(task, exposure)
        if note:
            notes.append(note)
        statuses = _statuses(task, exposure)
        missing = statuses.count(None)
        if missing:
            notes.append(f"{task.model}: {task.info.name}: {missing} samples carry no qrels_shards (run before "
                         "exposure support?) and are not split")
        for status in STATUSES:
            values = [v for v, s in zip(task.values, statuses) if s == status]
            if values or status != "uncertain":
                rows.append({"model": task.model, "dataset": task.info.dataset, "condition": task.info.condition,
                             "task": task.info.name, "status": status, "exposure": exposure.describe(),
                             **_fields(score(values))})
    return rows, notes


def frequency_read_rows(tasks, model_exposures: list[ModelExposure]) -> list[dict]:
    """Accuracy per bucket of answer frequency in the corpus and of documents surely read."""
    exposures = {m.model: m for m in model_exposures}
    rows = []
    for task in tasks:
        if not _eligible(task, exposures):
            continue
        exposure = exposures[task.model].exposure
        shards = [(s.get("doc") or {}).get("qrels_shards") or [] for s in task.samples]
        axes = {"in corpus": [len(x) for x in shards],
                "read": [exposure.frequency_read(x)[0] for x in shards]}
        for axis, frequencies in axes.items():
            labels = [bucket_of(f) if shard_list else None for f, shard_list in zip(frequencies, shards)]
            for label in ["0 (not read)"] * (axis == "read") + [b for b, _, _ in BUCKETS]:
                if label == "0 (not read)":
                    values = [v for v, f, x in zip(task.values, frequencies, shards) if x and f == 0]
                else:
                    values = [v for v, b in zip(task.values, labels) if b == label]
                rows.append({"model": task.model, "dataset": task.info.dataset, "condition": task.info.condition,
                             "task": task.info.name, "axis": axis, "bucket": label, **_fields(score(values))})
    return rows


def dynamics_rows(tasks, model_exposures: list[ModelExposure]) -> list[dict]:
    """Accuracy against training step, for questions whose evidence was read by that step vs not yet.

    Only for checkpoints of one run (same checkpoint folder) at two or more steps; a question
    counts as read when its first evidence shard is below the step's surely-read shards.
    """
    by_run: dict[str, list[ModelExposure]] = {}
    for m in model_exposures:
        if m.run_key is not None and m.step is not None:
            by_run.setdefault(m.run_key, []).append(m)
    rows = []
    for run_key, members in by_run.items():
        if len({m.step for m in members}) < 2:
            continue
        for member in sorted(members, key=lambda m: m.step):
            for task in tasks:
                if task.model != member.model or not _eligible(task, {member.model: member}):
                    continue
                statuses = _statuses(task, member.exposure)
                for label, wanted in (("read by this step", "seen"), ("not yet read", "unseen")):
                    values = [v for v, s in zip(task.values, statuses) if s == wanted]
                    rows.append({"run": Path(run_key).name, "step": member.step, "model": member.model,
                                 "dataset": task.info.dataset, "condition": task.info.condition,
                                 "task": task.info.name, "questions": label, **_fields(score(values))})
    return rows


def _fields(s) -> dict:
    low, high = s.ci
    return {"n": s.n, "correct": s.correct, "accuracy_pct": round(s.pct, 4) if s.n else float("nan"),
            "ci_low_pct": round(low, 4) if s.n else float("nan"), "ci_high_pct": round(high, 4) if s.n else float("nan")}
