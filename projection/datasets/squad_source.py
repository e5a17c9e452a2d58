"""SQuAD v1.1 dev paragraphs for ``original_context``: NanoKnow's SQuAD qid is the row index.

A source is a Hub dataset id (``rajpurkar/squad``, validation split, loaded with ``datasets``
when the network allows) or a local file: the official ``dev-v1.1.json``, or a ``.jsonl`` /
``.parquet`` with ``question`` and ``context`` columns in the dev set's order. Every question
is checked against the source's question at that row, so a wrong source fails loudly.
"""

from __future__ import annotations

import json
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError
from projection.data.files import Question


def _rows_from_official_json(path: Path) -> list[dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [{"question": qa["question"], "context": paragraph["context"]}
            for article in data["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


def read_squad_rows(source: str) -> list[dict]:
    """``[{"question", "context"}, ...]`` in SQuAD dev order from a local file or a Hub id."""
    path = Path(source)
    if path.suffix == ".json" and path.is_file():
        return _rows_from_official_json(path)
    if path.suffix in (".jsonl", ".parquet") and path.is_file():
        import datasets

        kind = "json" if path.suffix == ".jsonl" else "parquet"
        table = datasets.load_dataset(kind, data_files=str(path), split="train")
    elif path.exists():
        raise NanoKnowInputError("expected a .json (SQuAD v1.1), .jsonl or .parquet file", file=path,
                                 field="--squad-source")
    else:
        import datasets

        table = datasets.load_dataset(source, split="validation")
    missing = {"question", "context"} - set(table.column_names)
    if missing:
        raise NanoKnowInputError(f"columns {sorted(missing)} missing", file=source, field="--squad-source")
    return [{"question": q, "context": c} for q, c in zip(table["question"], table["context"])]


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).lower() == " ".join(b.split()).lower()


def load_squad_contexts(source: str, questions: list[Question]) -> dict[str, str]:
    """``{qid: paragraph}`` for NanoKnow SQuAD questions, checked question by question."""
    rows = read_squad_rows(source)
    contexts = {}
    for q in questions:
        index = int(q.qid) if q.qid.isdigit() else -1
        if not 0 <= index < len(rows):
            raise NanoKnowInputError(f"qid {q.qid!r} has no row in the SQuAD source ({len(rows)} rows)",
                                     file=source, field="qid")
        if not _same(rows[index]["question"], q.question):
            raise NanoKnowInputError(f"row {index} asks {rows[index]['question']!r}, NanoKnow qid {q.qid} asks "
                                     f"{q.question!r}: not the SQuAD v1.1 dev set in its order",
                                     file=source, field="question")
        contexts[q.qid] = rows[index]["context"]
    return contexts
