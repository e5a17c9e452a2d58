"""Final files of a projection, in the upstream layout plus two companions.

Under ``<root>/<dataset>/``: ``answers.nanoknow-<dataset>.jsonl``. Under
``<root>/<dataset>/<corpus_dir>/``: the topics of both splits, the supported qrels, and

* ``candidates.nanoknow-<dataset>-<slug>.parquet``: one row per stage-1 candidate with its
  stage-2 verdict (``verdict`` TRUE / COINCIDENTAL / UNPARSED, null when not judged);
* ``answer-frequency.nanoknow-<dataset>-<slug>.jsonl``: per question, the number of qrels
  documents (``answer_frequency``), of candidates and of unparsed judge outputs;
* ``projection-summary.json``: counts.

Every file is written to a temporary name and renamed, so readers never see half a file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from projection.data import layout


def candidates_path(root: Path, dataset: str, corpus_dir: str) -> Path:
    """Parquet of stage-1 candidates with stage-2 verdicts."""
    return Path(root) / dataset / corpus_dir / f"candidates.nanoknow-{dataset}-{layout.corpus_slug(corpus_dir)}.parquet"


def answer_frequency_path(root: Path, dataset: str, corpus_dir: str) -> Path:
    """JSONL of per-question answer frequency (number of qrels documents)."""
    return Path(root) / dataset / corpus_dir / f"answer-frequency.nanoknow-{dataset}-{layout.corpus_slug(corpus_dir)}.jsonl"


def summary_path(root: Path, dataset: str, corpus_dir: str) -> Path:
    return Path(root) / dataset / corpus_dir / "projection-summary.json"


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    from nanoknow_common.file_io import naming_path

    tmp = path.with_name(path.name + ".tmp")
    with naming_path(path):  # a failed write (disk full) names the file
        tmp.write_bytes(data)
    os.replace(tmp, path)


def _lines(rows: list[str]) -> bytes:
    return "".join(r + "\n" for r in rows).encode("utf-8")


def _clean(text: str) -> str:
    return " ".join(text.split())  # topics are one line, tab separated


def write_outputs(root: Path, dataset: str, corpus_dir: str, questions, stage1: list[dict], stage2: list[dict],
                  *, verified: bool = True) -> dict:
    """Write every final file from stage-1 and stage-2 records (one per question, in order)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    answers, supported, unsupported, qrels, freq = [], [], [], [], []
    table: dict[str, list] = {k: [] for k in ("qid", "question", "doc_id", "rank", "bm25_score", "matched_answer",
                                              "found_answers", "match_offset", "passage_start", "passage",
                                              "verdict", "supported", "judge_reason", "judge_output")}
    n_unparsed = n_true = n_judged = 0
    for q, s1, s2 in zip(questions, stage1, stage2, strict=True):
        assert q.qid == s1["qid"] == s2["qid"]
        answers.append(json.dumps({"qid": q.qid, "answer": list(q.answers)}, ensure_ascii=False))
        docs, unparsed = [], 0
        for cand, verdict in zip(s1["candidates"], s2["verdicts"], strict=True):
            label = verdict["label"] if verdict else None
            ok = (label == "TRUE") if verified else True
            if label is not None:
                n_judged += 1
            unparsed += label == "UNPARSED"
            if ok:
                docs.append(cand["doc_id"])
            for key in ("doc_id", "rank", "bm25_score", "matched_answer", "found_answers", "match_offset",
                        "passage_start", "passage"):
                table[key].append(cand[key])
            table["qid"].append(q.qid)
            table["question"].append(q.question)
            table["verdict"].append(label)
            table["supported"].append(None if label in (None, "UNPARSED") else label == "TRUE")
            table["judge_reason"].append(verdict["reason"] if verdict else None)
            table["judge_output"].append(verdict["raw"] if verdict else None)
        n_unparsed += unparsed
        n_true += len(docs) if verified else 0
        (supported if docs else unsupported).append(f"{q.qid}\t{_clean(q.question)}")
        qrels += [f"{q.qid} Q0 {d} 1" for d in docs]
        freq.append(json.dumps({"qid": q.qid, "answer_frequency": len(docs), "candidates": len(s1["candidates"]),
                                "unparsed": unparsed}))
    root = Path(root)
    _write_atomic(layout.answers_path(root, dataset), _lines(answers))
    _write_atomic(layout.topics_path(root, dataset, corpus_dir, "supported"), _lines(supported))
    _write_atomic(layout.topics_path(root, dataset, corpus_dir, "unsupported"), _lines(unsupported))
    _write_atomic(layout.qrels_path(root, dataset, corpus_dir), _lines(qrels))
    _write_atomic(answer_frequency_path(root, dataset, corpus_dir), _lines(freq))
    schema = pa.schema([("qid", pa.string()), ("question", pa.string()), ("doc_id", pa.string()),
                        ("rank", pa.int32()), ("bm25_score", pa.float32()), ("matched_answer", pa.string()),
                        ("found_answers", pa.list_(pa.string())), ("match_offset", pa.int64()),
                        ("passage_start", pa.int64()), ("passage", pa.string()), ("verdict", pa.string()),
                        ("supported", pa.bool_()), ("judge_reason", pa.string()), ("judge_output", pa.string())])
    buffer = io.BytesIO()
    pq.write_table(pa.table(table, schema=schema), buffer, compression="zstd")
    _write_atomic(candidates_path(root, dataset, corpus_dir), buffer.getvalue())
    summary = {"questions": len(answers), "supported": len(supported), "unsupported": len(unsupported),
               "qrels": len(qrels), "candidates": len(table["qid"]), "judged": n_judged,
               "judged_true": n_true, "unparsed": n_unparsed}
    _write_atomic(summary_path(root, dataset, corpus_dir), (json.dumps(summary, indent=2) + "\n").encode())
    return summary
