"""Scoring a recall: parse entries by their title lines, compare with the target.

Whitespace is normalised (each line stripped, runs of blanks collapsed, blank lines
dropped); nothing else is forgiven: case, punctuation, attribute order and values count.

Per question (``process_results``):

* ``exact_recall`` – 1.0 if the whole (normalised) response equals the target answer.
* ``count_accuracy`` – 1.0 if the number of recalled entries equals the target's.
* ``count_error`` – recalled minus target entries (its mean is reported; the per-sample
  values in ``--log_samples`` output give the distribution).
* ``entry_accuracy`` – ``[error-free, compared]``: recalled entries whose title line is one
  of the target's titles are compared with that target entry; the task reports the pooled
  share ``sum(error-free) / sum(compared)`` (NaN if no recalled entry had a target title).
"""

from __future__ import annotations

import math
import re

_TITLE = re.compile(r"^(?P<name>.+)'s Diary Entry (?P<index>\d+)$")
_BLANKS = re.compile(r"\s+")


def normalized_lines(text: str) -> list[str]:
    """Non-blank lines of ``text``, stripped, inner whitespace runs collapsed to one space."""
    lines = (_BLANKS.sub(" ", line).strip() for line in text.splitlines())
    return [line for line in lines if line]


def is_title(line: str) -> bool:
    """Whether a normalised line is an entry title ``{name}'s Diary Entry {i}``."""
    return _TITLE.match(line) is not None


def parse_entries(text: str) -> list[tuple[str, ...]]:
    """The entries of ``text``: each a tuple of normalised lines starting with its title.

    Lines before the first title belong to no entry and are ignored here.
    """
    entries: list[list[str]] = []
    for line in normalized_lines(text):
        if is_title(line):
            entries.append([line])
        elif entries:
            entries[-1].append(line)
    return [tuple(entry) for entry in entries]


def score_recall(response: str, target: str) -> dict:
    """All metrics of one response against its target answer (see module docstring)."""
    recalled, expected = parse_entries(response), parse_entries(target)
    by_title = {entry[0]: entry for entry in expected}
    compared = [entry for entry in recalled if entry[0] in by_title]
    correct = sum(entry == by_title[entry[0]] for entry in compared)
    return {
        "exact_recall": float(normalized_lines(response) == normalized_lines(target)),
        "count_accuracy": float(len(recalled) == len(expected)),
        "count_error": float(len(recalled) - len(expected)),
        "entry_accuracy": [correct, len(compared)],
    }


def process_results(doc: dict, results: list[str]) -> dict:
    """lm-eval hook: score the first generation against ``doc["answer"]``."""
    return score_recall(results[0] if results else "", doc["answer"])


def pooled_share(items: list) -> float:
    """lm-eval aggregation of ``entry_accuracy``: sum of error-free over sum of compared entries."""
    correct = sum(item[0] for item in items)
    compared = sum(item[1] for item in items)
    return correct / compared if compared else math.nan
