"""``nanoknow demo`` end to end (small limit): every step runs for real, a re-run reuses them."""

import csv

import pytest

from nanoknow_tasks.task_specs import grid_conditions


@pytest.mark.slow
def test_demo_runs_the_whole_chain_and_reuses_finished_steps(run, tmp_path):
    out = tmp_path / "demo"
    # no NanoKnow data: the demo falls back to its embedded questions about invented facts
    env = {"NANOKNOW_DATA_DIR": "", "NANOKNOW_CACHE_DIR": str(tmp_path / "cache")}
    args = ["nanoknow", "demo", "--out", str(out), "--limit", "2", "--questions", "12"]
    first = run(args, env=env)
    report = out / "report"
    for name in ("summary.md", "summary.csv", "frequency.png", "frequency.csv", "distractors.png", "distractors.csv"):
        assert (report / name).is_file(), name
    assert (report / "frequency.png").stat().st_size > 20_000
    assert "NanoKnow demo finished" in first.stdout and str(report.resolve()) in first.stdout
    assert "| `nanoknow_nq_supported_oracle` |" in first.stdout  # the summary table is printed
    rows = list(csv.DictReader(open(report / "summary.csv")))
    models = {row["model"] for row in rows}
    assert len(models) == 2  # SmolLM2 and the tiny nanochat checkpoint
    assert {row["task"] for row in rows} >= {"nanoknow_nq_supported_closedbook", "nanoknow_nq_supported_oracle",
                                              "nanoknow_nq_supported_distractors_k0",
                                              "nanoknow_nq_supported_distractors_k4_middle",
                                              "nanoknow_nq_supported_distractors_k8_last"}
    grid = list(csv.DictReader(open(report / "distractors.csv")))  # the figure's data: the whole new grid
    assert sorted({(int(r["k"]), r["position"]) for r in grid}) == sorted(
        (k, p or "none (oracle alone)") for k, p in grid_conditions())
    # the projection wrote the upstream layout, which validates
    run(["nanoknow", "data", "verify", "--data-dir", str(out / "data")])
    second = run(args, env=env)
    for step in ("corpus", "index", "project", "build", "eval-smollm2", "eval-nanochat"):
        assert f"[{step}] done earlier" in second.stderr, step
