"""``nanoknow build``: NanoKnow datasets with oracle passages and distractors, from qrels + corpus.

For every supported question the oracle is the first qrels document (in file order) whose
text contains a gold answer, cut to a window of words centred on the first match (the match's
character offset in the document is kept). Distractors are documents that contain no gold
answer and are not in the question's qrels: BM25 hard negatives from the question's own
ranking when an index is given, otherwise documents drawn at random (seeded per question)
from the corpus (for a remote prefix, from the shards the qrels use). A distractor's passage
is the window of words at the start of its document. Unsupported questions carry neither
(they serve closed-book comparisons).

Documents are read in batches (one query per shard per round), each at most once per round.
Supported questions are processed in chunks written to ``.work/``; a re-run resumes after the
last finished chunk and the final parquet files are byte-identical to an uninterrupted run.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from projection.data import layout
from projection.datasets import built_layout
from projection.stage1.answer_match import answers_in_text, normalize
from projection.corpus.shards import Corpus, canonical_doc_id, format_doc_id, parse_doc_id
from projection.data.data_root import resolve_data_dir
from nanoknow_common.errors import NanoKnowInputError
from projection.data.files import Question, load_questions, read_answers, read_qrels
from projection.stage1.passages import DEFAULT_WINDOW_WORDS, extract_passage, passage_around
from projection.datasets.squad_source import load_squad_contexts

log = logging.getLogger(__name__)

DEFAULT_DISTRACTORS = 8
#: How many more candidates than needed each distractor round reads (most are kept).
OVERSAMPLE = 2


@dataclass(frozen=True)
class BuildSettings:
    """Everything that decides the bytes of a build (recorded in build_info.json)."""

    dataset: str
    corpus_dir: str
    corpus: str
    index: str | None = None
    seed: int = 0
    window_words: int = DEFAULT_WINDOW_WORDS
    num_distractors: int = DEFAULT_DISTRACTORS
    squad_source: str | None = None
    chunk_size: int = 1000
    bm25_depth: int = 100


def _leading_passage(text: str, window_words: int) -> str:
    """The first ``window_words`` words of a document (a distractor's passage)."""
    return passage_around(text, 0, window_words=window_words)[0]


class _DistractorSource:
    """Yields candidate distractor doc ids for a question, best (or seeded-random) first."""

    def __init__(self, corpus: Corpus, settings: BuildSettings, shards: list[int]):
        self.corpus = corpus
        self.settings = settings
        self.searcher = None
        self.ranked: dict[str, list[str]] = {}
        if settings.index:
            from projection.index.lucene import open_searcher

            self.searcher = open_searcher(settings.index)
        self.shard_rows = {shard: corpus.num_rows(shard) for shard in shards}
        self.shards = [s for s in shards if self.shard_rows[s] > 0]

    def prepare(self, questions: list[Question]) -> None:
        """Run one batched BM25 search for the chunk (hard negatives), if an index is given."""
        if self.searcher is None:
            return
        from projection.stage1.retrieval import bm25_batch

        hits = bm25_batch(self.searcher, questions,
                          k=self.settings.bm25_depth)
        self.ranked = {qid: [canonical_doc_id(doc_id) for doc_id, _ in ranked] for qid, ranked in hits.items()}

    def candidates(self, question: Question, count: int, attempt: int) -> list[str]:
        """``count`` more candidates for ``question`` (``attempt`` counts earlier rounds)."""
        if self.searcher is not None:
            ranked = self.ranked.get(question.qid, [])
            return ranked[attempt * count:(attempt + 1) * count]
        rng = random.Random(f"{self.settings.seed}:{question.qid}:{attempt}")
        picks = []
        for _ in range(count):
            shard = rng.choice(self.shards)
            picks.append(format_doc_id(shard, rng.randrange(self.shard_rows[shard])))
        return picks


def _distractor_shards(corpus: Corpus, qrels: dict[str, list[str]]) -> list[int]:
    """Every shard of a local corpus; for a remote prefix (not listable), the shards the qrels use."""
    if not corpus.remote:
        return corpus.list_shards()
    return sorted({parse_doc_id(d)[0] for docs in qrels.values() for d in docs})


def _oracles(corpus: Corpus, questions: list[Question], qrels: dict[str, list[str]],
             window_words: int) -> dict[str, dict | None]:
    """First qrels document with a gold answer, per question; one batched read per round."""
    result: dict[str, dict | None] = {q.qid: None for q in questions}
    pending = [q for q in questions if qrels.get(q.qid)]
    depth = 0
    while pending:
        wanted = {q.qid: qrels[q.qid][depth] for q in pending}
        texts = corpus.read_documents(dict.fromkeys(wanted.values()))
        still = []
        for q in pending:
            doc_id = wanted[q.qid]
            passage = extract_passage(texts[doc_id], list(q.answers), window_words=window_words)
            if passage is not None:
                result[q.qid] = {"doc_id": canonical_doc_id(doc_id), "passage": passage.text,
                                 "answer": passage.matched_answer, "answer_offset": passage.match_offset,
                                 "passage_offset": passage.match_offset - passage.start}
            elif depth + 1 < len(qrels[q.qid]):
                still.append(q)
        pending, depth = still, depth + 1
    return result


def _distractors(corpus: Corpus, source: _DistractorSource, questions: list[Question],
                 qrels: dict[str, list[str]], settings: BuildSettings) -> dict[str, list[dict]]:
    """``num_distractors`` answer-free, non-relevant passages per question."""
    need = settings.num_distractors
    chosen: dict[str, list[dict]] = {q.qid: [] for q in questions}
    seen: dict[str, set[str]] = {q.qid: {canonical_doc_id(d) for d in qrels.get(q.qid, [])} for q in questions}
    pending = list(questions)
    attempt = 0
    max_attempts = 8 if source.searcher is None else max(1, settings.bm25_depth // (need * OVERSAMPLE) + 1)
    while pending and attempt < max_attempts:
        proposals = {q.qid: source.candidates(q, need * OVERSAMPLE, attempt) for q in pending}
        wanted = dict.fromkeys(d for ids in proposals.values() for d in ids)
        texts = corpus.read_documents(wanted) if wanted else {}
        normalized: dict[str, str] = {}
        still = []
        for q in pending:
            for doc_id in proposals[q.qid]:
                if len(chosen[q.qid]) == need:
                    break
                if doc_id in seen[q.qid]:
                    continue
                seen[q.qid].add(doc_id)
                text = texts[doc_id]
                norm = normalized.setdefault(doc_id, normalize(text))
                if not text.strip() or answers_in_text(text, list(q.answers), normalized_text=norm):
                    continue
                chosen[q.qid].append({"doc_id": doc_id,
                                      "passage": _leading_passage(text, settings.window_words)})
            if len(chosen[q.qid]) < need and proposals[q.qid]:
                still.append(q)
        pending, attempt = still, attempt + 1
    short = [q.qid for q in questions if len(chosen[q.qid]) < need]
    if short:
        log.warning("%d questions got fewer than %d distractors (first: qid %s)", len(short), need, short[0])
    return chosen


def _rows(questions: list[Question], oracles: dict, distractors: dict, contexts: dict[str, str] | None) -> pa.Table:
    rows = [{
        "qid": q.qid, "question": q.question, "answers": list(q.answers),
        "answer_frequency": q.answer_frequency, "split": q.split,
        "oracle": oracles.get(q.qid), "distractors": distractors.get(q.qid, []),
        "original_context": contexts.get(q.qid) if contexts else None,
    } for q in questions]
    return pa.Table.from_pylist(rows, schema=built_layout.SCHEMA)


def _with_qrels_context(err: NanoKnowInputError, qrels_file: Path) -> NanoKnowInputError:
    """Point a corpus error at the qrels line that named the document."""
    for number, line in enumerate(open(qrels_file, encoding="utf-8"), start=1):
        fields = line.split()
        if len(fields) == 4 and fields[2] in str(err):
            return NanoKnowInputError(f"{fields[2]}: {err}", file=qrels_file, line=number, field="doc_id")
    return err


def build(data_dir: Path, settings: BuildSettings, out: Path, *, progress: bool = True) -> dict:
    """Build both splits of one dataset/corpus into ``out``; returns the build info."""
    from nanoknow_common.names import check_plain_name

    check_plain_name(settings.dataset, field="--dataset")  # folders under --out and --data-dir
    check_plain_name(settings.corpus_dir, field="--corpus-dir")
    data_dir = resolve_data_dir(data_dir)
    qrels_file = layout.qrels_path(data_dir, settings.dataset, settings.corpus_dir)
    if not qrels_file.is_file():
        raise NanoKnowInputError("qrels file not found: a build needs the supported split's qrels",
                                 file=qrels_file, field="--data-dir")
    qrels = read_qrels(qrels_file)
    answers = read_answers(layout.answers_path(data_dir, settings.dataset))
    questions = {split: load_questions(data_dir, settings.dataset, settings.corpus_dir, split,
                                       answers=answers, qrels=qrels)
                 for split in layout.SPLITS}
    contexts = None
    if settings.squad_source:
        contexts = load_squad_contexts(settings.squad_source, questions["supported"] + questions["unsupported"])
    corpus = Corpus(settings.corpus)
    target = Path(out) / settings.dataset / settings.corpus_dir
    work = target / ".work"
    _check_resume(work, settings)

    supported = questions["supported"]
    chunks = [supported[i:i + settings.chunk_size] for i in range(0, len(supported), settings.chunk_size)]
    source = None
    for number, chunk in enumerate(tqdm(chunks, desc=f"build {settings.dataset}", unit="chunk",
                                        disable=not progress)):
        chunk_file = work / f"supported-{number:05d}.parquet"
        if chunk_file.is_file():
            continue
        try:
            if source is None:
                source = _DistractorSource(corpus, settings, _distractor_shards(corpus, qrels))
            oracles = _oracles(corpus, chunk, qrels, settings.window_words)
            source.prepare(chunk)
            distractors = _distractors(corpus, source, chunk, qrels, settings)
        except NanoKnowInputError as err:
            raise _with_qrels_context(err, qrels_file) from err
        built_layout.write_split(_rows(chunk, oracles, distractors, contexts), chunk_file)

    tables = [pq.read_table(work / f"supported-{n:05d}.parquet") for n in range(len(chunks))]
    supported_table = pa.concat_tables(tables) if tables else _rows([], {}, {}, None)
    built_layout.write_split(supported_table, built_layout.split_path(out, settings.dataset, settings.corpus_dir, "supported"))
    built_layout.write_split(_rows(questions["unsupported"], {}, {}, contexts),
                              built_layout.split_path(out, settings.dataset, settings.corpus_dir, "unsupported"))
    without_oracle = supported_table.column("oracle").null_count
    short = sum(1 for d in supported_table.column("distractors").to_pylist() if len(d) < settings.num_distractors)
    info = {
        "settings": settings.__dict__,
        "data_dir": str(data_dir),
        "counts": {"supported": len(supported), "unsupported": len(questions["unsupported"]),
                   "supported_without_oracle": without_oracle, "supported_short_of_distractors": short},
    }
    if without_oracle:
        log.warning("%d supported questions: none of their qrels documents contains a gold answer "
                    "any more (kept, with oracle = null; the oracle tasks skip them)", without_oracle)
    from nanoknow_common.file_io import naming_path

    info_file = built_layout.info_path(out, settings.dataset, settings.corpus_dir)
    with naming_path(info_file):  # a failed write (disk full) names the file
        info_file.write_text(json.dumps(info, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    return info


def _check_resume(work: Path, settings: BuildSettings) -> None:
    """Keep finished chunks only if they were made with the same settings."""
    stamp = work / "settings.json"
    wanted = json.dumps(settings.__dict__, sort_keys=True)
    if stamp.is_file() and stamp.read_text(encoding="utf-8") != wanted:
        log.info("settings changed since the unfinished build in %s: starting over", work)
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    stamp.write_text(wanted, encoding="utf-8")




