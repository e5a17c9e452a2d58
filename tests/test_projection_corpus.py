"""Corpus reads (real parquet files read by DuckDB), answer matching, passages, verdict parsing."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from projection.stage1.answer_match import answers_in_text, find_first_match, normalize
from projection.corpus.shards import Corpus, canonical_doc_id, parse_doc_id, read_documents
from nanoknow_common.errors import NanoKnowInputError
from projection.stage1.passages import extract_passage, passage_around
from projection.stage2.verification import COINCIDENTAL, TRUE, UNPARSED, verifier_messages, parse_verdict


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    for shard, n in ((0, 2500), (3, 40)):
        texts = [f"document {shard}-{row} body" for row in range(n)]
        pq.write_table(pa.table({"text": texts}), root / f"shard_{shard:05d}.parquet", row_group_size=500)
    (root / "notes.txt").write_text("not a shard")
    return root


def test_reads_by_id_across_shards_in_requested_order(corpus_dir):
    ids = ["shard_00003_39", "shard_00000_2499", "shard_00000_0", "shard_00000_1234", "shard_00003_0"]
    got = read_documents(corpus_dir, ids)
    assert list(got) == ids
    assert got == {i: f"document {int(i[6:11])}-{int(i[12:])} body" for i in ids}


def test_padded_and_unpadded_ids_are_the_same_row(corpus_dir):
    got = Corpus(corpus_dir).read_documents(["shard_00000_000487", "shard_00000_487"])
    assert got["shard_00000_000487"] == got["shard_00000_487"] == "document 0-487 body"
    assert parse_doc_id("shard_01031_000487") == (1031, 487)
    assert canonical_doc_id("shard_01031_000487") == "shard_01031_487"


def test_one_query_per_shard(corpus_dir, monkeypatch):
    corpus = Corpus(corpus_dir)
    calls = []
    original = Corpus._query

    def counting(self, sql, params, uri, example):
        calls.append(uri)
        return original(self, sql, params, uri, example)

    monkeypatch.setattr(Corpus, "_query", counting)
    corpus.read_documents([f"shard_00000_{r}" for r in range(0, 2500, 7)] + ["shard_00003_5"])
    assert len(calls) == 2


@pytest.mark.parametrize("bad", ["shard_1_2", "shard_00001", "doc42", "shard_00001_-3", "shard_00001_2x", ""])
def test_malformed_ids_are_named(corpus_dir, bad):
    with pytest.raises(NanoKnowInputError, match="malformed document id") as err:
        read_documents(corpus_dir, [bad])
    assert err.value.field == "doc_id"


def test_missing_shard_names_the_file_and_the_id(corpus_dir):
    with pytest.raises(NanoKnowInputError, match=r"shard_00007\.parquet not found.*shard_00007_3") as err:
        read_documents(corpus_dir, ["shard_00000_1", "shard_00007_3"])
    assert err.value.file.endswith("shard_00007.parquet")


def test_row_past_the_end_gives_the_shard_size(corpus_dir):
    with pytest.raises(NanoKnowInputError, match=r"row 40 of shard_00003_40 is past the end of the shard \(40 rows\)"):
        read_documents(corpus_dir, ["shard_00003_39", "shard_00003_40"])


def test_corrupt_shard_and_missing_column_are_reported(tmp_path):
    (tmp_path / "shard_00000.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(NanoKnowInputError, match="cannot read shard") as err:
        read_documents(tmp_path, ["shard_00000_0"])
    assert err.value.file.endswith("shard_00000.parquet")
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(pa.table({"content": ["x"]}), other / "shard_00000.parquet")
    with pytest.raises(NanoKnowInputError, match="cannot read shard"):
        Corpus(other).read_documents(["shard_00000_0"])


def test_missing_corpus_dir_and_listing(corpus_dir, tmp_path):
    with pytest.raises(NanoKnowInputError, match="corpus directory does not exist"):
        Corpus(tmp_path / "nope")
    assert Corpus(corpus_dir).list_shards() == [0, 3]
    assert Corpus(corpus_dir).num_rows(0) == 2500
    with pytest.raises(NanoKnowInputError, match="no shard_XXXXX.parquet"):
        Corpus(tmp_path).list_shards()
    assert list(Corpus(corpus_dir).iter_shard(3))[-1] == (39, "document 3-39 body")


def test_remote_prefixes_use_the_same_queries(monkeypatch):
    # The Hub and S3 are unreachable here: check the URI each shard query would read, and that
    # the remote query goes through the same parameterized SQL as a local read.
    corpus = Corpus("hf://datasets/karpathy/fineweb-edu-100b-shuffle/")
    assert corpus.remote
    assert corpus.shard_uri(151) == "hf://datasets/karpathy/fineweb-edu-100b-shuffle/shard_00151.parquet"
    assert Corpus("s3://bucket/fw").shard_uri(2) == "s3://bucket/fw/shard_00002.parquet"
    seen = []
    monkeypatch.setattr(Corpus, "_query", lambda self, sql, params, uri, ex: seen.append((sql, params)) or
                        [(r, f"t{r}") for r in params[1]])
    assert corpus.read_documents(["shard_00151_9", "shard_00151_2"]) == {"shard_00151_9": "t9", "shard_00151_2": "t2"}
    sql, params = seen[0]
    assert "read_parquet(?" in sql and params == ["hf://datasets/karpathy/fineweb-edu-100b-shuffle/shard_00151.parquet", [2, 9]]


def test_answer_match_lowercase_collapsed_whitespace_with_original_offsets():
    text = "Intro.\n\nThe novel was  written by GEORGE\n  Orwell in 1949; george orwell again."
    match = find_first_match(text, ["Jane Austen", "george   orwell"])
    assert match.answer == "george   orwell"
    assert text[match.char_start:match.char_end] == "GEORGE\n  Orwell"
    assert answers_in_text(text, ["orwell", "austen", "1949"]) == ["orwell", "1949"]
    assert normalize("A \t B\n") == "a b "
    # the earliest match wins, whichever answer it is
    assert find_first_match("in 1949 Orwell", ["Orwell", "1949"]).answer == "1949"
    assert find_first_match("nothing here", ["x y"]) is None
    assert find_first_match("text", ["", "  "]) is None
    # a character whose lowercase is longer (Turkish dotted I) keeps offsets right
    text = "İstanbul is big; Paris is bigger"
    m = find_first_match(text, ["paris"])
    assert text[m.char_start:m.char_end] == "Paris"


def test_passage_is_a_window_of_words_centred_on_the_match():
    words = [f"w{i}" for i in range(1000)]
    text = " ".join(words[:500]) + " ANSWER " + " ".join(words[500:])
    p = extract_passage(text, ["answer"], window_words=200)
    tokens = p.text.split()
    assert len(tokens) == 200 and tokens[100] == "ANSWER"
    assert text[p.match_offset:p.match_offset + 6] == "ANSWER"
    assert text[p.start:p.end] == p.text and p.start <= p.match_offset < p.end
    # near the start of the document the window is shifted, not shortened
    early = extract_passage("ANSWER " + text, ["answer"], window_words=50)
    assert early.start == 0 and len(early.text.split()) == 50
    assert passage_around("", 0) == ("", 0, 0)
    assert extract_passage("no match", ["x"]) is None


@pytest.mark.parametrize("output,label,reason", [
    ("TRUE: the passage says so", TRUE, "the passage says so"),
    ("coincidental: different Paris", COINCIDENTAL, "different Paris"),
    ("<think>Maybe TRUE? no...</think>\n\nCOINCIDENTAL: another sense", COINCIDENTAL, "another sense"),
    ("reasoning here</think>TRUE - states it", TRUE, "states it"),
    ("**Verdict:** **TRUE** — it states the date", TRUE, "— it states the date"),
    ("Answer: False, it is a name", COINCIDENTAL, "it is a name"),
    ("Yes, the passage answers it", TRUE, "the passage answers it"),
    ("After reading, I judge this TRUE because it names him", TRUE, "because it names him"),
    ("The match is coincidental.", COINCIDENTAL, ""),
    ("This is not true at all", COINCIDENTAL, "at all"),
    ("<think>still thinking about TRUE", UNPARSED, "<think>still thinking about TRUE"),
    ("The passage directly answers the question.", UNPARSED, "The passage directly answers the question."),
    ("", UNPARSED, ""),
])
def test_verdict_parsing(output, label, reason):
    verdict = parse_verdict(output)
    assert (verdict.label, verdict.reason) == (label, reason)
    assert verdict.supported is (None if label == UNPARSED else label == TRUE)


def test_judge_prompt_shows_at_most_five_answers():
    messages = verifier_messages("who?", [f"a{i}" for i in range(8)], "the passage")
    user = messages[-1]["content"]
    assert '"a4"' in user and '"a5"' not in user
    assert "the passage" in user and "TRUE" in user and "COINCIDENTAL" in user


def test_fast_offset_mapping_agrees_with_the_per_character_one():
    import random

    from projection.stage1.answer_match import normalized_with_offsets, whitespace_run_mapper

    rng = random.Random(3)
    for _ in range(200):
        text = "".join(rng.choice(["a", "B", " ", "  ", "\n", "\t \n", "xy", "Z"]) for _ in range(rng.randint(0, 40)))
        norm, offsets = normalized_with_offsets(text)
        to_original = whitespace_run_mapper(text)
        assert all(to_original(p) == offsets[p] for p in range(len(norm)))
    text = "Ab  cd\n\n EF gh"
    m = find_first_match(text, ["cd ef"])
    assert text[m.char_start:m.char_end] == "cd\n\n EF"


def test_local_window_equals_tokenizing_the_whole_document():
    import random

    from projection.stage1.passages import passage_around_full_text

    rng = random.Random(5)
    for _ in range(300):
        words = ["x" * rng.choice([1, 3, 8, 40, 400]) for _ in range(rng.randint(0, 300))]
        text = "".join(w + rng.choice([" ", "\n", "  "]) for w in words)
        offset = rng.randint(0, max(0, len(text) - 1))
        window = rng.choice([1, 5, 20, 200])
        assert passage_around(text, offset, window_words=window) == passage_around_full_text(text, offset, window)


def test_stage1_matching_shortcuts_agree_with_the_plain_rule():
    """match_hits skips normalizing when it cannot matter; it must find what the rule finds."""
    import random as _random

    from projection.stage1.answer_match import normalize_answer, normalize
    from projection.data.files import Question
    from projection.stage1.retrieval import match_hits

    rng = _random.Random(5)
    words = ["new", "york", "City", "of", "the", "san", "francisco", "bay", "x"]
    spaces = [" ", " ", " ", "  ", "\n", "\t", " \n "]
    answers = ["New York", "new  york city", "San Francisco Bay", "the", "x", "York"]
    texts, hits = {}, []
    for i in range(400):
        doc = "".join(rng.choice(words) + rng.choice(spaces) for _ in range(rng.randint(1, 12)))
        texts[f"shard_00000_{i}"] = doc
        hits.append((f"shard_00000_{i}", 1.0))
    found = {c["doc_id"]: set(c["found_answers"])
             for c in match_hits(Question("q", "q", answers), hits, texts, {}, window_words=5)}
    expected = {d: {a for a in answers if normalize_answer(a) in normalize(t)} for d, t in texts.items()}
    assert {d: s for d, s in expected.items() if s} == found
    assert len(found) > 100 and any(len(s) > 2 for s in found.values())
