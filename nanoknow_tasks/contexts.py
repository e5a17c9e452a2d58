"""Compose a task's context from a built row: oracle alone, SQuAD's paragraph, or oracle among distractors.

The oracle task uses the oracle's ``passage`` (the paper's window, 200 words by default). The
distractor grid uses shorter passages of one length throughout (``oracle.grid_passage`` and
the distractors' passages, 100 words by default), so that k = 8 still fits a 2,048-token
context, and it runs every k and position on the same questions: those with an oracle and at
least :data:`~nanoknow_tasks.task_specs.MAX_DISTRACTORS` distractors (:func:`in_grid`).
"""

from __future__ import annotations

from nanoknow_tasks.task_specs import MAX_DISTRACTORS, POSITIONS, positions_for

PASSAGE_SEPARATOR = "\n\n"
#: ``--metadata '{"distractors": ...}'`` value -> the built column it reads.
DISTRACTOR_FIELDS = {"hard": "distractors", "random": "random_distractors"}
DEFAULT_DISTRACTORS = "hard"


def oracle_slot(k: int, position: str) -> int:
    """Index of the oracle among ``k + 1`` passages: first 0, middle ``k // 2`` (k >= 2 only), last ``k``."""
    if position not in POSITIONS:
        raise ValueError(f"position must be one of {POSITIONS}, got {position!r}")
    if position not in positions_for(k):
        raise ValueError(f"k={k} has positions {positions_for(k)}; the middle slot needs k >= 2 "
                         "(for k=1 it would be the first)")
    return {"first": 0, "middle": k // 2, "last": k}[position]


def distractor_field(kind: str) -> str:
    """The built column of distractor ``kind`` (``hard`` or ``random``)."""
    if kind not in DISTRACTOR_FIELDS:
        raise ValueError(f"distractors must be one of {', '.join(DISTRACTOR_FIELDS)}, got {kind!r}")
    return DISTRACTOR_FIELDS[kind]


def in_grid(row: dict, kind: str = DEFAULT_DISTRACTORS) -> bool:
    """Whether ``row`` belongs to the distractor grid: an oracle and enough ``kind`` distractors."""
    return bool(row.get("oracle")) and len(row.get(distractor_field(kind)) or []) >= MAX_DISTRACTORS


def distractor_passages(row: dict, k: int, position: str | None,
                        kind: str = DEFAULT_DISTRACTORS) -> list[str] | None:
    """The oracle's grid passage among the first ``k`` distractors (the same ``k`` for every
    position); just the grid passage for k = 0. None for a row outside the grid."""
    if not in_grid(row, kind):
        return None
    oracle = row["oracle"]["grid_passage"]
    if k == 0:
        if position is not None:
            raise ValueError("k=0 has no position: the oracle is alone")
        return [oracle]
    passages = [d["passage"] for d in row[distractor_field(kind)][:k]]
    passages.insert(oracle_slot(k, position), oracle)
    return passages


def compose_context(row: dict, kind: str, *, k: int | None = None, position: str | None = None,
                    distractors: str = DEFAULT_DISTRACTORS) -> str | None:
    """The context text of ``row`` for ``kind`` (oracle, original, distractors), or None if unavailable."""
    if kind == "oracle":
        return row["oracle"]["passage"] if row.get("oracle") else None
    if kind == "original":
        return row.get("original_context") or None
    if kind == "distractors":
        passages = distractor_passages(row, int(k), position, distractors)
        return None if passages is None else PASSAGE_SEPARATOR.join(passages)
    raise ValueError(f"unknown context kind {kind!r}")
