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
``candidates.*.parquet`` and ``answer-frequency.*.jsonl`` (see :mod:`projection.qrels_writer`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path

from projection import layout
from projection.errors import NanoKnowInputError
from projection.retrieval import Question

log = logging.getLogger(__name__)

EXAMPLE = ("nanoknow project --questions sample-corpus/questions.jsonl --dataset sample --corpus sample-corpus "
           "--index sample-index --out projected --verifier hf --model HuggingFaceTB/SmolLM2-135M-Instruct")

WORK_DIR = ".projection"


# -- inputs --------------------------------------------------------------------------------
def read_questions_jsonl(path: Path) -> list[Question]:
    """``{"qid", "question", "answer": [...]}`` per line (``answers`` accepted too)."""
    path = Path(path)
    if not path.is_file():
        raise NanoKnowInputError("questions file not found", file=path, field="--questions")
    out, seen = [], set()
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = dict(file=path, line=number)
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise NanoKnowInputError(f"not valid JSON ({err.msg})", **where) from err
            if not isinstance(row, dict):
                raise NanoKnowInputError("expected a JSON object", **where)
            qid = row.get("qid")
            if not isinstance(qid, (str, int)) or str(qid) == "":
                raise NanoKnowInputError("missing or empty", field="qid", **where)
            qid = str(qid)
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


def read_nanoknow_questions(data_dir: Path, dataset: str, corpus_dir: str) -> list[Question]:
    """Both splits of a NanoKnow data directory, ordered by qid."""
    from projection.nanoknow_files import load_questions

    rows = []
    for split in layout.SPLITS:
        rows += load_questions(Path(data_dir), dataset, corpus_dir, split)
    rows.sort(key=lambda q: (int(q.qid) if q.qid.isdigit() else float("inf"), q.qid))
    return [Question(q.qid, q.question, list(q.answers)) for q in rows]


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
    line = json.dumps({"chunk": chunk, "questions": questions}, ensure_ascii=False, sort_keys=True) + "\n"
    with open(path, "a", encoding="utf-8") as handle:
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
        previous = json.loads(path.read_text())
        changed = sorted(k for k in set(previous) | set(params) if previous.get(k) != params.get(k))
        if changed:
            raise NanoKnowInputError(f"--resume with different parameters ({', '.join(changed)}) than the "
                                     "interrupted run", file=path, field=changed[0])
        return
    work.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(params, indent=2, sort_keys=True) + "\n")


# -- stages --------------------------------------------------------------------------------
def run_stage1(args, questions: list[Question], chunks: list[list[Question]], path: Path) -> dict[int, list[dict]]:
    from tqdm import tqdm

    from projection.retrieval import stage1
    from projection.stage1.retrievers import open_retriever

    done = read_chunks(path)
    todo = [i for i in range(len(chunks)) if i not in done]
    if not todo:
        return done
    with open_retriever(args) as (searcher, source):
        for i in tqdm(todo, desc="stage 1 (BM25 + answer match)", unit="chunk"):
            records = stage1(searcher, source, chunks[i], k=args.top_k, threads=args.threads,
                             window_words=args.window_words)
            append_chunk(path, i, records)
            done[i] = records
    return done


def _verify_chunk(backend, chunk: list[Question], records: list[dict], *, first_true: bool,
                  max_new_tokens: int, mode: str = "generate") -> list[dict]:
    """Verdicts for one chunk; with ``first_true`` candidates are judged rank by rank (batched
    across questions) and a question stops at its first TRUE."""
    from projection.verification import TRUE, judge

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


def make_verifier(args):
    """The judge backend chosen on the command line (None for ``--verifier none``)."""
    from projection.llm import make_backend

    if args.verifier == "none":
        return None
    if args.verifier == "hf":
        model, gguf = args.model, args.gguf_file
        if model is None:
            from projection.bundled_model import smollm2_gguf

            folder, gguf = smollm2_gguf()
            model = str(folder)
        return make_backend("hf", model, gguf_file=gguf, device=args.device, batch_size=args.batch_size,
                            dtype=args.dtype)
    if args.judge_mode == "choose":
        raise NanoKnowInputError(f"--judge-mode choose needs the hf verifier, not {args.verifier}", field="--judge-mode")
    if args.verifier == "openai":
        return make_backend("openai", args.model, base_url=args.base_url, concurrency=args.concurrency)
    return make_backend("vllm", args.model)


def run_stage2(args, chunks: list[list[Question]], stage1_done: dict[int, list[dict]], path: Path) -> dict[int, list[dict]]:
    from tqdm import tqdm

    done = read_chunks(path)
    todo = [i for i in range(len(chunks)) if i not in done]
    if not todo:
        return done
    if args.verifier == "none":  # answer matching only: every candidate counts
        for i in todo:
            done[i] = [{"qid": r["qid"], "verdicts": [None] * len(r["candidates"])} for r in stage1_done[i]]
        return done
    backend = make_verifier(args)
    try:
        for i in tqdm(todo, desc="stage 2 (LLM verification)", unit="chunk"):
            rows = _verify_chunk(backend, chunks[i], stage1_done[i], first_true=args.verify == "first-true",
                                 max_new_tokens=args.max_new_tokens, mode=args.judge_mode)
            append_chunk(path, i, rows)
            done[i] = rows
    finally:
        backend.close()
    return done


def project(args: argparse.Namespace) -> dict:
    """Run (or resume) the projection described by ``args``; return the summary."""
    from projection import qrels_writer

    if args.questions:
        questions = read_questions_jsonl(args.questions)
    elif args.data_dir:
        questions = read_nanoknow_questions(args.data_dir, args.dataset, args.questions_from)
    else:
        raise NanoKnowInputError("give the questions: --questions FILE.jsonl or --data-dir DIR", field="--questions")
    if args.limit:
        questions = questions[: args.limit]
    for name in ("top_k", "chunk_size", "window_words", "threads"):
        if getattr(args, name) < 1:
            raise NanoKnowInputError("must be at least 1", field="--" + name.replace("_", "-"))
    from projection.stage1 import retrievers

    retrievers.check_args(args)
    corpus_dir = args.corpus_name
    out_dir = Path(args.out) / args.dataset / corpus_dir
    work = out_dir / WORK_DIR
    params = {"dataset": args.dataset, "corpus_name": corpus_dir, "top_k": args.top_k,
              "window_words": args.window_words, "chunk_size": args.chunk_size, "verifier": args.verifier,
              "model": args.model, "gguf_file": args.gguf_file, "verify": args.verify,
              "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size, "judge_mode": args.judge_mode,
              "questions": [q.qid for q in questions]}
    check_run_params(work, params, args.resume)
    chunks = [questions[i:i + args.chunk_size] for i in range(0, len(questions), args.chunk_size)]
    s1 = run_stage1(args, questions, chunks, work / "stage1.jsonl")
    s2 = run_stage2(args, chunks, s1, work / "stage2.jsonl")
    summary = qrels_writer.write_outputs(Path(args.out), args.dataset, corpus_dir, questions,
                                         [r for i in range(len(chunks)) for r in s1[i]],
                                         [r for i in range(len(chunks)) for r in s2[i]],
                                         verified=args.verifier != "none")
    log.info("projection summary: %s", json.dumps(summary))
    if summary["unparsed"]:
        log.warning("%d judge outputs could not be parsed (listed as UNPARSED in %s); they count as not "
                    "verified", summary["unparsed"], qrels_writer.candidates_path(Path(args.out), args.dataset,
                                                                                   corpus_dir).name)
    return summary


# -- CLI -----------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_argument_group("questions")
    src.add_argument("--questions", type=Path, help='JSONL of {"qid", "question", "answer": [...]} per line')
    src.add_argument("--data-dir", type=Path, help="or a NanoKnow data directory (both splits of --questions-from)")
    src.add_argument("--questions-from", default="fineweb-edu",
                     help="corpus folder of --data-dir whose topics list the questions (default fineweb-edu)")
    src.add_argument("--dataset", required=True, help="dataset name used in output names (nq, squad, ...)")
    src.add_argument("--limit", type=int, default=None, help="only the first N questions")
    cor = parser.add_argument_group("corpus and index")
    cor.add_argument("--index", type=Path, help="Lucene index (nanoknow index, or the released one)")
    cor.add_argument("--corpus", default=None,
                     help="parquet corpus (dir, hf://, s3://, https://) to read texts from; default: the index's raw docs")
    cor.add_argument("--corpus-name", default="fineweb-edu",
                     help="corpus folder name in the outputs (default fineweb-edu)")
    cor.add_argument("--text-column", default="text")
    cor.add_argument("--top-k", type=int, default=100, help="BM25 hits per question (default 100)")
    cor.add_argument("--threads", type=int, default=max(1, min(8, os.cpu_count() or 1)), help="search threads")
    cor.add_argument("--window-words", type=int, default=200, help="words in the passage window (default 200)")
    from projection.stage1 import retrievers

    retrievers.add_arguments(cor)
    ver = parser.add_argument_group("verification")
    ver.add_argument("--verifier", choices=["hf", "openai", "vllm", "none"], default="hf",
                     help="LLM judge backend; none = answer matching only (default hf)")
    ver.add_argument("--model", default=None, help="judge model (hf: folder or Hub id; default the bundled SmolLM2)")
    ver.add_argument("--gguf-file", default=None, help="GGUF file inside --model's folder (hf)")
    ver.add_argument("--base-url", default=None, help="OpenAI-compatible server (default env OPENAI_BASE_URL)")
    ver.add_argument("--concurrency", type=int, default=8, help="concurrent requests (openai judge, rest retriever)")
    ver.add_argument("--device", default="cpu", help="torch device (hf)")
    ver.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                     help="weights' dtype (hf; bfloat16 is several times faster on CPUs with AVX512-BF16)")
    ver.add_argument("--batch-size", type=int, default=8, help="generation batch size (hf)")
    ver.add_argument("--max-new-tokens", type=int, default=64)
    ver.add_argument("--judge-mode", choices=["generate", "choose"], default="generate",
                     help="generate: parse the judge's written TRUE/COINCIDENTAL reply (default); choose (hf): "
                          "take the likelier of the two as first token, for models too small to follow the format")
    ver.add_argument("--verify", choices=["all", "first-true"], default="all",
                     help="judge every candidate (default, as the released qrels) or stop at the first TRUE")
    run_ = parser.add_argument_group("run")
    run_.add_argument("--out", required=True, type=Path, help="output root (upstream layout)")
    run_.add_argument("--chunk-size", type=int, default=500,
                      help="questions per resumable chunk (default 500; larger chunks read the corpus more efficiently)")
    run_.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")


def run(args: argparse.Namespace) -> int:
    summary = project(args)
    print(json.dumps(summary))
    return 0
