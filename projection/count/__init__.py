"""Whole-corpus answer counts: for every question, the documents holding a gold answer.

Python API: :class:`CountSettings` + :func:`count_answers` (run or resume a count),
:func:`read_counts` (its ``counts.jsonl`` as ``{qid: AnswerDocs}``), :class:`AnswerMatcher`
(the two rules over any texts). CLI: ``nanoknow count`` (flags in :mod:`nanoknow.commands.count`).
"""

from projection.count.counting import CountSettings, count_answers
from projection.count.matcher import RULES, AnswerMatcher
from projection.count.results import AnswerDocs, read_counts

__all__ = ["AnswerDocs", "AnswerMatcher", "CountSettings", "RULES", "count_answers", "read_counts"]
