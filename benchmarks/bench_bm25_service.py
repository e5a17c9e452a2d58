"""Stage 1 through a local BM25 service (``nanoknow serve-index`` child process) against the
in-process Lucene retriever, on the sample corpus, in the same run.

Builds (once, cached under ``--work``) the embedded sample corpus (``nanoknow make-sample-corpus
--embedded``) and its index (``nanoknow index``; ``--texts index`` stores raw documents), then
times :func:`projection.stage1.retrieval.stage1` over the sample's questions (repeated ``--repeat``
times with distinct ids, in chunks of ``--chunk``) on both sides, interleaved, ``--runs``
times after one warm-up each:

* local: pyserini ``batch_search`` with ``--threads`` threads, texts from the parquet corpus
  (``--texts corpus``, the ``project`` default) or from the index's raw documents;
* service: :class:`RestSearcher` with ``--concurrency`` requests in flight against a
  ``serve-index`` child over the same index (texts from the same place, sent with the hits).

Both sides must give identical records. Prints the rates and, last,
``service_overhead=<median service time / local time> (min-max)``.

    python benchmarks/bench_bm25_service.py --concurrency 8
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
NANOKNOW = Path(sys.executable).parent / "nanoknow"


def sh(*args: str) -> None:
    subprocess.run([str(NANOKNOW), *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")})


def prepare(work: Path, store_raw: bool) -> tuple[Path, Path]:
    corpus, index = work / "corpus", work / ("index-raw" if store_raw else "index")
    if not (corpus / "questions.jsonl").exists():
        sh("make-sample-corpus", "--out", str(corpus), "--embedded")
    if not (index / "done").exists():
        sh("index", "--corpus", str(corpus), "--index", str(index), "--threads", "2", "--overwrite",
           *(["--store-raw"] if store_raw else []))
        (index / "done").write_text("ok")
    return corpus, index


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(index: Path, corpus: Path | None, port: int, threads: int, log_path: Path) -> subprocess.Popen:
    args = [str(NANOKNOW), "serve-index", "--index", str(index), "--name", "sample", "--port", str(port),
            "--threads", str(threads), *(["--corpus", str(corpus)] if corpus else [])]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("NANOKNOW_INDEX_TOKEN", None)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"serve-index exited {proc.returncode}; see {log_path}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("serve-index did not start in 180 s")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/nanoknow-bench-bm25-service"))
    parser.add_argument("--texts", choices=["corpus", "index"], default="corpus",
                        help="where texts come from on both sides (default corpus, as `project --corpus`)")
    parser.add_argument("--repeat", type=int, default=5, help="copies of the 100 sample questions (default 5)")
    parser.add_argument("--chunk", type=int, default=500, help="questions per stage-1 batch (default 500)")
    parser.add_argument("--top-k", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2, help="local search threads (default 2)")
    parser.add_argument("--server-threads", type=int, default=8, help="serve-index --threads (default 8)")
    parser.add_argument("--concurrency", type=int, default=8, help="client requests in flight (default 8)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per side (default 7)")
    args = parser.parse_args()

    from projection.index import lucene
    from projection.corpus.shards import Corpus
    from projection.stage1.retrieval import CorpusTexts, IndexTexts, Question, stage1
    from projection.stage1.rest_search import RestSearcher, RestSettings, RestTexts

    args.work.mkdir(parents=True, exist_ok=True)
    corpus, index = prepare(args.work, store_raw=args.texts == "index")
    sample = [json.loads(line) for line in open(corpus / "questions.jsonl")]
    questions = [Question(f"{r}-{q['qid']}", q["question"], q["answer"]) for r in range(args.repeat) for q in sample]
    chunks = [questions[i:i + args.chunk] for i in range(0, len(questions), args.chunk)]

    port = free_port()
    server = start_server(index, corpus if args.texts == "corpus" else None, port, args.server_threads,
                          args.work / "serve-index.log")
    try:
        searcher = lucene.open_searcher(index)
        local_texts = CorpusTexts(Corpus(corpus)) if args.texts == "corpus" else IndexTexts(searcher, args.threads)
        rest = RestSearcher(RestSettings(url=f"http://127.0.0.1:{port}", index="sample",
                                         concurrency=args.concurrency), progress=False)
        rest.check()
        rest_texts = RestTexts(rest)
        sides = {"local": lambda c: stage1(searcher, local_texts, c, k=args.top_k, threads=args.threads),
                 "service": lambda c: stage1(rest, rest_texts, c, k=args.top_k)}
        outputs, times = {}, {name: [] for name in sides}
        for run in range(args.runs + 1):  # run 0 warms the JVM, its JIT, the page cache and the connections
            for name, side in (sides.items() if run % 2 == 0 else reversed(sides.items())):
                t = time.perf_counter()
                outputs[name] = [r for c in chunks for r in side(c)]
                if run:
                    times[name].append(time.perf_counter() - t)
        if outputs["local"] != outputs["service"]:
            raise SystemExit("the service and the local retriever disagree")
        rest.close()
    finally:
        server.terminate()
        server.wait(30)
    ratios = [s / t for s, t in zip(times["service"], times["local"])]
    n = len(questions)
    found = sum(len(r["candidates"]) for r in outputs["local"])
    local_t, service_t = statistics.median(times["local"]), statistics.median(times["service"])
    print(f"stage 1 on {n} questions (top {args.top_k}, texts from {args.texts}), {os.cpu_count()} cores, "
          f"{args.runs} runs: local {n / local_t:.0f} q/s (median {local_t:.2f}s), service {n / service_t:.0f} "
          f"requests/s (median {service_t:.2f}s, concurrency {args.concurrency}, server threads "
          f"{args.server_threads}); identical records; candidates {found}")
    print(f"service_overhead={statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
