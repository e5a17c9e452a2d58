"""Seen/unseen subsets of supported questions for one evaluated checkpoint (the exposure tasks).

A row's ``qrels_shards`` lists the shard of each of its qrels documents (file order); with the
checkpoint's exposure (``--metadata`` ``shards_seen``, ``tokens_read`` or ``exposure_from``,
see :func:`projection.exposure.resolve_exposure`) a supported question is *seen* when one of
those shards was surely read and *unseen* when none was possibly read (questions inside an
uncertainty band belong to neither). Rows gain ``exposure_status`` and ``frequency_read``.
"""

from __future__ import annotations

import logging

import datasets

from nanoknow_common.errors import NanoKnowInputError
from projection.corpus.shards import parse_doc_id

log = logging.getLogger(__name__)

EXPOSURE_KINDS = ("seen", "unseen")


def shards_of(doc_ids: list[str]) -> list[int]:
    """The shard of each qrels document, in order."""
    return [parse_doc_id(d)[0] for d in doc_ids]


def select_exposed(rows: datasets.Dataset, kind: str, metadata: dict, *, corpus_dir: str,
                   task: str) -> datasets.Dataset:
    """Rows of ``kind`` (seen/unseen) under the exposure that ``metadata`` gives; raises without one."""
    from projection.exposure import resolve_exposure

    if kind not in EXPOSURE_KINDS:
        raise ValueError(f"exposure kind must be one of {EXPOSURE_KINDS}, got {kind!r}")
    exposure = resolve_exposure(metadata)
    mismatch = exposure.corpus_mismatch(corpus_dir)
    if mismatch:
        log.warning("%s: %s", task, mismatch)
    if "qrels_shards" not in rows.column_names:
        raise NanoKnowInputError(
            "the built dataset has no qrels_shards column (built before exposure support): rebuild it "
            "with `nanoknow build`, or pass --metadata '{\"data_dir\": ...}' so the qrels are read",
            field="dataset_dir")
    statuses = [exposure.status(shards or []) for shards in rows["qrels_shards"]]
    keep = [i for i, status in enumerate(statuses) if status == kind]
    counts = {s: statuses.count(s) for s in sorted(set(statuses))}
    log.info("%s: %s (%s); %d questions %s", task, exposure.describe(),
             ", ".join(f"{n} {s}" for s, n in counts.items()), len(keep), kind)
    if not keep:
        log.warning("%s: no supported question is %s under this exposure", task, kind)
    read = [exposure.frequency_read(rows[i]["qrels_shards"])[0] for i in keep]
    rows = rows.select(keep)
    return rows.add_column("exposure_status", [kind] * len(keep)).add_column("frequency_read", read)
