"""Compose a task's context from a built row: oracle alone, SQuAD's paragraph, or oracle among distractors."""

from __future__ import annotations

POSITIONS = ("first", "middle", "last")
PASSAGE_SEPARATOR = "\n\n"


def oracle_slot(k: int, position: str) -> int:
    """Index of the oracle among ``k + 1`` passages: first 0, middle ``k // 2``, last ``k``."""
    if position not in POSITIONS:
        raise ValueError(f"position must be one of {POSITIONS}, got {position!r}")
    return {"first": 0, "middle": k // 2, "last": k}[position]


def distractor_passages(row: dict, k: int, position: str) -> list[str] | None:
    """The oracle placed among the first ``k`` distractors (the same ``k`` for every position)."""
    oracle = row.get("oracle")
    distractors = row.get("distractors") or []
    if not oracle or len(distractors) < k:
        return None
    passages = [d["passage"] for d in distractors[:k]]
    passages.insert(oracle_slot(k, position), oracle["passage"])
    return passages


def compose_context(row: dict, kind: str, *, k: int | None = None, position: str | None = None) -> str | None:
    """The context text of ``row`` for ``kind`` (oracle, original, distractors), or None if unavailable."""
    if kind == "oracle":
        return row["oracle"]["passage"] if row.get("oracle") else None
    if kind == "original":
        return row.get("original_context") or None
    if kind == "distractors":
        passages = distractor_passages(row, int(k), position)
        return None if passages is None else PASSAGE_SEPARATOR.join(passages)
    raise ValueError(f"unknown context kind {kind!r}")
