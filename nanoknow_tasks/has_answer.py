"""``has_answer``, the paper's "exact match" as NanoKnow (and DPR/Pyserini) score it: the answer's
tokens appear in the prediction (not lm-eval's ``exact_match``, which is string equality).

The rule: Unicode NFD-normalise both texts, split each into tokens — a run of letters, digits
and combining marks, or any single other character that is neither a separator nor a control
character — lower-case the tokens, and call the prediction correct when the token sequence of
any gold answer occurs contiguously in it. (As in the original rule, an answer with no tokens
matches any prediction.) No pyserini import is needed at scoring time.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import regex

_TOKEN = regex.compile(r"([\p{L}\p{N}\p{M}]+)|([^\p{Z}\p{C}])",
                       flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)


def answer_tokens(text: str) -> list[str]:
    """Lower-cased tokens of ``text`` after NFD normalisation."""
    return [match.group().lower() for match in _TOKEN.finditer(unicodedata.normalize("NFD", text))]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    width = len(needle)
    return any(haystack[i:i + width] == needle for i in range(len(haystack) - width + 1))


def has_answer(prediction: str, answers: Iterable[str]) -> bool:
    """True when any gold answer's token sequence occurs in the prediction's tokens."""
    predicted = answer_tokens(prediction)
    return any(_contains(predicted, answer_tokens(answer)) for answer in answers)
