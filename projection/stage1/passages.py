"""Passage extraction: a window of N words centred on the first answer match.

Words are whitespace-separated tokens. The window holds ``window_words // 2`` words before
the word containing the match and the rest from that word on (fewer at the document's ends).
The passage is the original text between the window's first and last word (inner whitespace
kept as it is), so ``passage_start + (match_offset - passage_start)`` points at the answer.

Public: :func:`extract_passage`, :func:`passage_around`, :class:`Passage`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from projection.stage1.answer_match import Match, find_first_match

DEFAULT_WINDOW_WORDS = 200
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Passage:
    """A window of the document around an answer match."""

    text: str            # the passage (original text between its first and last word)
    start: int           # character offset of the passage in the document
    end: int             # character offset one past its end
    match_offset: int    # character offset of the answer match in the document
    matched_answer: str  # the gold answer that matched


def passage_around(text: str, char_offset: int, *, window_words: int = DEFAULT_WINDOW_WORDS) -> tuple[str, int, int]:
    """``(passage, start, end)``: ``window_words`` words of ``text`` centred on ``char_offset``.

    Only the region around the offset is tokenized (widened until it holds ``window_words``
    words on each side, or reaches the document's ends): long documents cost no more.
    """
    if window_words < 1:
        raise ValueError("window_words must be at least 1")
    reach = 16 * window_words
    while True:
        lo, hi = max(0, char_offset - reach), min(len(text), char_offset + reach)
        while lo > 0 and not text[lo - 1].isspace():
            lo -= 1
        while hi < len(text) and not text[hi].isspace():
            hi += 1
        spans = [m.span() for m in _WORD.finditer(text, lo, hi)]
        ends = [e for _, e in spans]
        centre = bisect.bisect_right(ends, char_offset)
        if (centre >= window_words or lo == 0) and (len(spans) - centre >= window_words or hi == len(text)):
            break
        reach *= 4
    if not spans:
        return "", 0, 0
    centre = min(centre, len(spans) - 1)
    first = max(0, centre - window_words // 2)
    last = min(len(spans), first + window_words)
    first = max(0, last - window_words)
    start, end = spans[first][0], spans[last - 1][1]
    return text[start:end], start, end


def passage_around_full_text(text: str, char_offset: int, window_words: int) -> tuple[str, int, int]:
    """Reference implementation tokenizing the whole text (for tests)."""
    spans = [m.span() for m in _WORD.finditer(text)]
    if not spans:
        return "", 0, 0
    ends = [e for _, e in spans]
    centre = min(bisect.bisect_right(ends, char_offset), len(spans) - 1)
    first = max(0, centre - window_words // 2)
    last = min(len(spans), first + window_words)
    first = max(0, last - window_words)
    start, end = spans[first][0], spans[last - 1][1]
    return text[start:end], start, end


def extract_passage(text: str, answers: list[str], *, window_words: int = DEFAULT_WINDOW_WORDS,
                    match: Match | None = None) -> Passage | None:
    """The window around the first gold-answer match in ``text``, or None if no answer occurs."""
    match = match or find_first_match(text, answers)
    if match is None:
        return None
    passage, start, end = passage_around(text, match.char_start, window_words=window_words)
    return Passage(text=passage, start=start, end=end, match_offset=match.char_start,
                   matched_answer=match.answer)
