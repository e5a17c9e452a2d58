"""The diary generator and the `nanoknow diary make` layout, on real files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from projection.diary import schema
from projection.diary.generator import SPLITS, generate_diary_set
from projection.diary.files import read_manifest, read_qa_split
from nanoknow_tasks.diary.metrics import parse_entries
from nanoknow_common.errors import NanoKnowInputError

ATTRIBUTE_LINE = {f"{k}: {v}" for k, values in schema.ATTRIBUTES.items() for v in values}


@pytest.fixture(scope="module")
def made(tmp_path_factory, run) -> Path:
    out = tmp_path_factory.mktemp("diary") / "d1k"
    run(["nanoknow", "diary", "make", "--diarists", "1000", "--seed", "7", "--out", str(out),
         "--rows-per-shard", "2000"])
    return out


def _shard_rows(folder: Path) -> list[dict]:
    shards = sorted(folder.glob("shard_*.parquet"))
    assert [p.name for p in shards] == [f"shard_{i:05d}.parquet" for i in range(len(shards))]
    return [row for p in shards for row in pq.read_table(p).to_pylist()]


def test_paper_sizes_8k_has_36000_entries_and_400_test_questions():
    diary = generate_diary_set(8000)
    assert diary.num_entries == 36000
    assert {s: len(diary.split(s)) for s in SPLITS} == {"train": 7200, "validation": 400, "test": 400}
    assert len({d.name for d in diary.diarists}) == 8000


def test_counts_on_disk(made):
    manifest = read_manifest(made)
    splits = {s: read_qa_split(made, s) for s in SPLITS}
    assert {s: len(r) for s, r in splits.items()} == {"train": 900, "validation": 50, "test": 50}
    entries = pq.read_table(made / "entries.parquet").to_pylist()
    assert len(entries) == manifest["counts"]["entries"] == sum(r["num_entries"] for rs in splits.values() for r in rs)
    assert len(entries) == 4500  # counts 1..8 balanced over 1000 diarists: 125 x 36
    docs = _shard_rows(made / "documents")
    kinds = Counter(d["kind"] for d in docs)
    assert kinds == {"entry": 4500, "qa": 900}
    assert len(docs) == manifest["counts"]["standard_documents"] and len(list((made / "documents").iterdir())) == 3


def test_entries_follow_the_format(made):
    rows = read_qa_split(made, "train")
    for row in rows[:200]:
        entries = parse_entries(row["answer"])
        assert len(entries) == row["num_entries"] and [len(e) - 1 for e in entries] == row["entry_lengths"]
        for index, entry in enumerate(entries, 1):
            assert entry[0] == f"{row['name']}'s Diary Entry {index}"
            lines = entry[1:]
            assert set(lines) <= ATTRIBUTE_LINE
            assert len({line.split(":")[0] for line in lines}) == len(lines)  # without replacement
        assert row["question"] == f"Recall all of {row['name']}'s diary entries, in order."


def test_uniform_entry_counts_and_lengths_per_split(made):
    for split in SPLITS:
        rows = read_qa_split(made, split)
        counts = Counter(r["num_entries"] for r in rows)
        lengths = Counter(n for r in rows for n in r["entry_lengths"])
        assert sorted(counts) == list(range(1, 9)) and max(counts.values()) - min(counts.values()) <= 1, (split, counts)
        assert sorted(lengths) == list(range(1, 9)) and max(lengths.values()) - min(lengths.values()) <= 1, (split, lengths)


def test_no_question_in_two_splits_and_only_train_questions_are_documents(made):
    ids = {s: {r["qid"] for r in read_qa_split(made, s)} for s in SPLITS}
    names = {s: {r["name"] for r in read_qa_split(made, s)} for s in SPLITS}
    for a in SPLITS:
        for b in SPLITS:
            if a < b:
                assert not ids[a] & ids[b] and not names[a] & names[b]
    assert sum(map(len, names.values())) == 1000  # names are unique
    docs = _shard_rows(made / "documents")
    qa_texts = {d["text"] for d in docs if d["kind"] == "qa"}
    train = read_qa_split(made, "train")
    assert qa_texts == {r["question"] + "\n" + r["answer"] for r in train}
    held_out = [r for s in ("validation", "test") for r in read_qa_split(made, s)]
    assert not any(r["question"] in d["text"] for r in held_out for d in docs)
    # ... while every held-out diarist's entries are training documents
    entry_texts = {d["text"] for d in docs if d["kind"] == "entry"}
    for r in held_out:
        assert all("\n".join(e) in entry_texts for e in parse_entries(r["answer"]))


def test_same_seed_same_bytes_other_seed_other_set(made, tmp_path, run):
    again = tmp_path / "again"
    run(["nanoknow", "diary", "make", "--diarists", "1000", "--seed", "7", "--out", str(again),
         "--rows-per-shard", "2000"])
    files = sorted(p.relative_to(made) for p in made.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for rel in files:
        assert (made / rel).read_bytes() == (again / rel).read_bytes(), rel
    other = generate_diary_set(1000, seed=8)
    assert [d.qa_row() for d in other.split("test")] != read_qa_split(made, "test")


def test_simplified_variant_merges_each_diarists_entries(made):
    standard, simplified = _shard_rows(made / "documents"), _shard_rows(made / "simplified")
    entries: dict[int, dict[int, str]] = {}
    for d in standard:
        if d["kind"] == "entry":
            entries.setdefault(d["diarist_id"], {})[d["entry"]] = d["text"]
    merged = {d["diarist_id"]: d["text"] for d in simplified if d["kind"] == "merged"}
    assert len(merged) == len(entries) == 1000
    for diarist, texts in entries.items():
        assert merged[diarist] == "\n\n".join(texts[i] for i in sorted(texts))
    assert sorted(d["text"] for d in standard if d["kind"] == "qa") == sorted(d["text"] for d in simplified if d["kind"] == "qa")
    # the merged document is exactly the answer to the recall question
    answers = {r["diarist_id"]: r["answer"] for s in SPLITS for r in read_qa_split(made, s)}
    assert merged == answers


def test_bad_input_is_reported_with_the_field_or_file(tmp_path, run):
    for bad in ("0", "-3", "abc", "2.5"):
        proc = run(["nanoknow", "diary", "make", "--diarists", bad, "--out", str(tmp_path / "x")], check=False)
        assert proc.returncode == 2 and "--diarists" in proc.stderr, (bad, proc.stderr)
    with pytest.raises(NanoKnowInputError, match="manifest.json"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "nanoknow-diary", "version": 1,
                                                        "seed": 1, "diarists": 10}))
    with pytest.raises(NanoKnowInputError, match=r"qa/test.jsonl"):
        read_qa_split(tmp_path, "test")
    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "test.jsonl").write_text('{"qid": "a", "question": "q"}\n')
    with pytest.raises(NanoKnowInputError, match=r"test.jsonl:1: diarist_id: missing"):
        read_qa_split(tmp_path, "test")
