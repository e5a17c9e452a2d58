"""``nanoknow count --ray``: the same counts, with Ray Data reading shards and matching in tasks.

Ray Data reads the text column of the shards still to count (``read_parquet`` with the
source path of every row) and runs :func:`count_batch` on each record batch; the read and
the count fuse into one task, so only the counts travel back to the driver. Each worker
process builds the :class:`~projection.count.matcher.AnswerMatcher` once (the answers go
through the object store once) and keeps it for its next tasks. The driver adds the counts
per shard and writes a shard's result file as soon as all its rows are counted (the row
count comes from the parquet footer), so a killed run resumes per shard exactly like a
local one, and the files are identical.

Every node needs this package (``pip install 'nanoknow[ray]'``, same version) and must see
the corpus at the same path or URI.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import numpy as np

from projection.corpus.shards import SHARD_FILE_RE, Corpus
from projection.count import results
from projection.count.matcher import AnswerMatcher
from projection.count.questions import CountQuestion, fingerprint
from projection.count.shards import check_text_column
from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

_MATCHERS: dict[str, AnswerMatcher] = {}  # per worker process: fingerprint -> matcher


def _matcher(key: str, answers_ref) -> AnswerMatcher:
    if key not in _MATCHERS:
        import ray

        _MATCHERS.clear()  # one question set at a time per worker
        _MATCHERS[key] = AnswerMatcher(ray.get(answers_ref))
    return _MATCHERS[key]


def count_batch(batch, *, key: str, answers_ref, column: str):
    """Ray Data task: per source file of a record batch, its documents and non-zero counts."""
    import pyarrow as pa

    matcher = _matcher(key, answers_ref)
    by_path: dict[str, list] = {}
    for path, text in zip(batch.column("path").to_pylist(), batch.column(column).to_pylist()):
        by_path.setdefault(path, []).append(text)
    rows = {"path": [], "documents": [], "questions": [], "substring": [], "token": []}
    for path, texts in by_path.items():
        substring, token, documents = matcher.count(texts)
        nonzero = np.flatnonzero((substring > 0) | (token > 0))
        rows["path"].append(path)
        rows["documents"].append(documents)
        rows["questions"].append(nonzero.tolist())
        rows["substring"].append(substring[nonzero].tolist())
        rows["token"].append(token[nonzero].tolist())
    return pa.table({"path": pa.array(rows["path"], pa.string()),
                     "documents": pa.array(rows["documents"], pa.int64()),
                     "questions": pa.array(rows["questions"], pa.list_(pa.int64())),
                     "substring": pa.array(rows["substring"], pa.list_(pa.int64())),
                     "token": pa.array(rows["token"], pa.list_(pa.int64()))})


def _shard_of(path: str) -> int:
    match = SHARD_FILE_RE.match(Path(path).name)
    if match is None:  # pragma: no cover - Ray reads only the paths given
        raise RuntimeError(f"Ray returned rows of an unexpected file {path}")
    return int(match.group(1))


def _connect(address: str, workers: int | None) -> bool:
    """Join (or start) a Ray cluster unless one is already joined; True when joined here."""
    try:
        import ray
    except ImportError as err:
        raise NanoKnowInputError("Ray is not installed: pip install 'nanoknow[ray]'", field="--ray") from err
    if ray.is_initialized():
        return False
    if address == "local":
        ray.init(num_cpus=workers, include_dashboard=False, logging_level=logging.WARNING)
    else:
        try:
            ray.init(address=address, logging_level=logging.WARNING)
        except ConnectionError as err:
            raise NanoKnowInputError(f"cannot reach a Ray cluster at {address!r} ({err}); start one with "
                                     "`ray start --head` or use --ray local", field="--ray") from err
    return True


def count_with_ray(corpus: Corpus, questions: Sequence[CountQuestion], todo: list[int], out: Path, *,
                   address: str = "auto", workers: int | None = None, progress: bool = True) -> None:
    """Count ``todo`` shards with Ray Data; write each shard's result when it is complete."""
    joined_here = _connect(address, workers)
    import ray
    from tqdm import tqdm

    try:
        expected = {}
        for shard in todo:  # checked here, so a bad shard is a one-line error, not a failed task
            check_text_column(corpus, shard)
            expected[shard] = corpus.num_rows(shard)
        # counts of the shards under way only (allocated at their first rows), so memory does not
        # grow with the number of shards
        partial: dict[int, list] = {}
        for shard in todo:
            if expected[shard] == 0:
                results.write_shard_result(out, shard, 0, questions, np.zeros(len(questions), np.int64),
                                           np.zeros(len(questions), np.int64))
        remaining = [s for s in todo if expected[s] > 0]
        if not remaining:
            return
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        if workers is None:
            workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        answers_ref = ray.put([list(q.answers) for q in questions])
        column = corpus.text_column
        # the read gets the same task limit as the count, so the two fuse into one task
        dataset = ray.data.read_parquet([corpus.shard_uri(s) for s in remaining], include_paths=True,
                                        override_num_blocks=max(workers, len(remaining)), concurrency=workers)
        dataset = dataset.select_columns([column, "path"])  # pushed down: only the text is read
        # batch_size=None: a whole read block per call (a fixed size would stop the fusion)
        counted = dataset.map_batches(count_batch, batch_format="pyarrow", batch_size=None,
                                      compute=ray.data.TaskPoolStrategy(size=workers),
                                      fn_kwargs={"key": fingerprint(questions), "answers_ref": answers_ref,
                                                 "column": column})
        total = sum(expected[s] for s in remaining)
        finished = 0
        with tqdm(total=total, desc=f"counting answers (Ray, {workers} tasks)", unit="doc", unit_scale=True,
                  disable=not progress) as bar:
            for block in counted.iter_batches(batch_format="pyarrow", batch_size=None):
                for row in block.to_pylist():
                    shard = _shard_of(row["path"])
                    if shard not in partial:
                        partial[shard] = [np.zeros(len(questions), np.int64), np.zeros(len(questions), np.int64), 0]
                    entry = partial[shard]
                    entry[0][row["questions"]] += row["substring"]
                    entry[1][row["questions"]] += row["token"]
                    entry[2] += row["documents"]
                    bar.update(row["documents"])
                    if entry[2] == expected[shard]:
                        results.write_shard_result(out, shard, entry[2], questions, entry[0], entry[1])
                        del partial[shard]
                        finished += 1
        if finished < len(remaining):
            left = {f"{s:05d}": f"{v[2]}/{expected[s]}" for s, v in partial.items()}
            raise RuntimeError(f"Ray returned too few rows for shards {left}")
    finally:
        if joined_here:
            ray.shutdown()
