"""Whole-corpus answer counts in one streaming pass over the shards, resumable per shard.

:func:`count_answers` loads the questions, builds one :class:`AnswerMatcher` over all their
answers, and streams each shard's text column through it in record batches (memory does
not grow with the corpus or the shard). Each finished shard's counts are written at once
(:mod:`projection.count.results`); ``resume=True`` skips shards already written, and a run
with other parameters is refused. When every shard is done, ``counts.jsonl`` is written.
With ``ray`` set the shards are counted by Ray Data tasks (:mod:`projection.count.ray_count`);
the files are the same.
"""

from __future__ import annotations

import json
import logging
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from projection.corpus.shards import Corpus
from projection.count import questions as question_sources
from projection.count import results
from projection.count.matcher import AnswerMatcher
from projection.count.shards import iter_text_batches, select_shards
from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

#: bumped when the rules change, so a resume never mixes counts of two versions
RULES_VERSION = 1


@dataclass
class CountSettings:
    """What to count, where, and how."""

    corpus: str                              # directory or hf://, s3://, https:// prefix of parquet shards
    out: str                                 # run folder
    datasets: tuple[str, ...]                # dataset names (with ``questions_file``: exactly one)
    data_dir: str | None = None              # NanoKnow data root (default: $NANOKNOW_DATA_DIR, fetch cache)
    corpus_dir: str = "fineweb-edu"          # corpus folder of the data dir whose topics list the questions
    questions_file: str | None = None        # or a JSONL of {"qid", "question", "answer"} per line
    text_column: str = "text"
    shards: str | None = None                # e.g. "0-99,120"; default every shard of a local corpus
    resume: bool = False
    batch_rows: int = 1024                   # rows per record batch read from a shard (local runs)
    ray: str | None = None                   # None: this process; "local", "auto" or a Ray address
    workers: int | None = None               # Ray: matcher tasks at once (default: the cluster's CPUs)
    progress: bool = True


def load_questions(settings: CountSettings) -> list[question_sources.CountQuestion]:
    """The questions named by the settings (in output order)."""
    if not settings.datasets:
        raise NanoKnowInputError("name at least one dataset", field="--dataset")
    if settings.questions_file:
        if settings.data_dir:
            raise NanoKnowInputError("give --questions or --data-dir, not both", field="--questions")
        if len(settings.datasets) != 1:
            raise NanoKnowInputError("with --questions, give exactly one --dataset name", field="--dataset")
        questions = question_sources.from_jsonl(settings.questions_file, settings.datasets[0])
    else:
        questions = question_sources.from_data_dir(settings.data_dir, settings.datasets, settings.corpus_dir)
    question_sources.check_unique(questions)
    if not questions:
        raise NanoKnowInputError("no questions to count", field="--dataset")
    return questions


def _run_params(settings: CountSettings, corpus: Corpus, questions, shards: list[int]) -> dict:
    location = corpus.location if corpus.remote else str(Path(corpus.location).resolve())
    return {"rules_version": RULES_VERSION, "corpus": location, "text_column": settings.text_column,
            "shards": shards, "datasets": sorted({q.dataset for q in questions}),
            "questions": len(questions), "questions_sha256": question_sources.fingerprint(questions)}


def _check_run(out: Path, params: dict, resume: bool) -> None:
    """Write ``run.json`` or, on resume, refuse other parameters; never take over a foreign folder."""
    run_file = out / results.RUN_FILE
    if run_file.exists():
        if not resume:
            raise NanoKnowInputError("a count run already exists here; pass --resume to continue it or "
                                     "choose another --out", file=out, field="--out")
        try:
            previous = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise NanoKnowInputError(f"unreadable run parameters ({err})", file=run_file) from err
        changed = sorted(k for k in set(previous) | set(params) if previous.get(k) != params.get(k))
        if changed:
            raise NanoKnowInputError(f"--resume with different parameters ({', '.join(changed)}) than the "
                                     "interrupted run", file=run_file, field=changed[0])
        return
    for name in (results.COUNTS_FILE, results.SHARDS_DIR):
        if (out / name).exists():
            raise NanoKnowInputError(f"{name} exists but no {results.RUN_FILE}: not a count run; choose another "
                                     "--out", file=out / name, field="--out")
    out.mkdir(parents=True, exist_ok=True)
    results.write_atomic(run_file, json.dumps(params, indent=1, sort_keys=True) + "\n")


def _finished(out: Path, shards: list[int]) -> dict[int, dict]:
    done = {}
    for shard in shards:
        path = results.shard_result_path(out, shard)
        if path.is_file():
            data = results.read_shard_result(path)
            if data["shard"] != shard:
                raise NanoKnowInputError(f"holds shard {data['shard']}, not {shard}", file=path, field="shard")
            done[shard] = data
    return done


def _count_locally(corpus: Corpus, matcher: AnswerMatcher, questions, todo: list[int], out: Path,
                   batch_rows: int, progress: bool) -> None:
    from tqdm import tqdm

    total = None if corpus.remote else sum(corpus.num_rows(s) for s in todo)
    with tqdm(total=total, desc="counting answers", unit="doc", unit_scale=True, disable=not progress) as bar:
        for done, shard in enumerate(todo):
            bar.set_postfix_str(f"shard {shard:05d} ({done}/{len(todo)} done)")
            substring = np.zeros(len(questions), dtype=np.int64)
            token = np.zeros(len(questions), dtype=np.int64)
            documents = 0
            for batch in iter_text_batches(corpus, shard, batch_rows=batch_rows):
                found_substring, found_token, n = matcher.count(batch)
                substring += found_substring
                token += found_token
                documents += n
                bar.update(n)
            results.write_shard_result(out, shard, documents, questions, substring, token)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1 << 20 if sys.platform == "darwin" else 1 << 10), 1)


def count_answers(settings: CountSettings) -> dict:
    """Count (or finish counting) the answer documents of every question; return a summary."""
    if settings.batch_rows < 1:
        raise NanoKnowInputError("must be at least 1", field="--batch-rows")
    if settings.workers is not None and settings.workers < 1:
        raise NanoKnowInputError("must be at least 1", field="--workers")
    started = time.perf_counter()
    questions = load_questions(settings)
    corpus = Corpus(settings.corpus, text_column=settings.text_column)
    shards = select_shards(corpus, settings.shards)
    out = Path(settings.out)
    _check_run(out, _run_params(settings, corpus, questions, shards), settings.resume)
    done = _finished(out, shards)
    todo = [s for s in shards if s not in done]
    if done:
        log.info("%d of %d shards already counted; counting the other %d", len(done), len(shards), len(todo))
    if todo:
        if settings.ray is not None:
            from projection.count.ray_count import count_with_ray

            count_with_ray(corpus, questions, todo, out, address=settings.ray, workers=settings.workers,
                           progress=settings.progress)
        else:
            matcher = AnswerMatcher([q.answers for q in questions])
            log.info("matcher: %d substring keys, %d token keys for %d questions", matcher.num_keys["substring"],
                     matcher.num_keys["token"], len(questions))
            _count_locally(corpus, matcher, questions, todo, out, settings.batch_rows, settings.progress)
    shard_results = _finished(out, shards)
    missing = [s for s in shards if s not in shard_results]
    if missing:  # pragma: no cover - every path above writes every shard or raises
        raise RuntimeError(f"shards not counted: {missing[:5]}")
    with_docs = results.write_counts(out, questions, shard_results)
    summary = {"questions": len(questions), "shards": len(shards), "shards_counted_now": len(todo),
               "documents": sum(r["documents"] for r in shard_results.values()),
               "questions_with_answer_docs": with_docs, "counts": str(out / results.COUNTS_FILE),
               "seconds": round(time.perf_counter() - started, 1), "peak_rss_mb": peak_rss_mb()}
    log.info("count summary: %s", json.dumps(summary))
    return summary
