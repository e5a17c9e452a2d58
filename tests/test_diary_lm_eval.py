"""The diary tasks through lm-eval: task files, the loader's two sources, real CLI runs."""

from __future__ import annotations

import glob
import json
import math
from pathlib import Path

import pytest

from nanoknow_tasks.diary import make_task_files
from projection.diary.generator import generate_diary_set
from nanoknow_tasks.diary.loaders import diary_rows, load_diary_split
from nanoknow_tasks.diary.metrics import pooled_share, score_recall
from nanoknow_common.errors import NanoKnowInputError

METRICS = ("exact_recall", "count_accuracy", "count_error", "entry_accuracy")


@pytest.fixture(scope="module")
def default_1k_folder(tmp_path_factory, run) -> Path:
    """`nanoknow diary make` with the default seed: the data of nanoknow_diary_1k."""
    out = tmp_path_factory.mktemp("diary") / "default-1k"
    run(["nanoknow", "diary", "make", "--diarists", "1000", "--out", str(out)])
    return out


def test_task_files_are_up_to_date_and_valid_for_plain_lm_eval(run):
    assert make_task_files.main(["--check"]) == 0
    group = (Path(make_task_files.HERE) / "nanoknow_diary.yaml").read_text()
    assert [f"nanoknow_diary_{k}k" for k in (1, 2, 4, 8, 16, 32, 64)] == [
        line[2:] for line in group.splitlines() if line.startswith("- ")]
    proc = run(["lm_eval", "validate", "--tasks", "nanoknow_diary"])
    assert "All tasks found and valid" in proc.stdout + proc.stderr


def test_folder_and_in_memory_generation_give_identical_questions(default_1k_folder, tmp_path, run):
    from_folder = load_diary_split(diary_diarists=1000, diary_dir=str(default_1k_folder), version=1.0)
    in_memory = load_diary_split(diary_diarists=1000, pretrained="ignored-model-arg")
    for split in ("train", "validation", "test"):
        assert from_folder[split].to_list() == in_memory[split].to_list()
    assert in_memory["test"].num_rows == 50
    # another seed: a different set, read back identically from its folder too
    other = tmp_path / "seed5"
    run(["nanoknow", "diary", "make", "--diarists", "1000", "--seed", "5", "--out", str(other)])
    assert diary_rows(1000, str(other)) == diary_rows(1000, diary_seed=5) != diary_rows(1000)


def test_loader_bad_input_names_the_field_or_file(default_1k_folder, tmp_path):
    with pytest.raises(NanoKnowInputError, match="diarists.*has 1000 diarists but the task needs 2000"):
        diary_rows(2000, str(default_1k_folder))
    with pytest.raises(NanoKnowInputError, match="seed"):
        diary_rows(1000, str(default_1k_folder), diary_seed=99)
    with pytest.raises(NanoKnowInputError, match="manifest.json: missing"):
        diary_rows(1000, str(tmp_path))
    for bad in (0, -1, "many"):
        with pytest.raises(NanoKnowInputError, match="diary_diarists"):
            diary_rows(bad)


def _samples_and_results(out: Path, task: str) -> tuple[list[dict], dict]:
    samples_file, = glob.glob(str(out / "**" / f"samples_{task}_*.jsonl"), recursive=True)
    results_file, = glob.glob(str(out / "**" / "results_*.json"), recursive=True)
    samples = [json.loads(line) for line in open(samples_file, encoding="utf-8")]
    return samples, json.loads(Path(results_file).read_text())["results"][task]


def _check_logged_metrics(samples: list[dict], results: dict) -> None:
    """Every logged metric equals the metric functions recomputed on the logged response."""
    for sample in samples:
        response = sample["filtered_resps"][0]
        assert sample["resps"][0][0] == response
        recomputed = score_recall(response, sample["doc"]["answer"])
        assert {m: sample[m] for m in METRICS} == recomputed
    for metric in ("exact_recall", "count_accuracy", "count_error"):
        assert results[f"{metric},none"] == pytest.approx(sum(s[metric] for s in samples) / len(samples))
    pooled = pooled_share([s["entry_accuracy"] for s in samples])
    logged = results["entry_accuracy,none"]
    assert (math.isnan(pooled) and (logged is None or logged != logged or logged == "NaN")) or logged == pytest.approx(pooled)


def test_lm_eval_cli_with_smollm2_reads_a_diary_folder(default_1k_folder, tmp_path, run, smollm2_model_args):
    out = tmp_path / "out"
    run(["lm_eval", "--model", "hf", "--model_args", smollm2_model_args, "--device", "cpu",
         "--tasks", "nanoknow_diary_1k", "--limit", "2", "--gen_kwargs", "max_gen_toks=48",
         "--metadata", json.dumps({"diary_dir": str(default_1k_folder)}),
         "--log_samples", "--output_path", str(out)])
    samples, results = _samples_and_results(out, "nanoknow_diary_1k")
    expected = [d.qa_row() for d in generate_diary_set(1000).split("test")[:2]]
    assert [s["doc"] for s in samples] == expected
    assert [s["arguments"]["gen_args_0"]["arg_0"] for s in samples] == [d["question"] + "\n" for d in expected]
    assert all(s["arguments"]["gen_args_0"]["arg_1"]["max_gen_toks"] == 48 for s in samples)
    _check_logged_metrics(samples, results)


def test_train_recipe_smoke_then_lm_eval_nanochat(tmp_path, run):
    checkpoint = tmp_path / "ck"
    run(["nanoknow", "diary", "train", "--diarists", "40", "--out", str(checkpoint), "--steps", "3",
         "--depth", "1", "--width", "32", "--heads", "2", "--merges", "60", "--batch-rows", "2",
         "--check-questions", "2", "--threads", "1"])
    log = [json.loads(line) for line in open(checkpoint / "train_log.jsonl")]
    assert log[0]["step"] == 1 and math.isfinite(log[0]["loss"])
    meta = json.loads((checkpoint / "meta_000003.json").read_text())
    assert meta["model_config"]["n_layer"] == 1 and meta["diary"]["steps"] == 3
    checks = [json.loads(line) for line in open(checkpoint / "recall_check.jsonl")]
    assert [c["split"] for c in checks] == ["train", "train", "test", "test"]
    # the checkpoint is a real nanochat checkpoint: plain lm_eval runs the default-seed task on it
    out = tmp_path / "out"
    run(["lm_eval", "--model", "nanochat", "--model_args", f"pretrained={checkpoint}", "--device", "cpu",
         "--tasks", "nanoknow_diary_1k", "--limit", "2", "--gen_kwargs", "max_gen_toks=40",
         "--log_samples", "--output_path", str(out)])
    samples, results = _samples_and_results(out, "nanoknow_diary_1k")
    assert [s["doc"]["qid"] for s in samples] == [d.qid for d in generate_diary_set(1000).split("test")[:2]]
    _check_logged_metrics(samples, results)


def test_train_recipe_bad_input_exits_2_naming_the_file_or_option(tmp_path, run):
    proc = run(["nanoknow", "diary", "train", "--diary-dir", str(tmp_path), "--out", str(tmp_path / "ck")], check=False)
    assert proc.returncode == 2 and "manifest.json" in proc.stderr, proc.stderr
    proc = run(["nanoknow", "diary", "train", "--out", str(tmp_path / "ck"), "--steps", "0"], check=False)
    assert proc.returncode == 2 and "--steps" in proc.stderr, proc.stderr
