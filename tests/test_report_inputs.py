"""``nanoknow report`` input handling: missing samples, missing tasks, repeated runs, bad folders, judge.

The folders here are written by :func:`write_lm_eval_folder` in lm-eval's layout (the layout
is checked against real ``lm_eval`` output in ``test_report.py``); responses are chosen so
that the expected scores are known by construction and recomputed with ``has_answer``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nanoknow.report.write_report import write_report
from nanoknow.report.stats import wilson_interval
from nanoknow_tasks.has_answer import has_answer
from nanoknow_tasks.task_specs import all_task_specs

CLOSEDBOOK = ["nanoknow_nq_supported_closedbook", "nanoknow_nq_unsupported_closedbook"]
ORACLE = "nanoknow_nq_supported_oracle"
DISTRACTORS = [s.name for s in all_task_specs() if s.condition == "distractors" and s.dataset == "nq"]
STAMP = "2026-01-02T03-04-05.000001"


def _samples(task: str, correct: list[bool], frequencies=(1, 7, 30, 99), metric: str = "has_answer") -> list[dict]:
    rows = []
    for i, right in enumerate(correct):
        split = "unsupported" if "_unsupported_" in task else "supported"
        doc = {"qid": str(i), "question": f"question {i}?", "answers": [f"answer {i}"],
               "answer_frequency": 0 if split == "unsupported" else frequencies[i % len(frequencies)],
               "split": split}
        response = f"it is answer {i}." if right else "no idea"
        rows.append({"doc_id": i, "doc": doc, "target": doc["answers"][0], "resps": [[response]],
                     "filtered_resps": [response], "filter": "none", "metrics": [metric],
                     metric: float(has_answer(response, doc["answers"]))})
    return rows


def write_lm_eval_folder(folder: Path, model: str, tasks: dict[str, list[bool]], *, stamp: str = STAMP,
                         samples: bool = True, metric: str = "has_answer") -> Path:
    """``folder/results_<stamp>.json`` and (``samples``) ``samples_<task>_<stamp>.jsonl``, as lm-eval writes them
    (``metric="exact_match"``: as NanoKnow runs made before the rename to ``has_answer``)."""
    folder.mkdir(parents=True, exist_ok=True)
    results = {task: {"alias": task, f"{metric},none": sum(c) / len(c), f"{metric}_stderr,none": 0.0}
               for task, c in tasks.items()}
    (folder / f"results_{stamp}.json").write_text(json.dumps({
        "results": results, "config": {"model": "nanochat", "model_args": {"pretrained": f"/ckpt/{model}"}},
        "model_name": f"/ckpt/{model}", "model_name_sanitized": f"__ckpt__{model}"}))
    if samples:
        for task, correct in tasks.items():
            (folder / f"samples_{task}_{stamp}.jsonl").write_text(
                "".join(json.dumps(row) + "\n" for row in _samples(task, correct, metric=metric)))
    return folder


def _all_tasks(pattern: list[bool]) -> dict[str, list[bool]]:
    return {task: pattern for task in [*CLOSEDBOOK, ORACLE, *DISTRACTORS]}


def test_wilson_interval_known_values():
    low, high = wilson_interval(5, 10)
    assert (low, high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(0, 6) == pytest.approx((0.0, 0.3903), abs=1e-4)
    assert wilson_interval(20, 20)[1] == pytest.approx(1.0)
    assert wilson_interval(20, 20)[0] == pytest.approx(0.8389, abs=1e-4)


def test_folder_without_samples_is_reported_and_left_out(tmp_path, run):
    good = write_lm_eval_folder(tmp_path / "runs" / "a", "model-a", _all_tasks([True, False, True, True]))
    bare = write_lm_eval_folder(tmp_path / "runs" / "b", "model-b", _all_tasks([True, False]), samples=False)
    out = tmp_path / "report"
    proc = run(["nanoknow", "report", str(tmp_path / "runs"), "--out", str(out)])
    assert "skipped" not in proc.stdout
    markdown = (out / "summary.md").read_text()
    assert f"{bare}: no samples_*.jsonl for 15 task(s)" in markdown and "--log_samples" in markdown
    assert "## model-b" in markdown and "No task with logged samples." in markdown
    assert f"{good}" not in markdown.split("## Notes")[1]
    summary = (out / "summary.csv").read_text()
    assert "model-a" in summary and "model-b" not in summary
    assert (out / "frequency.png").is_file() and (out / "distractors.png").is_file()

    # the bare folder alone: nothing to plot, both figures skipped with their reasons
    alone = write_report([bare], tmp_path / "bare")
    assert set(alone.skipped) == {"frequency.png", "distractors.png"}
    markdown = (tmp_path / "bare" / "summary.md").read_text()
    assert "`frequency.png` skipped: no supported closed-book" in markdown
    assert "`distractors.png` skipped: no distractor task" in markdown
    assert not list((tmp_path / "bare").glob("*.png"))


def test_figure_skipped_when_its_tasks_are_missing(tmp_path):
    folder = write_lm_eval_folder(tmp_path / "runs" / "a", "model-a", {t: [True, False, False] for t in CLOSEDBOOK})
    report = write_report([folder.parent], tmp_path / "out")
    assert list(report.skipped) == ["distractors.png"]
    assert not (tmp_path / "out" / "distractors.png").exists() and not (tmp_path / "out" / "distractors.csv").exists()
    assert (tmp_path / "out" / "frequency.png").is_file()
    markdown = (tmp_path / "out" / "summary.md").read_text()
    assert "`distractors.png` skipped: no distractor task with samples" in markdown
    # closed-book supported: 1 of 3 right, in bucket 1-5 (frequencies 1, 7, 30 cycle over the questions)
    rows = {(r["condition"], r["split"], r["bucket"]): r for r in report.frequency}
    assert rows["closedbook", "supported", "1-5"]["correct"] == 1 and rows["closedbook", "supported", "1-5"]["n"] == 1
    assert rows["closedbook", "supported", "6-20"]["correct"] == 0 and rows["closedbook", "supported", "6-20"]["n"] == 1
    assert rows["closedbook", "unsupported", "unsupported (all)"]["n"] == 3


def test_newest_run_of_a_task_is_used(tmp_path):
    folder = tmp_path / "runs" / "a"
    write_lm_eval_folder(folder, "model-a", {ORACLE: [False] * 4, CLOSEDBOOK[0]: [True] * 4},
                         stamp="2026-01-01T00-00-00.000000")
    write_lm_eval_folder(folder, "model-a", {ORACLE: [True, True, True, False]}, stamp="2026-02-01T00-00-00.000000")
    report = write_report([folder], tmp_path / "out")
    rows = {r["task"]: r for r in report.summary}
    assert rows[ORACLE]["correct"] == 3 and "2026-02-01" in rows[ORACLE]["results_file"]
    assert rows[CLOSEDBOOK[0]]["correct"] == 4 and "2026-01-01" in rows[CLOSEDBOOK[0]]["results_file"]
    markdown = (tmp_path / "out" / "summary.md").read_text()
    assert f"{folder}: 1 task(s) were run more than once; the newest results file of each is used ({ORACLE})" \
        in markdown


@pytest.mark.parametrize("kind", ["missing", "no_results", "broken_json", "not_results"])
def test_bad_input_exits_2_naming_the_path(tmp_path, run, kind):
    bad = tmp_path / "bad"
    if kind != "missing":
        bad.mkdir()
        (bad / "notes.txt").write_text("hello")
    if kind == "broken_json":
        (bad / f"results_{STAMP}.json").write_text("{not json")
    if kind == "not_results":
        (bad / f"results_{STAMP}.json").write_text(json.dumps({"hello": 1}))
    good = write_lm_eval_folder(tmp_path / "good", "model-a", {ORACLE: [True]})
    proc = run(["nanoknow", "report", str(good), str(bad), "--out", str(tmp_path / "out")], check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nanoknow report: error: ") and str(bad) in lines[0], lines


def test_llm_judge_scores_come_from_the_judge_cache(tmp_path):
    from nanoknow_tasks.judge.metric import JudgeConfig, make_item
    from nanoknow_tasks.judge.cache import JudgeCache

    folder = write_lm_eval_folder(tmp_path / "runs" / "a", "model-a", {ORACLE: [True, False, False, True]})
    config = JudgeConfig(backend="openai", model="judge-x")
    samples_file, = folder.glob("samples_*.jsonl")
    rows = [json.loads(line) for line in samples_file.read_text().splitlines()]
    cache = JudgeCache(tmp_path / "judge.sqlite")
    verdicts = [True, True, False, False]  # the judge accepts one answer exact match rejects, and vice versa
    for row, verdict in zip(rows, verdicts):
        row["llm_judge"] = make_item(row["doc"]["question"], row["doc"]["answers"], row["resps"][0][0], config)
        cache.put_many([(row["llm_judge"]["judge_key"], "judge-x", [], json.dumps({"correct": verdict}))])
    samples_file.write_text("".join(json.dumps(r) + "\n" for r in rows))

    report = write_report([folder], tmp_path / "out", judge_cache=str(tmp_path / "judge.sqlite"))
    metrics = {r["metric"]: r for r in report.summary}
    assert metrics["has_answer"]["correct"] == 2 and metrics["llm_judge"]["correct"] == 2
    assert metrics["llm_judge"]["n"] == 4
    assert "llm_judge % [95% CI]" in (tmp_path / "out" / "summary.md").read_text()

    # verdicts missing from the cache: llm_judge is left out with a note, exact match stays
    report = write_report([folder], tmp_path / "out2", judge_cache=str(tmp_path / "empty.sqlite"))
    assert [r["metric"] for r in report.summary] == ["has_answer"]
    assert "4 of 4 llm_judge verdicts are not in the judge cache" in (tmp_path / "out2" / "summary.md").read_text()


def test_older_runs_named_exact_match_are_still_read(tmp_path):
    """Runs made before the metric was renamed has_answer (the paper's exact match) report the same."""
    tasks = {CLOSEDBOOK[0]: [True, False, False], ORACLE: [True, True, False], DISTRACTORS[0]: [True, False, True]}
    old = write_report([write_lm_eval_folder(tmp_path / "old" / "a", "model-a", tasks, metric="exact_match")],
                       tmp_path / "out-old")
    new = write_report([write_lm_eval_folder(tmp_path / "new" / "a", "model-a", tasks)], tmp_path / "out-new")
    strip = [{k: v for k, v in r.items() if k != "results_file"} for r in old.summary]
    assert strip == [{k: v for k, v in r.items() if k != "results_file"} for r in new.summary]
    assert [r["metric"] for r in old.summary] == ["has_answer"] * 3
    assert not any("differs" in note for note in old.notes)  # lm-eval's own number was found too
    markdown = (tmp_path / "out-old" / "summary.md").read_text()
    assert "has_answer (the paper's exact match) % [95% CI]" in markdown
    assert old.distractors[0]["k"] == 0 and old.distractors[0]["position"] == "none (oracle alone)"
