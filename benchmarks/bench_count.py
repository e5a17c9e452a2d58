"""Whole-corpus answer counts: the streaming pass against one DuckDB query per answer, in the same run.

Builds (once, cached under ``--work``) a FineWeb-like corpus of ``--docs`` documents of
``--min-words``..``--max-words`` words in parquet shards (row groups of 1,024 rows, like the
FineWeb-Edu shards). The text is real English: sentences drawn from the questions of the
NanoKnow data directory (so answer strings and common short answers occur as often as in
prose about the same topics), a third of the documents with typographic quotes and dashes
(non-ASCII), and one document in 100 with an NQ answer planted. Then, interleaved,
``--repeats`` times:

* ours: ``nanoknow count`` (local, one process) over the whole corpus for every NQ question,
  both rules (substring and token);
* baseline: what a user would write first, one DuckDB query per answer,
  ``SELECT count(*) FROM read_parquet(shards) WHERE contains(lower(text), ?)`` (one thread,
  substring rule only), timed on ``--baseline-answers`` answers and scaled to all NQ
  answers (one query per distinct answer of each question).

Prints MB/s per core for both and ``count_speedup=<median> (<min>-<max>)``. Then, with Ray
installed, ``nanoknow count --ray local`` on the first ``--ray-shards`` shards with 2 tasks
against 1 (``ray_scaling=``), interleaved as well.

    python benchmarks/bench_count.py                 # 200k documents (about 1 GB of text)
    python benchmarks/bench_count.py --docs 20000    # a quick run
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from projection import layout  # noqa: E402
from projection.count import CountSettings, count_answers  # noqa: E402
from projection.data.files import read_answers, read_topics  # noqa: E402

TYPOGRAPHY = str.maketrans({"'": "\u2019", '"': "\u201d"})


def make_corpus(folder: Path, data_dir: Path, docs: int, shards: int, min_words: int, max_words: int,
                seed: int) -> None:
    """Write the corpus (once: a ``done`` file marks a finished one with these settings)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    stamp = folder / "done"
    wanted = json.dumps([docs, shards, min_words, max_words, seed])
    if stamp.is_file() and stamp.read_text() == wanted:
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    sentences = sorted({question.rstrip("?").capitalize() + "."
                        for path in sorted(data_dir.glob("*/*/topics.nanoknow-*.tsv"))
                        for question in read_topics(path).values()})
    nq_answers = [a for answers in read_answers(layout.answers_path(data_dir, "nq")).values() for a in answers]
    rng = random.Random(seed)
    per_shard = -(-docs // shards)
    written = 0
    for shard in range(shards):
        texts = []
        for _ in range(min(per_shard, docs - written)):
            target, words, parts = rng.randint(min_words, max_words), 0, []
            while words < target:
                sentence = rng.choice(sentences)
                parts.append(sentence)
                words += sentence.count(" ") + 1
            if rng.random() < 0.01:
                parts.insert(rng.randrange(len(parts)), f"The answer is {rng.choice(nq_answers)}.")
            text = " ".join(parts)
            if rng.random() < 1 / 3:
                text = text.translate(TYPOGRAPHY).replace(", ", " \u2014 ", 1)
            texts.append(text)
        written += len(texts)
        pq.write_table(pa.table({"text": texts}), folder / f"shard_{shard:05d}.parquet", row_group_size=1024)
        print(f"  wrote shard {shard + 1}/{shards}", flush=True)
    stamp.write_text(wanted)


def run_ours(corpus: Path, data_dir: Path, out: Path, **kwargs) -> float:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    count_answers(CountSettings(corpus=str(corpus), out=str(out), datasets=("nq",), data_dir=str(data_dir),
                                progress=False, **kwargs))
    return time.perf_counter() - started


def run_baseline(con, corpus: Path, answers: list[str]) -> float:
    """Seconds per answer for one ``contains`` query per answer over every shard."""
    pattern = str(corpus / "shard_*.parquet")
    started = time.perf_counter()
    for answer in answers:
        con.execute("SELECT count(*) FROM read_parquet(?) WHERE contains(lower(text), ?)",
                    [pattern, answer.lower()]).fetchone()
    return (time.perf_counter() - started) / len(answers)


def ratio_line(name: str, ratios: list[float]) -> str:
    return f"{name}={statistics.median(ratios):.1f} ({min(ratios):.1f}-{max(ratios):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--min-words", type=int, default=700)
    parser.add_argument("--max-words", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline-answers", type=int, default=6, help="answers timed per repeat (baseline)")
    parser.add_argument("--ray-shards", type=int, default=2, help="shards counted for ray_scaling (0: skip)")
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("NANOKNOW_DATA_DIR", "")))
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "nanoknow-bench-count")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if not (args.data_dir / "nq").is_dir():
        parser.error("needs the NanoKnow data: --data-dir or $NANOKNOW_DATA_DIR")
    import duckdb

    corpus = args.work / f"corpus-{args.docs}"
    started = time.perf_counter()
    make_corpus(corpus, args.data_dir, args.docs, args.shards, args.min_words, args.max_words, args.seed)
    import pyarrow.parquet as pq

    text_mb = sum(sum(len(t.encode()) for t in pq.read_table(p, columns=["text"]).column(0).to_pylist())
                  for p in sorted(corpus.glob("shard_*.parquet"))) / 1e6
    nq = read_answers(layout.answers_path(args.data_dir, "nq"))
    answers = [a for values in nq.values() for a in dict.fromkeys(values)]
    print(f"corpus: {args.docs} documents, {text_mb:.0f} MB of text in {args.shards} shards "
          f"({time.perf_counter() - started:.0f}s); NQ: {len(nq)} questions, {len(answers)} answers", flush=True)

    con = duckdb.connect()
    con.execute("SET threads = 1")  # per core, like the streaming pass (one process)
    rng = random.Random(args.seed)
    out = args.work / "out"
    ratios, ours_rates, base_rates = [], [], []
    run_baseline(con, corpus, answers[:1])  # warm the page cache and DuckDB
    for repeat in range(args.repeats):
        subset = rng.sample(answers, args.baseline_answers)
        sides = [("ours", None), ("baseline", None)]
        if repeat % 2:
            sides.reverse()  # alternate which side runs first
        timings = {}
        for side, _ in sides:
            if side == "ours":
                timings[side] = run_ours(corpus, args.data_dir, out)
            else:
                timings[side] = run_baseline(con, corpus, subset) * len(answers)
        ratios.append(timings["baseline"] / timings["ours"])
        ours_rates.append(text_mb / timings["ours"])
        base_rates.append(text_mb / (timings["baseline"] / len(answers)))
        print(f"repeat {repeat + 1}: ours {timings['ours']:.1f}s for all {len(answers)} answers (both rules); "
              f"baseline {timings['baseline'] / len(answers):.2f}s per answer -> {timings['baseline']:.0f}s; "
              f"ratio {ratios[-1]:.1f}", flush=True)
    print(f"ours: {statistics.median(ours_rates):.2f} MB/s per core over every answer at once; "
          f"baseline: {statistics.median(base_rates):.0f} MB/s per core per answer "
          f"(= {statistics.median(base_rates) / len(answers):.3f} MB/s for all {len(answers)} answers)")
    print(ratio_line("count_speedup", ratios), flush=True)

    if args.ray_shards > 0:
        try:
            import ray
        except ImportError:
            print("ray_scaling: skipped (pip install 'nanoknow[ray]')")
            return
        shards = f"0-{min(args.ray_shards, args.shards) - 1}"
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
        ray.data.DataContext.get_current().enable_progress_bars = False
        run_ours(corpus, args.data_dir, out, shards=shards, ray="local", workers=2)  # start the workers
        scaling = []
        for repeat in range(args.repeats):
            order = (1, 2) if repeat % 2 == 0 else (2, 1)
            seconds = {w: run_ours(corpus, args.data_dir, out, shards=shards, ray="local", workers=w) for w in order}
            scaling.append(seconds[1] / seconds[2])
            print(f"ray repeat {repeat + 1}: 1 task {seconds[1]:.1f}s, 2 tasks {seconds[2]:.1f}s "
                  f"(shards {shards})", flush=True)
        ray.shutdown()
        print(ratio_line("ray_scaling", scaling), flush=True)


if __name__ == "__main__":
    main()
