"""File names of the upstream NanoKnow layout (``questions-and-qrels/``).

    <root>/<dataset>/answers.nanoknow-<dataset>.jsonl
    <root>/<dataset>/<corpus_dir>/topics.nanoknow-<dataset>-<slug>.{supported,unsupported}.tsv
    <root>/<dataset>/<corpus_dir>/qrels.nanoknow-<dataset>-<slug>.supported.txt

The corpus folder ``fineweb-edu`` uses the slug ``fineweb`` in file names; every other corpus
folder (``climbmix``, a user's own corpus) uses its folder name as the slug.
"""

from __future__ import annotations

from pathlib import Path

SPLITS = ("supported", "unsupported")
_SLUGS = {"fineweb-edu": "fineweb"}


def corpus_slug(corpus_dir: str) -> str:
    """The slug used in file names for a corpus folder name."""
    return _SLUGS.get(corpus_dir, corpus_dir)


def answers_path(root: Path, dataset: str) -> Path:
    """``<root>/<dataset>/answers.nanoknow-<dataset>.jsonl``."""
    return Path(root) / dataset / f"answers.nanoknow-{dataset}.jsonl"


def topics_path(root: Path, dataset: str, corpus_dir: str, split: str) -> Path:
    """Topics TSV (``qid<TAB>question``) of one split."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return Path(root) / dataset / corpus_dir / f"topics.nanoknow-{dataset}-{corpus_slug(corpus_dir)}.{split}.tsv"


def qrels_path(root: Path, dataset: str, corpus_dir: str) -> Path:
    """TREC qrels (``qid Q0 doc_id 1``) of the supported split."""
    return Path(root) / dataset / corpus_dir / f"qrels.nanoknow-{dataset}-{corpus_slug(corpus_dir)}.supported.txt"


def discover(root: Path) -> list[tuple[str, str]]:
    """All ``(dataset, corpus_dir)`` pairs under ``root`` that have at least one topics file."""
    found = set()
    for path in Path(root).glob("*/*/topics.nanoknow-*.tsv"):
        found.add((path.parent.parent.name, path.parent.name))
    return sorted(found)
