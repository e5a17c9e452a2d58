"""Recall metrics on hand-made predictions."""

from __future__ import annotations

import math

import pytest

from nanoknow_tasks.diary.metrics import parse_entries, pooled_share, process_results, score_recall

E1 = "Ada Wood's Diary Entry 1\nMood: Happy\nTime: Morning"
E2 = "Ada Wood's Diary Entry 2\nWeather: Rain"
E3 = "Ada Wood's Diary Entry 3\nLocation: City\nMeditated: No\nStress Level: Relaxed"
TARGET = "\n\n".join([E1, E2, E3])


def scores(response):
    return score_recall(response, TARGET)


def test_exact():
    assert scores(TARGET) == {"exact_recall": 1.0, "count_accuracy": 1.0, "count_error": 0.0,
                              "entry_accuracy": [3, 3]}


def test_whitespace_differences_are_tolerated():
    messy = "  \n" + "\n".join(E1.split("\n")) + "\n" + E2.replace(": ", ":   ") + "\n\n\n" + E3.replace("\n", " \n\t") + "\n"
    assert scores(messy)["exact_recall"] == 1.0 and scores(messy)["entry_accuracy"] == [3, 3]


def test_anything_else_is_not():
    assert scores(TARGET.lower())["exact_recall"] == 0.0  # case counts
    assert scores(TARGET.replace("Rain", "Rain."))["exact_recall"] == 0.0
    assert scores("Sure! Here they are:\n" + TARGET) == {  # preamble: not exact, entries fine
        "exact_recall": 0.0, "count_accuracy": 1.0, "count_error": 0.0, "entry_accuracy": [3, 3]}


def test_one_entry_missing():
    assert scores("\n\n".join([E1, E3])) == {"exact_recall": 0.0, "count_accuracy": 0.0,
                                             "count_error": -1.0, "entry_accuracy": [2, 2]}


def test_one_extra_entry():
    extra = "Ada Wood's Diary Entry 4\nMood: Sad"
    assert scores("\n\n".join([E1, E2, E3, extra])) == {
        "exact_recall": 0.0, "count_accuracy": 0.0, "count_error": 1.0, "entry_accuracy": [3, 3]}


def test_reordered():
    assert scores("\n\n".join([E2, E1, E3])) == {"exact_recall": 0.0, "count_accuracy": 1.0,
                                                 "count_error": 0.0, "entry_accuracy": [3, 3]}


def test_one_attribute_wrong():
    wrong = E3.replace("Meditated: No", "Meditated: Yes")
    assert scores("\n\n".join([E1, E2, wrong])) == {"exact_recall": 0.0, "count_accuracy": 1.0,
                                                    "count_error": 0.0, "entry_accuracy": [2, 3]}
    missing_line = E1.replace("\nTime: Morning", "")
    assert scores("\n\n".join([missing_line, E2, E3]))["entry_accuracy"] == [2, 3]
    swapped = "Ada Wood's Diary Entry 1\nTime: Morning\nMood: Happy"  # attribute order counts
    assert scores("\n\n".join([swapped, E2, E3]))["entry_accuracy"] == [2, 3]


def test_empty():
    for empty in ("", "   \n\n", "I don't remember."):
        assert scores(empty) == {"exact_recall": 0.0, "count_accuracy": 0.0, "count_error": -3.0,
                                 "entry_accuracy": [0, 0]}
    assert process_results({"answer": TARGET}, []) == scores("")


def test_entries_of_another_diarist_are_not_compared():
    other = TARGET.replace("Ada Wood", "Ada Woods")
    assert scores(other) == {"exact_recall": 0.0, "count_accuracy": 1.0, "count_error": 0.0,
                             "entry_accuracy": [0, 0]}


def test_parse_entries_by_title_lines():
    assert parse_entries("intro\n" + E1 + "\n" + E2) == [tuple(E1.split("\n")), tuple(E2.split("\n"))]


def test_pooled_share():
    assert pooled_share([[3, 3], [1, 2], [0, 0]]) == pytest.approx(0.8)
    assert math.isnan(pooled_share([[0, 0]]))


def test_diary_recipe_never_replaces_a_checkpoint_it_did_not_write(tmp_path):
    import pytest

    from nanochat_adapter.tiny_checkpoints import train_tiny_encoding
    from nanoknow.diary.tiny_model import new_model, save_checkpoint
    from nanoknow_common.errors import NanoKnowInputError

    encoding = train_tiny_encoding(8)
    model = new_model(encoding.n_vocab, depth=1, width=8, heads=2, sequence_len=16, seed=0)
    foreign = tmp_path / "someone-elses"
    foreign.mkdir()
    (foreign / "model_000100.pt").write_bytes(b"their weights")
    with pytest.raises(NanoKnowInputError, match="did not write"):
        save_checkpoint(foreign, model, encoding, step=1)
    assert (foreign / "model_000100.pt").read_bytes() == b"their weights"
    ours = tmp_path / "ours"
    save_checkpoint(ours, model, encoding, step=1)
    save_checkpoint(ours, model, encoding, step=2)  # the recipe replaces its own earlier step
    assert sorted(p.name for p in ours.glob("model_*.pt")) == ["model_000002.pt"]
