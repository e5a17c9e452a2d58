"""``nanoknow build``: NanoKnow datasets with oracle passages and distractors, from qrels + corpus.

For every supported question the oracle is the first qrels document (in file order) whose
text contains a gold answer, cut to a window of ``window_words`` words centred on the first
match (the paper's oracle passage; the match's character offset in the document is kept),
and to a shorter window of ``grid_words`` words around the same match (the passage the
distractor grid uses, so that nine passages fit a 2,048-token context).

Distractors are documents that contain no gold answer (the stage-1 normalisation) and are not
in the question's qrels; their passage is the first ``grid_words`` words of the document (they
only appear in the grid). Every row gets ``random_distractors``: documents drawn at random
(seeded per question) from the corpus (for a remote prefix, from the shards the qrels use).
Its ``distractors`` are BM25 hard negatives from the question's own ranking when an index is
given, else the same random documents (``build_info.json`` says which: ``distractor_source``).
Unsupported questions carry neither (they serve closed-book comparisons). ``build_info.json``
also counts the supported questions the grid leaves out (no oracle, or fewer than
``num_distractors`` distractors of either kind).

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

#: Distractors per question: the largest k of the distractor grid (nanoknow_tasks.task_specs).
DEFAULT_DISTRACTORS = 8
#: Words per passage in the distractor grid (as Lost in the Middle and The Power of Noise use).
DEFAULT_GRID_WORDS = 100
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
    grid_words: int = DEFAULT_GRID_WORDS
    num_distractors: int = DEFAULT_DISTRACTORS
    squad_source: str | None = None
    chunk_size: int = 1000
    bm25_depth: int = 100
    #: ``nanoknow count`` output (folder or counts.jsonl): adds ``corpus_answer_docs`` per row
    counts: str | None = None


def _leading_passage(text: str, window_words: int) -> str:
    """The first ``window_words`` words of a document (a distractor's passage)."""
    return passage_around(text, 0, window_words=window_words)[0]


class _RandomDocuments:
    """Seeded random doc ids of the corpus, per question and round."""

    def __init__(self, corpus: Corpus, shards: list[int], seed: int):
        self.seed = seed
        self.shard_rows = {shard: corpus.num_rows(shard) for shard in shards}
        self.shards = [s for s in shards if self.shard_rows[s] > 0]
        self.max_attempts = 8

    def prepare(self, questions: list[Question]) -> None:
        pass

    def candidates(self, question: Question, count: int, attempt: int) -> list[str]:
        """``count`` more candidates for ``question`` (``attempt`` counts earlier rounds)."""
        if not self.shards:
            return []
        rng = random.Random(f"{self.seed}:{question.qid}:{attempt}")
        picks = []
        for _ in range(count):
            shard = rng.choice(self.shards)
            picks.append(format_doc_id(shard, rng.randrange(self.shard_rows[shard])))
        return picks


class _HardNegatives:
    """The question's BM25 ranking (one batched search per chunk), read in rank order."""

    def __init__(self, index: str, settings: BuildSettings):
        from projection.index.lucene import open_searcher

        self.searcher = open_searcher(index)
        self.depth = settings.bm25_depth
        self.ranked: dict[str, list[str]] = {}
        self.max_attempts = max(1, settings.bm25_depth // (max(1, settings.num_distractors) * OVERSAMPLE) + 1)

    def prepare(self, questions: list[Question]) -> None:
        from projection.stage1.retrieval import bm25_batch

        hits = bm25_batch(self.searcher, questions, k=self.depth)
        self.ranked = {qid: [canonical_doc_id(doc_id) for doc_id, _ in ranked] for qid, ranked in hits.items()}

    def candidates(self, question: Question, count: int, attempt: int) -> list[str]:
        ranked = self.ranked.get(question.qid, [])
        return ranked[attempt * count:(attempt + 1) * count]


def _distractor_shards(corpus: Corpus, qrels: dict[str, list[str]]) -> list[int]:
    """Every shard of a local corpus; for a remote prefix (not listable), the shards the qrels use."""
    if not corpus.remote:
        return corpus.list_shards()
    return sorted({parse_doc_id(d)[0] for docs in qrels.values() for d in docs})


def _oracles(corpus: Corpus, questions: list[Question], qrels: dict[str, list[str]],
             window_words: int, grid_words: int) -> dict[str, dict | None]:
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
                grid, grid_start, _ = passage_around(texts[doc_id], passage.match_offset, window_words=grid_words)
                result[q.qid] = {"doc_id": canonical_doc_id(doc_id), "passage": passage.text,
                                 "answer": passage.matched_answer, "answer_offset": passage.match_offset,
                                 "passage_offset": passage.match_offset - passage.start,
                                 "grid_passage": grid, "grid_passage_offset": passage.match_offset - grid_start}
            elif depth + 1 < len(qrels[q.qid]):
                still.append(q)
        pending, depth = still, depth + 1
    return result


def _distractors(corpus: Corpus, source, questions: list[Question],
                 qrels: dict[str, list[str]], settings: BuildSettings) -> dict[str, list[dict]]:
    """``num_distractors`` answer-free, non-relevant passages per question, from ``source``."""
    need = settings.num_distractors
    chosen: dict[str, list[dict]] = {q.qid: [] for q in questions}
    seen: dict[str, set[str]] = {q.qid: {canonical_doc_id(d) for d in qrels.get(q.qid, [])} for q in questions}
    pending = list(questions)
    attempt = 0
    source.prepare(questions)
    while pending and attempt < source.max_attempts:
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
                chosen[q.qid].append({"doc_id": doc_id, "passage": _leading_passage(text, settings.grid_words)})
            if len(chosen[q.qid]) < need and proposals[q.qid]:
                still.append(q)
        pending, attempt = still, attempt + 1
    return chosen


def _rows(questions: list[Question], oracles: dict, distractors: dict, random_distractors: dict,
          contexts: dict[str, str] | None, qrels: dict[str, list[str]]) -> pa.Table:
    rows = [{
        "qid": q.qid, "question": q.question, "answers": list(q.answers),
        "answer_frequency": q.answer_frequency, "split": q.split,
        "oracle": oracles.get(q.qid), "distractors": distractors.get(q.qid, []),
        "random_distractors": random_distractors.get(q.qid, []),
        "original_context": contexts.get(q.qid) if contexts else None,
        "qrels_shards": [parse_doc_id(d)[0] for d in qrels.get(q.qid, [])] if q.split == "supported" else [],
    } for q in questions]
    return pa.Table.from_pylist(rows, schema=built_layout.SCHEMA)


def _with_answer_counts(table: pa.Table, settings: BuildSettings) -> pa.Table:
    """Fill ``corpus_answer_docs`` from the ``nanoknow count`` output the settings name (if any)."""
    if not settings.counts:
        return table
    from projection.count import read_counts

    counts = read_counts(settings.counts, settings.dataset)
    missing = [qid for qid in table.column("qid").to_pylist() if qid not in counts]
    if missing:
        raise NanoKnowInputError(f"{len(missing)} questions have no count (first: qid {missing[0]!r}); count "
                                 f"the same questions with `nanoknow count`", file=settings.counts, field="qid")
    values = [{"substring": counts[qid].substring, "token": counts[qid].token}
              for qid in table.column("qid").to_pylist()]
    column = table.schema.get_field_index("corpus_answer_docs")
    return table.set_column(column, table.schema.field(column), pa.array(values, type=built_layout.ANSWER_DOCS))


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
    sources = None
    for number, chunk in enumerate(tqdm(chunks, desc=f"build {settings.dataset}", unit="chunk",
                                        disable=not progress)):
        chunk_file = work / f"supported-{number:05d}.parquet"
        if chunk_file.is_file():
            continue
        try:
            if sources is None:
                sources = _RandomDocuments(corpus, _distractor_shards(corpus, qrels), settings.seed), (
                    _HardNegatives(settings.index, settings) if settings.index else None)
            oracles = _oracles(corpus, chunk, qrels, settings.window_words, settings.grid_words)
            random_distractors = _distractors(corpus, sources[0], chunk, qrels, settings)
            distractors = (_distractors(corpus, sources[1], chunk, qrels, settings) if sources[1]
                           else random_distractors)
        except NanoKnowInputError as err:
            raise _with_qrels_context(err, qrels_file) from err
        built_layout.write_split(_rows(chunk, oracles, distractors, random_distractors, contexts, qrels), chunk_file)

    tables = [pq.read_table(work / f"supported-{n:05d}.parquet") for n in range(len(chunks))]
    supported_table = pa.concat_tables(tables) if tables else _rows([], {}, {}, {}, None, qrels)
    supported_table = _with_answer_counts(supported_table, settings)
    built_layout.write_split(supported_table, built_layout.split_path(out, settings.dataset, settings.corpus_dir, "supported"))
    built_layout.write_split(_with_answer_counts(_rows(questions["unsupported"], {}, {}, {}, contexts, qrels), settings),
                              built_layout.split_path(out, settings.dataset, settings.corpus_dir, "unsupported"))
    without_oracle = supported_table.column("oracle").null_count
    grid = grid_counts(supported_table, settings.num_distractors)
    info = {
        "settings": settings.__dict__,
        "data_dir": str(data_dir),
        "distractor_source": "bm25" if settings.index else "random",
        "counts": {"supported": len(supported), "unsupported": len(questions["unsupported"]),
                   "supported_without_oracle": without_oracle,
                   "supported_short_of_distractors": grid["left_out"]["short_of_distractors"]},
        "grid": grid,
    }
    for field in ("distractors", "random_distractors"):
        short = grid["left_out"][f"short_of_{field}"]
        if short:
            log.warning("%d supported questions have fewer than %d %s: the distractor grid leaves them out "
                        "(build_info.json: grid)", short, settings.num_distractors, field.replace("_", " "))
    if without_oracle:
        log.warning("%d supported questions: none of their qrels documents contains a gold answer "
                    "any more (kept, with oracle = null; the oracle tasks skip them)", without_oracle)
    from nanoknow_common.file_io import naming_path

    info_file = built_layout.info_path(out, settings.dataset, settings.corpus_dir)
    with naming_path(info_file):  # a failed write (disk full) names the file
        info_file.write_text(json.dumps(info, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    return info


def grid_counts(supported: pa.Table, needed: int) -> dict:
    """How many supported questions the distractor grid holds, per distractor kind, and why the
    others are left out (no oracle; fewer than ``needed`` distractors of that kind)."""
    oracles = supported.column("oracle").to_pylist()
    left_out = {"no_oracle": sum(o is None for o in oracles)}
    questions = {}
    for field in ("distractors", "random_distractors"):
        short = sum(1 for o, d in zip(oracles, supported.column(field).to_pylist())
                    if o is not None and len(d or []) < needed)
        left_out[f"short_of_{field}"] = short
        questions[field] = len(oracles) - left_out["no_oracle"] - short
    return {"distractors_needed": needed, "questions": questions, "left_out": left_out}


def _check_resume(work: Path, settings: BuildSettings) -> None:
    """Keep finished chunks only if they were made with the same settings."""
    stamp = work / "settings.json"
    wanted = json.dumps(settings.__dict__, sort_keys=True)
    if stamp.is_file() and stamp.read_text(encoding="utf-8") != wanted:
        log.info("settings changed since the unfinished build in %s: starting over", work)
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    stamp.write_text(wanted, encoding="utf-8")




