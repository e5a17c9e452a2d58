"""The exposure tasks (issue 12) through the real ``lm_eval`` CLI: ``nanoknow_nq_{seen,unseen}_closedbook``
on a small data dir whose qrels are spread over shards, with a tiny nanochat checkpoint; the
loaders with an exposure read from a checkpoint's own meta; and the error without exposure."""

from __future__ import annotations

import json

import pytest

from nanochat_fixtures import tiny_checkpoints  # noqa: F401
from nanoknow_common.errors import NanoKnowInputError
from nanoknow_tasks.loaders import load_question_split
from test_exposure import QRELS, data_dir  # noqa: F401 (module fixture: qrels over shards 0..9)


def _samples(folder, task):
    files = list(folder.rglob(f"samples_{task}_*.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines()]


def _expected(shards_seen):
    seen = {q for q, docs in QRELS.items() if min(int(d.split("_")[1]) for d in docs) < shards_seen}
    read = {q: sum(int(d.split("_")[1]) < shards_seen for d in docs) for q, docs in QRELS.items()}
    return seen, set(QRELS) - seen, read


@pytest.mark.slow
def test_seen_and_unseen_tasks_score_exactly_their_subsets(run, data_dir, tiny_checkpoints, tmp_path):
    tasks = "nanoknow_nq_seen_closedbook,nanoknow_nq_unseen_closedbook"
    metadata = {"data_dir": str(data_dir), "shards_seen": 5}
    run(["lm_eval", "--model", "nanochat", "--model_args", f"pretrained={tiny_checkpoints['2025-10']},max_gen_toks=4",
         "--tasks", tasks, "--device", "cpu", "--batch_size", "4", "--output_path", str(tmp_path),
         "--log_samples", "--metadata", json.dumps(metadata)], timeout=600)
    seen, unseen, read = _expected(5)
    assert seen == {"q1", "q2", "q3"} and unseen == {"q4", "q5"}  # the fixture's layout, spelled out
    for task, expected in (("nanoknow_nq_seen_closedbook", seen), ("nanoknow_nq_unseen_closedbook", unseen)):
        docs = [s["doc"] for s in _samples(tmp_path, task)]
        assert {d["qid"] for d in docs} == expected
        for doc in docs:  # what a later exposure analysis needs travels with every sample
            assert doc["qrels_shards"] == [int(d.split("_")[1]) for d in QRELS[doc["qid"]]]
            assert doc["frequency_read"] == read[doc["qid"]]
            assert doc["exposure_status"] == task.split("_")[2]


@pytest.mark.slow
def test_without_exposure_the_task_says_how_to_give_it(run, data_dir, tiny_checkpoints, tmp_path):
    proc = run(["lm_eval", "--model", "nanochat", "--model_args", f"pretrained={tiny_checkpoints['2025-10']}",
                "--tasks", "nanoknow_nq_seen_closedbook", "--device", "cpu", "--output_path", str(tmp_path),
                "--metadata", json.dumps({"data_dir": str(data_dir)})], timeout=600, check=False)
    assert proc.returncode != 0
    assert "shards_seen" in proc.stderr and "exposure_from" in proc.stderr


def test_exposure_from_a_checkpoint_meta_selects_by_its_loader_position(data_dir, tiny_checkpoints, tmp_path):
    from nanochat_adapter.tiny_checkpoints import write_tiny_checkpoint

    folder = write_tiny_checkpoint(tmp_path / "base", generation="2026-03-14", seed=0)
    meta_file = next(folder.glob("meta_*.json"))
    meta = json.loads(meta_file.read_text())
    meta["dataloader_state_dict"] = {"pq_idx": 6, "rg_idx": 0, "epoch": 1}  # reading shard 6 when saved
    meta_file.write_text(json.dumps(meta))
    rows = load_question_split("nq", "supported", "seen", data_dir=str(data_dir),
                               exposure_from=str(folder), shards_downloaded=10)["test"]
    surely = json.loads(json.dumps(rows[0]))  # plain row
    assert surely["exposure_status"] == "seen"
    from projection.exposure import resolve_exposure

    exposure = resolve_exposure({"exposure_from": str(folder), "shards_downloaded": 10})
    expected = {q for q, docs in QRELS.items()
                if min(int(d.split("_")[1]) for d in docs) < exposure.shards_surely_read}
    assert set(rows["qid"]) == expected and expected  # a non-empty, exact subset


def test_exposure_metadata_errors_are_clear(data_dir):
    with pytest.raises(NanoKnowInputError, match="shards_seen"):
        load_question_split("nq", "supported", "unseen", data_dir=str(data_dir), shards_seen="many")


@pytest.mark.slow
def test_report_splits_by_each_checkpoints_exposure_and_draws_training_dynamics(run, data_dir, tmp_path):
    """One nanochat run saved at two steps (loader at shard 1, then at shard 7): ``nanoknow report``
    takes each step's exposure from the checkpoint's own meta and splits the same questions."""
    from nanochat_adapter.tiny_checkpoints import write_tiny_checkpoint

    folder = tmp_path / "run"
    for step, pq_idx in ((100, 1), (200, 7)):
        write_tiny_checkpoint(folder, generation="2026-03-14", seed=0, step=step)
        meta_file = folder / f"meta_{step:06d}.json"
        meta = json.loads(meta_file.read_text())
        meta["dataloader_state_dict"] = {"pq_idx": pq_idx, "rg_idx": 0, "epoch": 1}
        meta_file.write_text(json.dumps(meta))
    results = tmp_path / "results"
    for step in (100, 200):
        run(["lm_eval", "--model", "nanochat", "--model_args", f"pretrained={folder},step={step},max_gen_toks=4",
             "--tasks", "nanoknow_nq_supported_closedbook", "--device", "cpu", "--output_path",
             str(results / f"step{step}"), "--log_samples", "--metadata", json.dumps({"data_dir": str(data_dir)})],
            timeout=600)
    out = tmp_path / "report"
    run(["nanoknow", "report", str(results / "step100"), str(results / "step200"), "--out", str(out)])
    import csv

    from projection.exposure import resolve_exposure

    exposure_rows = list(csv.DictReader(open(out / "exposure.csv")))
    dynamics = list(csv.DictReader(open(out / "training_dynamics.csv")))
    assert (out / "exposure.png").is_file() and (out / "training_dynamics.png").is_file()
    assert (out / "frequency_read.png").is_file()
    for step in (100, 200):
        exposure = resolve_exposure({"exposure_from": str(folder), "exposure_step": step})
        first = {q: min(int(d.split("_")[1]) for d in docs) for q, docs in QRELS.items()}
        seen = sum(f < exposure.shards_surely_read for f in first.values())
        unseen = sum(f >= exposure.shards_possibly_read for f in first.values())
        mine = [r for r in dynamics if int(r["step"]) == step]
        assert {r["questions"]: int(r["n"]) for r in mine} == {"read by this step": seen, "not yet read": unseen}
        model_rows = [r for r in exposure_rows if f"step{step}" in r["model"]]
        assert {r["status"]: int(r["n"]) for r in model_rows if r["status"] != "uncertain"} == \
            {"seen": seen, "unseen": unseen}
    steps = {int(r["step"]): int(r["n"]) for r in dynamics if r["questions"] == "read by this step"}
    assert steps[200] > steps[100]  # later checkpoints have read more of the questions' evidence
