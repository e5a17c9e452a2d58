"""Projection of QA benchmarks onto a pre-training corpus, and the datasets built from it.

Sub-packages follow the pipeline:

* :mod:`.data`: the NanoKnow files (layout, readers, manifest, fetch, checks, where they are);
* :mod:`.corpus`: parquet shards and doc ids (DuckDB reads);
* :mod:`.index`: the Lucene BM25 index (the only code that touches pyserini/Java);
* :mod:`.stage1`: BM25 retrieval and answer matching with passage windows;
* :mod:`.stage2`: LLM verification of the matched passages;
* :mod:`.outputs`: the final files (topics, qrels, answers, candidates, frequencies);
* :mod:`.pipeline`: the resumable run of stage 1 -> stage 2 -> outputs;
* :mod:`.datasets`: built HF datasets (oracle, distractors, SQuAD context) and publishing;
* :mod:`.diary`: the diary knowledge-extent data generator.

Python API (imported lazily, so ``import projection`` stays cheap)::

    from projection import ProjectSettings, project, BuildSettings, build
"""

from __future__ import annotations

__all__ = ["BuildSettings", "ProjectSettings", "build", "project"]

_LAZY = {"ProjectSettings": "projection.pipeline", "project": "projection.pipeline",
         "BuildSettings": "projection.datasets.build", "build": "projection.datasets.build"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'projection' has no attribute {name!r}")
