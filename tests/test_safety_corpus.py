"""Issue 13, corpus reads: glob characters in folder names (case 5) and a text column that is
not text (case 9). Real parquet files read by DuckDB, ``nanoknow build`` run in-process."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nanoknow.cli import main
from nanoknow_common.errors import NanoKnowInputError
from projection.corpus.shards import Corpus
from tests.safety_helpers import one_line_error, write_corpus, write_root


# -- case 5: a folder named like a glob pattern is read as named --------------------------
@pytest.mark.parametrize("name, siblings", [("glob[1]", ["glob1"]), ("star*dir", ["stardir", "starXdir"]),
                                            ("what?", ["whatX"])])
def test_a_corpus_folder_with_glob_characters_reads_only_its_own_shards(tmp_path, name, siblings):
    for sibling in siblings:  # folders the name would match as a pattern, with more rows
        write_corpus(tmp_path / sibling, marker=f"SIBLING-{sibling}")
        pq.write_table(pa.table({"text": ["x"] * 50}), tmp_path / sibling / "shard_00002.parquet")
    own = write_corpus(tmp_path / name, marker="OWN")
    pq.write_table(pa.table({"text": ["own extra"]}), own / "shard_00002.parquet")
    corpus = Corpus(own)
    texts = corpus.read_documents(["shard_00000_1", "shard_00001_0", "shard_00002_0"])
    assert list(texts.values()) == [
        "OWN The copper lantern was built by Ada Vell in a small workshop.",
        "OWN Norrvik has a glacier harbor and a fish market.", "own extra"]
    assert corpus.num_rows(0) == 6 and corpus.num_rows(2) == 1
    assert [text for _, text in corpus.iter_shard(1)] == ["OWN Norrvik has a glacier harbor and a fish market.",
                                                          "OWN orbit castle apple"]
    with pytest.raises(NanoKnowInputError, match="past the end"):  # the sibling's 50 rows are not ours
        corpus.read_documents(["shard_00002_10"])


def test_build_over_a_glob_named_corpus_uses_its_own_documents(tmp_path, capsys):
    write_corpus(tmp_path / "glob1", marker="SIBLING")
    write_corpus(tmp_path / "glob[1]", marker="OWN")
    root = write_root(tmp_path / "data")
    assert main(["build", "--data-dir", str(root), "--dataset", "nq", "--corpus-dir", "sample",
                 "--corpus", str(tmp_path / "glob[1]"), "--out", str(tmp_path / "built"), "--distractors", "1"]) == 0
    table = pq.read_table(tmp_path / "built" / "nq" / "sample" / "supported.parquet").to_pylist()
    passages = [row["oracle"]["passage"] for row in table] + [d["passage"] for row in table for d in row["distractors"]]
    assert passages and all(p.startswith("OWN") for p in passages), passages


# -- case 9: a text column of integers is refused with the shard and column named ----------
def _integer_text_corpus(folder):
    write_corpus(folder)
    pq.write_table(pa.table({"text": list(range(6))}), folder / "shard_00000.parquet")
    return folder


def test_reading_a_non_string_text_column_is_refused(tmp_path):
    corpus = Corpus(_integer_text_corpus(tmp_path / "corpus"))
    for read in (lambda: corpus.read_documents(["shard_00000_1"]), lambda: list(corpus.iter_shard(0)),
                 lambda: corpus.check_text_column(0)):
        with pytest.raises(NanoKnowInputError) as err:
            read()
        assert err.value.file.endswith("shard_00000.parquet") and err.value.field == "text"
        assert "not text" in str(err.value)


def test_build_with_an_integer_text_column_exits_2_naming_the_shard(tmp_path, capsys):
    corpus = _integer_text_corpus(tmp_path / "corpus")
    root = write_root(tmp_path / "data")
    code = main(["build", "--data-dir", str(root), "--dataset", "nq", "--corpus-dir", "sample",
                 "--corpus", str(corpus), "--out", str(tmp_path / "built")])
    line = one_line_error(capsys.readouterr().err)
    assert code == 2
    assert "shard_00000.parquet" in line and "'text'" in line and "not text" in line
