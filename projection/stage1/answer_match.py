"""Answer matching: lowercase + collapsed whitespace substring, with offsets in the original text.

The rule (DESIGN.md, as the released projection): a gold answer matches a document when the
lowercased answer, with every run of whitespace collapsed to one space and ends stripped, is a
substring of the lowercased document with its whitespace runs collapsed the same way.

Public: :func:`normalize`, :func:`answers_in_text`, :func:`find_first_match`, :class:`Match`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_WS = re.compile(r"\s+")
_MULTI_WS = re.compile(r"\s{2,}")  # only runs of 2+ characters shift offsets when collapsed


def normalize(text: str) -> str:
    """Lowercase and collapse whitespace runs to one space (ends kept as one space)."""
    return _WS.sub(" ", text.lower())


def normalize_answer(answer: str) -> str:
    return normalize(answer).strip()


@dataclass(frozen=True)
class Match:
    """The first place a gold answer occurs in a document (offsets into the original text)."""

    answer: str          # the gold answer as given
    char_start: int      # offset of the match's first character in the original text
    char_end: int        # offset one past its last character


def answers_in_text(text: str, answers: list[str], *, normalized_text: str | None = None) -> list[str]:
    """The gold answers (in the given order, without duplicates) that occur in ``text``."""
    norm = normalized_text if normalized_text is not None else normalize(text)
    found = []
    for answer in answers:
        key = normalize_answer(answer)
        if key and key in norm and answer not in found:
            found.append(answer)
    return found


def normalized_with_offsets(text: str) -> tuple[str, list[int]]:
    """Normalized text and, for each of its characters, the offset of its source character."""
    chars: list[str] = []
    offsets: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not in_space:
                chars.append(" ")
                offsets.append(i)
            in_space = True
            continue
        in_space = False
        low = ch.lower()  # may be longer than one character (e.g. "İ")
        chars.extend(low)
        offsets.extend([i] * len(low))
    offsets.append(len(text))
    return "".join(chars), offsets


def find_first_match(text: str, answers: list[str], *, normalized_text: str | None = None) -> Match | None:
    """The earliest occurrence in ``text`` of any gold answer (the longest answer on a tie).

    Returns None when no answer occurs. Offsets refer to the original ``text``.
    ``normalized_text`` (``normalize(text)``) may be passed when already computed.
    """
    norm = normalized_text if normalized_text is not None else normalize(text)
    best: tuple[int, int, str] | None = None  # (start, -length, answer)
    for answer in answers:
        key = normalize_answer(answer)
        if not key:
            continue
        pos = norm.find(key)
        if pos != -1 and (best is None or (pos, -len(key)) < best[:2]):
            best = (pos, -len(key), answer)
    if best is None:
        return None
    pos, neg_len, answer = best
    last = pos - neg_len - 1  # normalized index of the match's last character (never a space)
    if len(text.lower()) == len(text):  # lowercasing kept every character's length: map runs only
        start, end = _to_original(text, pos, last)
        return Match(answer=answer, char_start=start, char_end=end + 1)
    mapped, offsets = normalized_with_offsets(text)
    assert mapped == norm  # the same normalization, char for char
    return Match(answer=answer, char_start=offsets[pos], char_end=offsets[last] + 1)


def _to_original(text: str, *positions: int) -> tuple[int, ...]:
    """Original offsets of normalized indices, walking whitespace runs only as far as needed."""
    to_original = whitespace_run_mapper(text, until=max(positions))
    return tuple(to_original(p) for p in positions)


def whitespace_run_mapper(text: str, until: int | None = None):
    """Map a normalized index (up to ``until``) to the original one, from whitespace runs."""
    starts, norm_starts, removed_after = [], [], []
    removed = 0
    for m in _MULTI_WS.finditer(text):
        if until is not None and m.start() - removed > until:
            break
        starts.append(m.start())
        norm_starts.append(m.start() - removed)
        removed += m.end() - m.start() - 1
        removed_after.append(removed)

    def to_original(p: int) -> int:
        i = bisect.bisect_right(norm_starts, p) - 1
        if i < 0:
            return p
        if p == norm_starts[i]:
            return starts[i]
        return p + removed_after[i]

    return to_original
