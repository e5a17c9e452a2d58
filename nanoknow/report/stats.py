"""Per-sample scores, Wilson score intervals and answer-frequency buckets for ``nanoknow report``."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: answer-frequency buckets (number of qrels documents), as in the paper
BUCKETS: tuple[tuple[str, int, float], ...] = (("1-5", 1, 5), ("6-20", 6, 20), ("21-50", 21, 50),
                                               ("51+", 51, math.inf))


@dataclass(frozen=True)
class Score:
    """``correct`` of ``n`` per-sample 0/1 scores, as a percentage with a 95% Wilson interval."""

    n: int
    correct: int

    @property
    def pct(self) -> float:
        return 100.0 * self.correct / self.n if self.n else math.nan

    @property
    def ci(self) -> tuple[float, float]:
        """95% Wilson score interval, in percent."""
        low, high = wilson_interval(self.correct, self.n)
        return 100.0 * low, 100.0 * high


def wilson_interval(correct: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (fractions, SciPy's); (nan, nan) when n == 0."""
    if n == 0:
        return math.nan, math.nan
    from scipy.stats import binomtest

    interval = binomtest(correct, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(interval.low), float(interval.high)


def score(values: list[float]) -> Score:
    """Score of per-sample 0/1 values (anything > 0.5 counts as correct)."""
    return Score(len(values), sum(1 for v in values if v > 0.5))


def bucket_of(frequency) -> str | None:
    """The bucket label of an answer frequency (qrels documents); None for 0, missing or invalid."""
    try:
        value = int(frequency)
    except (TypeError, ValueError):
        return None
    for label, low, high in BUCKETS:
        if low <= value <= high:
            return label
    return None


#: The per-sample metric the report scores, and its label (it is the paper's "exact match").
METRIC = "has_answer"
METRIC_LABEL = "has_answer (the paper's exact match)"
#: What older NanoKnow runs called the same metric (read as a fallback).
OLD_METRIC = "exact_match"


def has_answer_values(samples: list[dict], where: str) -> list[float]:
    """Per-sample ``has_answer`` (0/1) of logged samples (``exact_match`` in runs made before the
    rename); error naming ``where`` if absent."""
    from nanoknow_common.errors import NanoKnowInputError

    values = []
    for index, sample in enumerate(samples):
        value = sample.get(METRIC, sample.get(OLD_METRIC))
        if not isinstance(value, (int, float)):
            raise NanoKnowInputError(f"sample {index} has no numeric {METRIC}", file=where)
        values.append(float(value))
    return values


def judge_values(samples: list[dict], judge_cache: str | None) -> tuple[list[float] | None, str | None]:
    """Per-sample ``llm_judge`` verdicts (1 correct, 0 not or unparseable) from the judge cache.

    Returns ``(values, None)``, or ``(None, reason)`` when the samples carry no judge items or
    some verdicts are not in the cache.
    """
    if not samples or not any(isinstance(s.get("llm_judge"), dict) for s in samples):
        return None, None
    from nanoknow_tasks.judge.metric import sample_verdicts

    verdicts = sample_verdicts(samples, judge_cache)
    missing = sum(v is None for v in verdicts)
    if missing:
        return None, f"{missing} of {len(samples)} llm_judge verdicts are not in the judge cache"
    return [1.0 if v.correct is True else 0.0 for v in verdicts], None
