"""``nanoknow project``: project a QA benchmark onto a corpus, resumably.

Questions are processed in fixed chunks (``--chunk-size``, by position in the input), so a
resumed run sees exactly the same batches as an uninterrupted one. Work files live in
``<out>/<dataset>/<corpus_dir>/.projection/``:

* ``run.json``: the parameters (a resume with different ones is refused);
* ``stage1.jsonl``: one line per finished chunk (BM25 hits matched against the answers);
* ``stage2.jsonl``: one line per finished chunk (the judge's verdicts).

A line is written with one ``write`` and flushed; a partial last line (a killed run) is
dropped on resume. When every chunk is done the final files are (re)written atomically from
the work files, so a killed-then-resumed run gives byte-identical outputs:
``answers.*.jsonl``, ``topics.*.{supported,unsupported}.tsv``, ``qrels.*.supported.txt``,
``candidates.*.parquet`` and ``answer-frequency.*.jsonl`` (see :mod:`projection.outputs.final_files`).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from projection.data import layout
from nanoknow_common.errors import NanoKnowInputError
from projection.data.files import Question

log = logging.getLogger(__name__)

EXAMPLE = ("nanoknow project --questions sample-corpus/questions.jsonl --dataset sample --corpus sample-corpus "
           "--index sample-index --out projected --verifier hf --model HuggingFaceTB/SmolLM2-135M-Instruct")

WORK_DIR = ".projection"


@dataclass
class ProjectSettings:
    """Everything one projection run needs; ``nanoknow project`` fills it from its flags.

    Questions come from ``questions`` (JSONL) or ``data_dir`` (both splits of ``questions_from``).
    ``verifier`` is ``hf``, ``openai``, ``vllm`` or ``none`` (answer matching only).
    """

    dataset: str
    out: Path
    index: Path | None = None
    questions: Path | None = None
    data_dir: Path | None = None
    questions_from: str = "fineweb-edu"
    limit: int | None = None
    corpus: str | None = None
    corpus_name: str = "fineweb-edu"
    text_column: str = "text"
    top_k: int = 100
    threads: int = max(1, min(8, os.cpu_count() or 1))
    window_words: int = 200
    verifier: str = "hf"
    model: str | None = None
    gguf_file: str | None = None
    base_url: str | None = None
    concurrency: int = 8
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 8
    max_new_tokens: int = 64
    judge_mode: str = "generate"
    verify: str = "all"
    chunk_size: int = 500
    resume: bool = False
    #: ``lucene`` (search ``index`` here) or ``rest`` (a BM25 service: ``rest_url``, ``rest_index``;
    #: its bearer token from the environment variable ``rest_token_env``)
    retriever: str = "lucene"
    rest_url: str | None = None
    rest_index: str | None = None
    rest_token_env: str = "PYSERINI_API_TOKEN"
    rest_timeout: float = 60.0
    rest_retries: int = 5
    #: run both stages on Ray (:mod:`projection.scale.ray_project`): ``local`` starts a local Ray
    #: with ``ray_cpus`` CPUs; ``auto``, ``HOST:6379`` or ``ray://HOST:10001`` joins a cluster
    ray_address: str | None = None
    ray_cpus: int | None = None
    #: stage-2 verifier actors on Ray (default: as many as the cluster's CPUs/GPUs hold)
    ray_verifiers: int | None = None


# -- inputs --------------------------------------------------------------------------------
def read_questions_jsonl(path: Path) -> list[Question]:
    """``{"qid", "question", "answer": [...]}`` per line (``answers`` accepted too)."""
    from nanoknow_common.file_io import json_object_lines

    path = Path(path)
    if not path.is_file():
        raise NanoKnowInputError("questions file not found" if not path.exists() else "not a file",
                                 file=path, field="--questions")
    out, seen = [], set()
    for number, row in json_object_lines(path, field="--questions"):
        where = dict(file=path, line=number)
        qid = row.get("qid")
        if isinstance(qid, bool) or not isinstance(qid, (str, int)) or str(qid) == "":
            raise NanoKnowInputError("missing or empty", field="qid", **where)
        qid = check_qid(str(qid), **where)
        if qid in seen:
            raise NanoKnowInputError(f"duplicate qid {qid!r}", field="qid", **where)
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            raise NanoKnowInputError("missing or empty", field="question", **where)
        answers = row.get("answer", row.get("answers"))
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
            raise NanoKnowInputError("must be a non-empty list of strings", field="answer", **where)
        seen.add(qid)
        out.append(Question(qid, question.strip(), answers))
    if not out:
        raise NanoKnowInputError("no questions in file", file=path, field="--questions")
    return out


def check_qid(qid: str, *, file=None, line=None) -> str:
    """A qid goes into TSV topics and whitespace-separated TREC qrels: refuse whitespace in it."""
    if any(c.isspace() for c in qid):
        raise NanoKnowInputError(f"qid {qid!r} contains whitespace, which the topics and qrels files cannot hold",
                                 file=file, line=line, field="qid")
    return qid


def read_nanoknow_questions(data_dir: Path, dataset: str, corpus_dir: str) -> list[Question]:
    """Both splits of a NanoKnow data directory, ordered by qid."""
    from projection.data.files import load_questions

    rows = []
    for split in layout.SPLITS:
        questions = load_questions(Path(data_dir), dataset, corpus_dir, split)
        topics = layout.topics_path(Path(data_dir), dataset, corpus_dir, split)
        for q in questions:
            if any(c.isspace() for c in q.qid):
                check_qid(q.qid, file=topics, line=_line_of_qid(topics, q.qid))
        rows += questions
    rows.sort(key=lambda q: (int(q.qid) if q.qid.isdigit() else float("inf"), q.qid))
    return [Question(q.qid, q.question, list(q.answers)) for q in rows]


def _line_of_qid(topics: Path, qid: str) -> int | None:
    from nanoknow_common.file_io import text_lines

    return next((n for n, line in text_lines(topics) if line.startswith(qid + "\t")), None)


# -- work files ----------------------------------------------------------------------------
def read_chunks(path: Path) -> dict[int, list[dict]]:
    """Finished chunks of a work file; a partial last line (killed mid-write) is cut off."""
    done: dict[int, list[dict]] = {}
    if not path.exists():
        return done
    data = path.read_bytes()
    good = 0
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            break
        done[int(row["chunk"])] = row["questions"]
        good += len(line)
    if good < len(data):
        log.warning("%s: dropping %d bytes of an unfinished chunk", path, len(data) - good)
        with open(path, "r+b") as handle:
            handle.truncate(good)
    return done


def append_chunk(path: Path, chunk: int, questions: list[dict]) -> None:
    """Append one finished chunk as one line, flushed to disk."""
    from nanoknow_common.file_io import naming_path

    line = json.dumps({"chunk": chunk, "questions": questions}, ensure_ascii=False, sort_keys=True) + "\n"
    with naming_path(path), open(path, "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def check_run_params(work: Path, params: dict, resume: bool) -> None:
    """Write ``run.json`` or, on resume, refuse parameters that differ from it."""
    path = work / "run.json"
    if path.exists():
        if not resume:
            raise NanoKnowInputError("a projection already exists here; pass --resume to continue it "
                                     "or choose another --out", file=path.parent.parent, field="--out")
        from nanoknow_common.file_io import read_json

        previous = read_json(path, what="the interrupted run's parameters")
        if not isinstance(previous, dict):
            raise NanoKnowInputError("not the parameters of a projection run", file=path)
        changed = sorted(k for k in set(previous) | set(params) if previous.get(k) != params.get(k))
        if changed:
            raise NanoKnowInputError(f"--resume with different parameters ({', '.join(changed)}) than the "
                                     "interrupted run", file=path, field=changed[0])
        return
    from nanoknow_common.file_io import naming_path

    work.mkdir(parents=True, exist_ok=True)
    with naming_path(path):
        path.write_text(json.dumps(params, indent=2, sort_keys=True) + "\n")


# -- stages --------------------------------------------------------------------------------
def run_stage1(settings: ProjectSettings, questions: list[Question], chunks: list[list[Question]], path: Path) -> dict[int, list[dict]]:
    from tqdm import tqdm

    from projection.stage1.retrievers import open_retriever
    from projection.stage1.retrieval import stage1

    done = read_chunks(path)
    todo = [i for i in range(len(chunks)) if i not in done]
    if not todo:
        return done
    with open_retriever(settings) as (searcher, source):
        for i in tqdm(todo, desc="stage 1 (BM25 + answer match)", unit="chunk"):
            records = stage1(searcher, source, chunks[i], k=settings.top_k, threads=settings.threads,
                             window_words=settings.window_words)
            append_chunk(path, i, records)
            done[i] = records
    return done


def verify_chunk(backend, chunk: list[Question], records: list[dict], *, first_true: bool,
                  max_new_tokens: int, mode: str = "generate") -> list[dict]:
    """Verdicts for one chunk; with ``first_true`` candidates are judged rank by rank (batched
    across questions) and a question stops at its first TRUE."""
    from projection.stage2.verification import TRUE, judge

    by_qid = {q.qid: q for q in chunk}
    verdicts: list[list[dict | None]] = [[None] * len(r["candidates"]) for r in records]
    if first_true:
        depth = max((len(r["candidates"]) for r in records), default=0)
        settled = [False] * len(records)
        for level in range(depth):
            todo = [j for j, r in enumerate(records) if not settled[j] and level < len(r["candidates"])]
            if not todo:
                break
            items = [(by_qid[records[j]["qid"]].question, by_qid[records[j]["qid"]].answers,
                      records[j]["candidates"][level]["passage"]) for j in todo]
            for j, (verdict, raw) in zip(todo, judge(backend, items, max_new_tokens=max_new_tokens, mode=mode)):
                verdicts[j][level] = {"label": verdict.label, "reason": verdict.reason, "raw": raw}
                settled[j] = verdict.label == TRUE
    else:
        flat = [(j, c) for j, r in enumerate(records) for c in range(len(r["candidates"]))]
        items = [(by_qid[records[j]["qid"]].question, by_qid[records[j]["qid"]].answers,
                  records[j]["candidates"][c]["passage"]) for j, c in flat]
        for (j, c), (verdict, raw) in zip(flat, judge(backend, items, max_new_tokens=max_new_tokens, mode=mode)):
            verdicts[j][c] = {"label": verdict.label, "reason": verdict.reason, "raw": raw}
    return [{"qid": r["qid"], "verdicts": v} for r, v in zip(records, verdicts)]


def make_verifier(settings: ProjectSettings):
    """The judge backend the settings name (None for ``verifier="none"``)."""
    from nanoknow_common.llm import make_backend

    if settings.verifier == "none":
        return None
    if settings.verifier == "hf":
        model, gguf = settings.model, settings.gguf_file
        if model is None:
            from nanoknow_common.bundled_model import smollm2_gguf

            folder, gguf = smollm2_gguf()
            model = str(folder)
        return make_backend("hf", model, gguf_file=gguf, device=settings.device, batch_size=settings.batch_size,
                            dtype=settings.dtype)
    if settings.judge_mode == "choose":
        raise NanoKnowInputError(f"--judge-mode choose needs the hf verifier, not {settings.verifier}", field="--judge-mode")
    if settings.verifier == "openai":
        return make_backend("openai", settings.model, base_url=settings.base_url, concurrency=settings.concurrency)
    return make_backend("vllm", settings.model)


def run_stage2(settings: ProjectSettings, chunks: list[list[Question]], stage1_done: dict[int, list[dict]], path: Path) -> dict[int, list[dict]]:
    from tqdm import tqdm

    done = read_chunks(path)
    todo = [i for i in range(len(chunks)) if i not in done]
    if not todo:
        return done
    if settings.verifier == "none":  # answer matching only: every candidate counts
        for i in todo:
            done[i] = [{"qid": r["qid"], "verdicts": [None] * len(r["candidates"])} for r in stage1_done[i]]
        return done
    backend = make_verifier(settings)
    try:
        for i in tqdm(todo, desc="stage 2 (LLM verification)", unit="chunk"):
            rows = verify_chunk(backend, chunks[i], stage1_done[i], first_true=settings.verify == "first-true",
                                 max_new_tokens=settings.max_new_tokens, mode=settings.judge_mode)
            append_chunk(path, i, rows)
            done[i] = rows
    finally:
        backend.close()
    return done


def project(settings: ProjectSettings) -> dict:
    """Run (or resume) the projection ``settings`` describe; return the summary.

    Example::

        from projection import ProjectSettings, project
        project(ProjectSettings(dataset="sample", questions=Path("questions.jsonl"),
                                index=Path("index"), corpus="corpus", out=Path("projected"),
                                verifier="none"))
    """
    from nanoknow_common.names import check_plain_name
    from projection.outputs import final_files

    # names that become folders under --out (and --data-dir): plain names only, never a path
    check_plain_name(settings.dataset, field="--dataset")
    check_plain_name(settings.corpus_name, field="--corpus-name")
    if settings.data_dir:
        check_plain_name(settings.questions_from, field="--questions-from")
    if settings.questions:
        questions = read_questions_jsonl(settings.questions)
    elif settings.data_dir:
        questions = read_nanoknow_questions(settings.data_dir, settings.dataset, settings.questions_from)
    else:
        raise NanoKnowInputError("give the questions: --questions FILE.jsonl or --data-dir DIR", field="--questions")
    if settings.limit:
        questions = questions[: settings.limit]
    for name in ("top_k", "chunk_size", "window_words", "threads"):
        if getattr(settings, name) < 1:
            raise NanoKnowInputError("must be at least 1", field="--" + name.replace("_", "-"))
    from projection.stage1 import retrievers

    retrievers.check_settings(settings)
    if settings.ray_address:
        from projection.scale import ray_project

        ray_project.check_settings(settings)
    corpus_dir = settings.corpus_name
    out_dir = Path(settings.out) / settings.dataset / corpus_dir
    work = out_dir / WORK_DIR
    params = {"dataset": settings.dataset, "corpus_name": corpus_dir, "top_k": settings.top_k,
              "window_words": settings.window_words, "chunk_size": settings.chunk_size, "verifier": settings.verifier,
              "model": settings.model, "gguf_file": settings.gguf_file, "verify": settings.verify,
              "max_new_tokens": settings.max_new_tokens, "batch_size": settings.batch_size, "judge_mode": settings.judge_mode,
              "questions": [q.qid for q in questions]}
    check_run_params(work, params, settings.resume)
    chunks = [questions[i:i + settings.chunk_size] for i in range(0, len(questions), settings.chunk_size)]
    if settings.ray_address:
        from projection.scale.ray_project import run_stages

        s1, s2 = run_stages(settings, chunks, work)
    else:
        s1 = run_stage1(settings, questions, chunks, work / "stage1.jsonl")
        s2 = run_stage2(settings, chunks, s1, work / "stage2.jsonl")
    summary = final_files.write_outputs(Path(settings.out), settings.dataset, corpus_dir, questions,
                                         [r for i in range(len(chunks)) for r in s1[i]],
                                         [r for i in range(len(chunks)) for r in s2[i]],
                                         verified=settings.verifier != "none")
    log.info("projection summary: %s", json.dumps(summary))
    if summary["unparsed"]:
        log.warning("%d judge outputs could not be parsed (listed as UNPARSED in %s); they count as not "
                    "verified", summary["unparsed"], final_files.candidates_path(Path(settings.out), settings.dataset,
                                                                                   corpus_dir).name)
    return summary
