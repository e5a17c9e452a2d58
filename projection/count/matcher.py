"""The two answer-count rules and one multi-pattern matcher over all answers of all questions.

Rules (a document counts once for a question when *any* of its gold answers matches):

* ``substring``: stage 1's rule (:mod:`projection.stage1.answer_match`): the answer lowercased, with
  whitespace runs collapsed and ends stripped, is a substring of the document lowercased
  with whitespace runs collapsed. Counts equal what stage 1 would match.
* ``token``: the answer's tokens occur as a contiguous run of the document's tokens, both
  tokenised as ``has_answer`` does (:func:`nanoknow_tasks.has_answer.answer_tokens`: NFD,
  runs of letters/digits/marks or single other visible characters, lower-cased). An answer
  with no tokens at all (only spaces or control characters) is skipped: ``has_answer`` would
  match it in every document, which says nothing about the corpus.

The normalised answers of all questions are searched together with Aho-Corasick automata
(the Rust ``aho-corasick`` crate through ``ahocorasick_rs``, overlapping mode: every
occurrence of every key is reported), so a document is scanned a fixed number of times
whatever the number of answers.

Why the counts are exact:

* ``substring``. The document side is ``text.lower().split()``: ``str.split()`` and the
  ``\\s`` of :func:`~projection.stage1.answer_match.normalize` use the same whitespace predicate
  (``str.isspace``), so the words joined by single spaces are ``normalize(text)`` without its
  possible leading and trailing space, which a stripped non-empty key never needs. A key
  without a space lies inside one word, so it is searched in the document's *distinct*
  words joined by newlines (no key and no word contains a newline): a frequent key such as
  "one" is then reported once per word form instead of once per occurrence. Keys of one or
  two UTF-8 bytes ("1", "o", "no", "é") are looked up in tables of the bytes and byte pairs
  of that text: UTF-8 is self-synchronising, so a key's bytes occur in the text's bytes
  exactly when the key occurs in the text. Keys with a space are searched in the whole
  normalised text.
* ``token``. A document's tokens are found on ``NFD(text).lower()``. Lower-casing keeps
  each character's token class and maps a one-character token to one character (the tests
  check every code point), so this gives the lower-cased tokens; the one context-dependent
  lower-casing (Greek capital sigma, final or not) is avoided by lower-casing token by token
  when the text has one. The classes on ASCII are written as a stdlib ``re`` pattern (NFD is
  the identity on ASCII texts); in other texts that pattern takes each non-ASCII character
  into the run of letters and digits around it, and only those runs are tokenised again with
  the Unicode classes (an ASCII space, control or punctuation character ends a token under
  both). One-token keys are looked up in the set of the document's tokens. Longer keys are searched as ``" t1 t2 "`` in
  ``" " + " ".join(tokens) + " "``: no token contains a space (its characters are letters,
  digits, marks or one character outside the separator (Z) and control (C) classes), so
  the spaces of the stream are exactly the token boundaries, and such a key occurs in the
  stream exactly when its tokens occur as a contiguous run of the document's tokens.

A document counts once per question: the (document, question) pairs of a batch are marked
in a boolean matrix before they are summed.

Public: :class:`AnswerMatcher`, :func:`substring_key`, :func:`token_key`,
:func:`document_tokens`, :data:`RULES`.
"""

from __future__ import annotations

import re
import unicodedata
from operator import itemgetter
from typing import Iterable, Sequence

import ahocorasick_rs
import numpy as np
import regex

from nanoknow_tasks.has_answer import answer_tokens
from projection.stage1.answer_match import normalize

#: The two rules, in the order every count pair ``[substring, token]`` uses.
RULES = ("substring", "token")

# The classes of nanoknow_tasks.has_answer._TOKEN without capture groups; its flags change
# no character's class (checked over every code point by the tests).
_TOKEN_FLAT = regex.compile(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]")
# The same classes on lower-cased ASCII: [a-z0-9] are L/N, space is Z, \x00-\x1f and \x7f
# are C, every other printable character is a one-character token.
_TOKEN_ASCII = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
# ASCII tokens, with every non-ASCII character taken into the run around it; such runs are
# tokenised again with _TOKEN_FLAT (the characters around a run end tokens either way).
_TOKEN_MIXED = re.compile(r"(?:[a-z0-9]|[^\x00-\x7f])+|[!-/:-@\[-`{-~]")
_CAPITAL_SIGMA = "\u03a3"  # the only character whose lower case depends on its neighbours
_SHORT_BYTES = 2  # substring keys of at most this many UTF-8 bytes go to the byte tables
_MATRIX_CELLS = 1 << 24  # bound on batch x questions of the (document, question) matrix
_PATTERN = itemgetter(0)


def substring_key(answer: str) -> str:
    """An answer as stage 1 matches it (lowercase, whitespace runs collapsed, stripped)."""
    return normalize(answer).strip()


def token_key(answer: str) -> tuple[str, ...]:
    """An answer's ``has_answer`` tokens."""
    return tuple(answer_tokens(answer))


def document_tokens(text: str) -> list[str]:
    """``answer_tokens(text)``, computed on the lower-cased text with ASCII patterns where they suffice."""
    if text.isascii():
        return _TOKEN_ASCII.findall(text.lower())
    nfd = unicodedata.normalize("NFD", text)
    if _CAPITAL_SIGMA in nfd:
        return [token.lower() for token in _TOKEN_FLAT.findall(nfd)]
    tokens: list[str] = []
    for token in _TOKEN_MIXED.findall(nfd.lower()):
        if token.isascii():
            tokens.append(token)
        else:
            tokens += _TOKEN_FLAT.findall(token)
    return tokens


class _AutomatonKeys:
    """Keys found by an Aho-Corasick automaton (every occurrence, overlaps included).

    ``keys`` maps each key to its pattern id among all keys of its rule; :meth:`find` returns
    the pattern ids found in a text.
    """

    def __init__(self, keys: dict[str, int]):
        self.ids = keys
        self.automaton = None
        if keys:
            self.automaton = ahocorasick_rs.AhoCorasick(
                list(keys), implementation=ahocorasick_rs.Implementation.ContiguousNFA)
            self.pattern_ids = np.fromiter(keys.values(), dtype=np.int64, count=len(keys))

    def find(self, text: str) -> Iterable[int]:
        if self.automaton is None or not text:
            return ()
        hits = set(map(_PATTERN, self.automaton.find_matches_as_indexes(text, overlapping=True)))
        return self.pattern_ids[list(hits)].tolist() if hits else ()


class _ShortKeys:
    """Keys of one or two UTF-8 bytes, found from the byte and byte-pair tables of a text."""

    def __init__(self, keys: dict[str, int]):
        self.ids = keys
        # table value: 1 + the key's slot in ``pattern_ids``; 0: no key
        self.single = np.zeros(256, dtype=np.int64)
        self.pairs = np.zeros(1 << 16, dtype=np.int64)
        self.pattern_ids = np.fromiter(keys.values(), dtype=np.int64, count=len(keys))
        for slot, key in enumerate(keys, start=1):
            data = key.encode("utf-8", "surrogatepass")
            if len(data) == 1:
                self.single[data[0]] = slot
            else:
                self.pairs[data[0] << 8 | data[1]] = slot
        self.has_single = bool(self.single.any())
        self.has_pairs = bool(self.pairs.any())

    def find(self, text: str) -> Iterable[int]:
        if not self.ids or not text:
            return ()
        data = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        hit = np.zeros(len(self.pattern_ids) + 1, dtype=bool)
        if self.has_single:
            hit[self.single[data]] = True
        if self.has_pairs and len(data) > 1:
            hit[self.pairs[(data[:-1].astype(np.int64) << 8) | data[1:]]] = True
        return self.pattern_ids[np.flatnonzero(hit[1:])].tolist()


class _WholeKeys:
    """Keys that are a whole item (a token): found by intersecting with the set of items."""

    def __init__(self, keys: dict[str, int]):
        self.ids = keys

    def find(self, items: set[str]) -> Iterable[int]:
        ids = self.ids
        return [ids[key] for key in ids.keys() & items]


class _Rule:
    """The keys of one rule and the questions of each key (one pattern id per distinct key)."""

    def __init__(self):
        self.pattern_of: dict[str, int] = {}
        self.questions: list[list[int]] = []

    def add(self, key: str, question: int) -> None:
        pattern = self.pattern_of.setdefault(key, len(self.questions))
        if pattern == len(self.questions):
            self.questions.append([])
        if not self.questions[pattern] or self.questions[pattern][-1] != question:
            self.questions[pattern].append(question)  # questions arrive in order: no repeats

    def select(self, wanted) -> dict[str, int]:
        return {key: pattern for key, pattern in self.pattern_of.items() if wanted(key)}

    def finish(self) -> None:
        """Questions of each pattern as CSR arrays (``start[p]:start[p + 1]`` into ``index``)."""
        sizes = np.fromiter((len(q) for q in self.questions), dtype=np.int64, count=len(self.questions))
        self.start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.index = np.fromiter((i for q in self.questions for i in q), dtype=np.int64, count=int(sizes.sum()))

    def question_pairs(self, found: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """``(document, question)`` index arrays of the patterns found per document."""
        docs = np.repeat(np.arange(len(found), dtype=np.int64),
                         np.fromiter(map(len, found), dtype=np.int64, count=len(found)))
        patterns = np.fromiter((p for doc in found for p in doc), dtype=np.int64, count=len(docs))
        widths = self.start[patterns + 1] - self.start[patterns]
        total = int(widths.sum())
        # index positions start[p] .. start[p + 1] - 1 of every pattern, concatenated
        first = np.repeat(self.start[patterns] - np.concatenate([[0], np.cumsum(widths)[:-1]]), widths)
        questions = self.index[first + np.arange(total, dtype=np.int64)]
        return np.repeat(docs, widths), questions


class AnswerMatcher:
    """Which questions' gold answers a document contains, under both rules.

    ``answers[i]`` are the gold answers of question ``i``; results are question indices.
    """

    def __init__(self, answers: Sequence[Sequence[str]]):
        self.num_questions = len(answers)
        substring, token = _Rule(), _Rule()
        for index, question_answers in enumerate(answers):
            for answer in question_answers:
                key = substring_key(answer)
                if key:
                    substring.add(key, index)
                tokens = token_key(answer)
                if tokens:
                    token.add(" " + " ".join(tokens) + " ", index)
        substring.finish()
        token.finish()
        self._substring, self._token = substring, token

        def short(key):
            return len(key.encode("utf-8", "surrogatepass")) <= _SHORT_BYTES

        self._phrases = _AutomatonKeys(substring.select(lambda key: " " in key))
        self._short_words = _ShortKeys(substring.select(lambda key: " " not in key and short(key)))
        self._words = _AutomatonKeys(substring.select(lambda key: " " not in key and not short(key)))
        # one-token keys are stored as the bare token, looked up in the set of tokens
        self._one_token = _WholeKeys({key[1:-1]: pattern for key, pattern in
                                      token.select(lambda key: key.count(" ") == 2).items()})
        self._token_runs = _AutomatonKeys(token.select(lambda key: key.count(" ") > 2))
        self.num_keys = {"substring": len(substring.questions), "token": len(token.questions)}

    def _patterns(self, texts: Sequence[str]) -> tuple[list[list[int]], list[list[int]]]:
        """Per text, the pattern ids found under each rule.

        Each kind of key runs over the whole batch before the next: the automata are large,
        and one at a time stays in the CPU caches.
        """
        substring: list[list[int]] = [[] for _ in texts]
        token: list[list[int]] = [[] for _ in texts]
        words = [text.lower().split() for text in texts]
        distinct = ["\n".join(set(text_words)) for text_words in words]
        for text, found in zip(distinct, substring):
            found.extend(self._words.find(text))
        for text, found in zip(distinct, substring):
            found.extend(self._short_words.find(text))
        del distinct
        if self._phrases.automaton is not None:
            for text_words, found in zip(words, substring):
                found.extend(self._phrases.find(" ".join(text_words)))
        del words
        tokens = [document_tokens(text) for text in texts]
        for text_tokens, found in zip(tokens, token):
            found.extend(self._one_token.find(set(text_tokens)))
        if self._token_runs.automaton is not None:
            for text_tokens, found in zip(tokens, token):
                if len(text_tokens) > 1:
                    found.extend(self._token_runs.find(" " + " ".join(text_tokens) + " "))
        return substring, token

    def match(self, text: str) -> tuple[set[int], set[int]]:
        """Question indices with an answer in ``text``: ``(substring rule, token rule)``."""
        substring, token = self._patterns([text])
        return ({int(q) for q in self._substring.question_pairs(substring)[1]},
                {int(q) for q in self._token.question_pairs(token)[1]})

    def count(self, texts: Iterable[str | None]) -> tuple[np.ndarray, np.ndarray, int]:
        """Per question, in how many of ``texts`` an answer matches under each rule (a text
        counts once per question), and the number of texts. ``None`` is an empty text."""
        counts = np.zeros((2, self.num_questions), dtype=np.int64)
        batch = max(1, min(256, _MATRIX_CELLS // max(1, self.num_questions)))
        seen = np.zeros((batch, self.num_questions), dtype=bool)
        docs = 0
        pending: list[str] = []

        def flush():
            for rule, found, row in zip((self._substring, self._token), self._patterns(pending), counts):
                doc_index, question = rule.question_pairs(found)
                seen[: len(pending)] = False
                seen[doc_index, question] = True
                row += seen[: len(pending)].sum(axis=0)
            pending.clear()

        for text in texts:
            docs += 1
            if text:
                pending.append(text)
                if len(pending) == batch:
                    flush()
        if pending:
            flush()
        return counts[0], counts[1], docs
