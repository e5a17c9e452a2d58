"""Stage 1: BM25 top-k with pyserini's batch search, then answer matching on every hit.

Texts of the hits come from the parquet corpus (one batched read per shard for all hits of a
batch of questions; each distinct document is read and normalized once), or, for an index
that stores raw documents (the released FineWeb-Edu index), from the index itself.

Public: :class:`CorpusTexts`, :class:`IndexTexts`, :func:`bm25_batch`,
:func:`match_hits`, :func:`stage1`.
"""

from __future__ import annotations

import json
import logging
import re

from projection.data.files import Question
from projection.stage1.answer_match import normalize_answer, find_first_match, normalize
from projection.corpus.shards import Corpus
from projection.stage1.passages import DEFAULT_WINDOW_WORDS, passage_around

log = logging.getLogger(__name__)

#: Whitespace that normalization changes: a non-space whitespace character or two spaces.
_IRREGULAR_SPACE = re.compile(r"[^\S ]|  ")


class CorpusTexts:
    """Document texts read from the parquet corpus (batched per shard)."""

    def __init__(self, corpus: Corpus | str):
        self.corpus = corpus if isinstance(corpus, Corpus) else Corpus(corpus)

    def texts(self, doc_ids: list[str]) -> dict[str, str]:
        return self.corpus.read_documents(doc_ids)


class IndexTexts:
    """Document texts from an index that stores raw documents (``contents`` or ``text`` field)."""

    def __init__(self, searcher, threads: int = 1):
        self.searcher = searcher
        self.threads = threads

    def texts(self, doc_ids: list[str]) -> dict[str, str]:
        docs = self.searcher.batch_doc(list(doc_ids), self.threads)
        out = {}
        for doc_id in doc_ids:
            doc = docs.get(doc_id)
            raw = doc.raw() if doc is not None else None
            if raw is None:
                from nanoknow_common.errors import NanoKnowInputError

                raise NanoKnowInputError(f"document {doc_id} has no stored raw text in the index; pass --corpus",
                                         field="--corpus")
            try:
                parsed = json.loads(raw)
                out[doc_id] = parsed.get("contents", parsed.get("text", "")) if isinstance(parsed, dict) else raw
            except json.JSONDecodeError:
                out[doc_id] = raw
        return out


def bm25_batch(searcher, questions: list[Question], *, k: int = 100, threads: int = 1) -> dict[str, list[tuple[str, float]]]:
    """``{qid: [(doc_id, score), ...]}`` ranked, from one multi-threaded batch search."""
    from nanoknow_common.interrupts import call_interruptibly

    if not questions:
        return {}
    # one long Java call: run so that a stop signal is handled at once (see nanoknow_common.interrupts)
    hits = call_interruptibly(searcher.batch_search, [q.question for q in questions], [q.qid for q in questions],
                              k=k, threads=threads)
    return {q.qid: [(h.docid, float(h.score)) for h in hits.get(q.qid, [])] for q in questions}


def match_hits(question: Question, hits: list[tuple[str, float]], texts: dict[str, str],
               normalized: dict[str, str], *, window_words: int = DEFAULT_WINDOW_WORDS,
               lowered: dict[str, str] | None = None) -> list[dict]:
    """Candidates of one question: every hit whose text contains a gold answer, in rank order.

    ``normalized`` and ``lowered`` cache each document's normalized / lowercased text across
    the questions of a batch."""
    lowered = {} if lowered is None else lowered
    keys = [(a, normalize_answer(a)) for a in question.answers]
    keys = [(a, k, max(k.split(" "), key=len)) for a, k in keys if k]
    out = []
    for rank, (doc_id, score) in enumerate(hits, start=1):
        found = []
        low = lowered.get(doc_id)
        if low is None:
            low = lowered[doc_id] = texts[doc_id].lower()
        for answer, key, longest_word in keys:
            # a key without spaces matches the normalized text iff it matches the lowercased
            # one (whitespace runs only ever join or split around spaces); a key with spaces
            # can only match if its longest word occurs in the lowercased text
            if longest_word not in low or answer in found:
                continue
            if key in low:  # an occurrence in the lowercased text survives normalization
                found.append(answer)
                continue
            if " " not in key or not _IRREGULAR_SPACE.search(low):
                continue  # then normalizing cannot create an occurrence
            haystack = normalized.get(doc_id)
            if haystack is None:
                haystack = normalized[doc_id] = normalize(texts[doc_id])
            if key in haystack:
                found.append(answer)
        if not found:
            continue
        text = texts[doc_id]
        match = find_first_match(text, found, normalized_text=normalized.get(doc_id))
        passage, start, _ = passage_around(text, match.char_start, window_words=window_words)
        out.append({"doc_id": doc_id, "rank": rank, "bm25_score": score, "matched_answer": match.answer,
                    "found_answers": found, "match_offset": match.char_start, "passage": passage,
                    "passage_start": start})
    return out


def stage1(searcher, text_source, questions: list[Question], *, k: int = 100, threads: int = 1,
           window_words: int = DEFAULT_WINDOW_WORDS) -> list[dict]:
    """BM25 + answer matching for a batch of questions: one record per question, in order."""
    ranked = bm25_batch(searcher, questions, k=k, threads=threads)
    wanted = list(dict.fromkeys(doc_id for q in questions for doc_id, _ in ranked[q.qid]))
    texts = text_source.texts(wanted) if wanted else {}
    normalized: dict[str, str] = {}
    lowered: dict[str, str] = {}
    records = []
    for q in questions:
        hits = ranked[q.qid]
        records.append({"qid": q.qid, "hits": len(hits),
                        "candidates": match_hits(q, hits, texts, normalized, window_words=window_words,
                                                 lowered=lowered)})
    return records
