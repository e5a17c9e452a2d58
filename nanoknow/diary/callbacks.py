"""Trainer callbacks of ``diary finetune``: plateau stop with best-checkpoint saving, a time limit, a JSONL log."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path

from transformers import TrainerCallback

log = logging.getLogger(__name__)

#: Selectable validation metrics -> whether higher is better.
SELECTABLE = {"exact_recall": True, "count_accuracy": True, "entry_accuracy": True, "loss": False}


def _finite(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


class PlateauStop(TrainerCallback):
    """Keep the best validation, save it through ``save_best``, stop after ``patience`` evaluations without one.

    An evaluation improves on the best when its ``select`` metric is better by more than
    ``min_delta``, or (for a recall metric) is within ``min_delta`` of it and the validation
    loss is lower by more than ``min_delta``: while recall has not moved yet (a fresh
    fine-tune often recalls nothing for a while) a falling validation loss still counts as
    progress, so training stops only when both have plateaued. NaN (``entry_accuracy`` with no
    compared entry) ranks below every number.
    """

    def __init__(self, select: str, patience: int, min_delta: float,
                 save_best: Callable[[object, object, int, dict], None]):
        if select not in SELECTABLE:
            raise ValueError(f"unknown validation metric {select!r}; expected one of {tuple(SELECTABLE)}")
        self.select, self.patience, self.min_delta, self.save_best = select, patience, min_delta, save_best
        self.best_metrics: dict | None = None
        self.best_step: int | None = None
        self.evaluations_without_improvement = 0
        self.stopped_early = False
        self.last_evaluated_step: int | None = None

    def _key(self, metrics: dict) -> tuple[float, float]:
        loss = _finite(metrics.get("eval_loss"))
        loss = math.inf if loss is None else loss
        if self.select == "loss":
            return -loss, 0.0
        value = _finite(metrics.get(f"eval_{self.select}"))
        return (-math.inf if value is None else value), -loss

    def improves(self, metrics: dict) -> bool:
        """Whether ``metrics`` (an evaluation's, ``eval_`` keys) improve on the best so far."""
        if self.best_metrics is None:
            return True
        (value, neg_loss), (best, best_neg_loss) = self._key(metrics), self._key(self.best_metrics)
        if self.select == "loss":
            return value > best + self.min_delta
        if value > best + self.min_delta:
            return True
        tied = value == best or abs(value - best) <= self.min_delta
        return tied and neg_loss > best_neg_loss + self.min_delta

    def on_evaluate(self, args, state, control, metrics=None, model=None, processing_class=None, **kwargs):
        metrics = metrics or {}
        self.last_evaluated_step = state.global_step
        if self.improves(metrics):
            self.best_metrics, self.best_step = dict(metrics), state.global_step
            self.evaluations_without_improvement = 0
            self.save_best(model, processing_class, state.global_step, dict(metrics))
            log.info("step %d: new best validation (%s %s, loss %s)", state.global_step, self.select,
                     metrics.get(f"eval_{self.select}"), metrics.get("eval_loss"))
        else:
            self.evaluations_without_improvement += 1
            log.info("step %d: no improvement on step %s (%d of patience %d)", state.global_step, self.best_step,
                     self.evaluations_without_improvement, self.patience)
            if self.evaluations_without_improvement >= self.patience:
                self.stopped_early = True
                control.should_training_stop = True
        return control


class TimeLimit(TrainerCallback):
    """Stop training after ``max_seconds`` of wall time, evaluating the last step first."""

    def __init__(self, max_seconds: float | None):
        self.max_seconds = max_seconds
        self.start = time.monotonic()
        self.reached = False

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_step_end(self, args, state, control, **kwargs):
        if self.max_seconds is not None and time.monotonic() - self.start >= self.max_seconds and not self.reached:
            self.reached = True
            control.should_training_stop = True
            control.should_evaluate = True
        return control


class JsonlLog(TrainerCallback):
    """Append every Trainer log (training loss, validation metrics) as one JSON line to ``path``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.start = time.monotonic()

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.monotonic()

    def on_log(self, args, state, control, logs=None, **kwargs):
        record = {"step": state.global_step, "epoch": state.epoch,
                  "seconds": round(time.monotonic() - self.start, 1)}
        for key, value in (logs or {}).items():
            record[key] = _finite(value) if isinstance(value, float) else value
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
