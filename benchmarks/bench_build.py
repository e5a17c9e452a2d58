"""Benchmark: reading oracle + distractor passages for a dataset build, batched vs one query per document.

    .venv/bin/python benchmarks/bench_build.py [--questions 5000] [--docs-per-shard 25000]

Makes a synthetic corpus (parquet shards, ~120-word documents) and a NanoKnow data root of
``--questions`` supported questions with 3 qrels documents each (the answer planted in one),
runs ``nanoknow build`` on it (random distractors, k=8), and then times, on exactly the
documents the build needed (every oracle and distractor document):

* ours: ``Corpus.read_documents`` (one DuckDB query per shard serving all its ids);
* baseline: one DuckDB query per document, as the released evaluator reads passages
  (timed on a random sample of the same ids; its cost per document does not depend on
  how many documents there are).

Prints documents/second of both and the ratio; the last line is ``build_speedup=<x>``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from projection.data import layout  # noqa: E402
from projection.datasets import built_layout
from projection.datasets.build import BuildSettings, build  # noqa: E402
from projection.corpus.shards import Corpus, parse_doc_id, shard_file_name  # noqa: E402

WORDS = ("river mountain library garden teacher winter harvest station market bridge painter engine "
         "village ocean forest museum school letter window castle valley island doctor kitchen").split()


def make_corpus(folder: Path, shards: int, per_shard: int, seed: int) -> None:
    rng = random.Random(seed)
    for shard in range(shards):
        texts = [" ".join(rng.choices(WORDS, k=120)) for _ in range(per_shard)]
        pq.write_table(pa.table({"text": texts}), folder / shard_file_name(shard), row_group_size=8192)


def plant_answers(corpus: Path, root: Path, questions: int, shards: int, per_shard: int, seed: int) -> None:
    """Questions whose answer ``token<qid>`` is planted into one of their 3 qrels documents."""
    rng = random.Random(seed)
    planted: dict[int, dict[int, str]] = {s: {} for s in range(shards)}
    qrels = {}
    for qid in range(questions):
        docs = set()
        while len(docs) < 3:
            docs.add((rng.randrange(shards), rng.randrange(per_shard)))
        docs = sorted(docs)
        free = [d for d in docs if d[1] not in planted[d[0]]]
        target = rng.choice(free or docs)  # one answer per document where possible
        planted[target[0]][target[1]] = f"answer{qid}x"
        qrels[str(qid)] = [f"shard_{s:05d}_{r}" for s, r in docs]
    for shard, rows in planted.items():
        path = corpus / shard_file_name(shard)
        texts = pq.read_table(path).column("text").to_pylist()
        for row, answer in rows.items():
            texts[row] = texts[row][:300] + f" the answer is {answer} " + texts[row][300:]
        pq.write_table(pa.table({"text": texts}), path, row_group_size=8192)
    (root / "bench" / "synthetic").mkdir(parents=True)
    with open(layout.answers_path(root, "bench"), "w") as handle:
        for qid in range(questions):
            handle.write(json.dumps({"qid": str(qid), "answer": [f"answer{qid}x"]}) + "\n")
    layout.topics_path(root, "bench", "synthetic", "supported").write_text(
        "".join(f"{qid}\twhat is the answer number {qid}\n" for qid in range(questions)))
    layout.topics_path(root, "bench", "synthetic", "unsupported").write_text("")
    layout.qrels_path(root, "bench", "synthetic").write_text(
        "".join(f"{qid} Q0 {doc} 1\n" for qid, docs in qrels.items() for doc in docs))


def baseline_rate(corpus: Path, doc_ids: list[str]) -> float:
    """Documents/second with one parameterized DuckDB query per document."""
    con = duckdb.connect()
    start = time.perf_counter()
    for doc_id in doc_ids:
        shard, row = parse_doc_id(doc_id)
        con.execute("SELECT text FROM read_parquet(?, file_row_number=true) WHERE file_row_number = ?",
                    [str(corpus / shard_file_name(shard)), row]).fetchone()
    return len(doc_ids) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--docs-per-shard", type=int, default=25000)
    parser.add_argument("--baseline-sample", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        corpus, root, out = tmp / "corpus", tmp / "data", tmp / "build"
        corpus.mkdir()
        start = time.perf_counter()
        make_corpus(corpus, args.shards, args.docs_per_shard, args.seed)
        plant_answers(corpus, root, args.questions, args.shards, args.docs_per_shard, args.seed)
        print(f"corpus: {args.shards * args.docs_per_shard} documents, {args.questions} questions "
              f"({time.perf_counter() - start:.1f} s to make)")

        start = time.perf_counter()
        info = build(root, BuildSettings(dataset="bench", corpus_dir="synthetic", corpus=str(corpus),
                                         chunk_size=args.questions), out, progress=False)
        build_seconds = time.perf_counter() - start
        rows = built_layout.read_split(out, "bench", "synthetic", "supported").to_pylist()
        needed = list(dict.fromkeys([r["oracle"]["doc_id"] for r in rows if r["oracle"]]
                                    + [d["doc_id"] for r in rows for d in r["distractors"]]))
        print(f"build: {info['counts']} in {build_seconds:.1f} s (whole build, incl. passages and writing)")

        corpus_reader = Corpus(corpus)
        start = time.perf_counter()
        texts = corpus_reader.read_documents(needed)
        ours = len(texts) / (time.perf_counter() - start)
        sample = random.Random(args.seed).sample(needed, min(args.baseline_sample, len(needed)))
        baseline = baseline_rate(corpus, sample)
    print(f"documents needed (oracle + distractors): {len(needed)}")
    print(f"baseline (one DuckDB query per document): {baseline:,.0f} docs/s (on {len(sample)} documents)")
    print(f"ours (one query per shard):               {ours:,.0f} docs/s (on {len(needed)} documents)")
    print(f"build_speedup={ours / baseline:.1f}")


if __name__ == "__main__":
    main()
