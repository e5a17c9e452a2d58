"""``nanoknow report`` on lm-eval output folders made in the test: numbers recomputed from samples.

Two tiny random nanochat checkpoints (different seeds) run the nq closed-book, oracle and
distractor tasks through the real ``lm_eval`` CLI on a sample corpus. Random tiny models score
about 0, so a THIRD folder is FABRICATED: a copy of the first model's real lm-eval folder in
which the responses are rewritten (some to a gold answer, the rest to a wrong string), the
per-sample ``has_answer`` re-scored, and ``doc.answer_frequency`` spread over all buckets
(the sample corpus only plants 1-3 supporting documents per question).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

from nanochat_adapter.tiny_checkpoints import write_tiny_checkpoint
from nanoknow_tasks.has_answer import has_answer
from nanoknow_tasks.task_specs import all_task_specs, positions_for

from sample_root import CORPUS_DIR, build_nq_sample

DISTRACTOR_TASKS = [s.name for s in all_task_specs() if s.condition == "distractors" and s.dataset == "nq"]
TASKS = ["nanoknow_nq_supported_closedbook", "nanoknow_nq_unsupported_closedbook",
         "nanoknow_nq_supported_oracle", *DISTRACTOR_TASKS]
LIMIT = 6
FAKE_FREQUENCIES = (3, 12, 33, 75, 1, 20, 50, 51)  # the first four cover every bucket
FAKE_MODEL = "fabricated-reader"


def _fake_correct(task: str, index: int) -> bool:
    """Which fabricated responses are right: oracle best, more distractors worse, closed-book poor."""
    if "closedbook" in task:
        return index % 3 == 0 if "_supported_" in task else index % 6 == 5
    if task.endswith("_oracle"):
        return index % 6 != 2
    k = int(task.split("_k")[1].split("_")[0])
    return index < LIMIT - 1 - k // 4 - (task.endswith("_middle"))


def _fabricate(real: Path, fake: Path) -> None:
    fake.mkdir(parents=True)
    results_file, = real.glob("results_*.json")
    results = json.loads(results_file.read_text())
    results["model_name"] = results["config"]["model_args"]["pretrained"] = FAKE_MODEL
    (fake / results_file.name).write_text(json.dumps(results))
    frequency: dict[str, int] = {}
    for path in sorted(real.glob("samples_*.jsonl")):
        task = path.name[len("samples_"):].rsplit("_", 1)[0]
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for index, row in enumerate(rows):
            answer = row["doc"]["answers"][0] if _fake_correct(task, index) else "zzz qqq"
            row["resps"], row["filtered_resps"] = [[answer]], [answer]
            row["has_answer"] = float(has_answer(answer, row["doc"]["answers"]))
            if row["doc"]["split"] == "supported":
                qid = row["doc"]["qid"]
                frequency.setdefault(qid, FAKE_FREQUENCIES[len(frequency) % len(FAKE_FREQUENCIES)])
                row["doc"]["answer_frequency"] = frequency[qid]
        (fake / path.name).write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, nanoknow_data_dir, run):
    """lm-eval folders: ``runs/`` (two real tiny models) and ``fabricated/`` (one rewritten copy)."""
    base = tmp_path_factory.mktemp("report")
    build_nq_sample(base, nanoknow_data_dir, questions=40, filler_docs=300, p_supported=0.7)
    metadata = json.dumps({"dataset_dir": str(base / "build"), "corpus": CORPUS_DIR})
    for seed in (1, 2):
        checkpoint = write_tiny_checkpoint(base / f"tiny-seed{seed}", seed=seed)
        run(["lm_eval", "--model", "nanochat", "--model_args", f"pretrained={checkpoint},max_gen_toks=6",
             "--tasks", ",".join(TASKS), "--limit", str(LIMIT), "--device", "cpu", "--batch_size", "16",
             "--log_samples", "--output_path", str(base / "runs"), "--metadata", metadata],
            env={"NANOKNOW_DATA_DIR": ""}, timeout=600)
    real = sorted((base / "runs").iterdir())
    assert len(real) == 2
    _fabricate(real[0], base / "fabricated" / FAKE_MODEL)
    return base


def _read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _wilson(correct: int, n: int) -> tuple[float, float]:
    """Wilson score interval written from the textbook form (independent of the report's code)."""
    z, p = 1.959963984540054, correct / n
    centre = (2 * n * p + z ** 2) / (2 * (n + z ** 2))
    half = z / (n + z ** 2) * math.sqrt(n * p * (1 - p) + z ** 2 / 4)
    return 100 * (centre - half), 100 * (centre + half)


def _check_numbers(row: dict, flags: list[bool]) -> None:
    assert int(row["n"]) == len(flags) and int(row["correct"]) == sum(flags), row
    assert float(row["accuracy_pct"]) == pytest.approx(100 * sum(flags) / len(flags), abs=1e-3)
    low, high = _wilson(sum(flags), len(flags))
    assert float(row["ci_low_pct"]) == pytest.approx(low, abs=1e-3)
    assert float(row["ci_high_pct"]) == pytest.approx(high, abs=1e-3)


def _model_samples(folder: Path) -> dict[str, list[dict]]:
    """Samples per task, recomputed flags from ``resps`` and ``doc.answers`` (newest file per task)."""
    samples = {}
    for task in TASKS:
        path = sorted(folder.glob(f"samples_{task}_*.jsonl"))[-1]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines()]
    return samples


def _flag(sample: dict) -> bool:
    return has_answer(sample["resps"][0][0], sample["doc"]["answers"])


def _bucket(frequency: int) -> str:
    return "1-5" if frequency <= 5 else "6-20" if frequency <= 20 else "21-50" if frequency <= 50 else "51+"


def _distinct_colours(path: Path) -> int:
    image = mpimg.imread(path)
    pixels = (image[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    return len(np.unique(pixels, axis=0))


@pytest.mark.slow
def test_report_numbers_match_samples(outputs, run, tmp_path):
    out = tmp_path / "report"
    proc = run(["nanoknow", "report", str(outputs / "runs"), str(outputs / "fabricated"), "--out", str(out)])
    assert str(out / "summary.md") in proc.stdout
    folders = {**{p.name: p for p in (outputs / "runs").iterdir()}, FAKE_MODEL: outputs / "fabricated" / FAKE_MODEL}
    models = {"tiny-seed1": folders[next(n for n in folders if n.endswith("seed1"))],
              "tiny-seed2": folders[next(n for n in folders if n.endswith("seed2"))],
              FAKE_MODEL: folders[FAKE_MODEL]}
    samples = {model: _model_samples(folder) for model, folder in models.items()}

    summary = _read_csv(out / "summary.csv")
    assert {(r["model"], r["task"]) for r in summary} == {(m, t) for m in models for t in TASKS}
    for row in summary:
        assert row["metric"] == "has_answer"
        _check_numbers(row, [_flag(s) for s in samples[row["model"]][row["task"]]])
    by_task = {(r["model"], r["task"]): r for r in summary}
    assert by_task[FAKE_MODEL, "nanoknow_nq_supported_oracle"]["paper_condition"] == "oracle"
    assert by_task[FAKE_MODEL, "nanoknow_nq_supported_distractors_k2_middle"]["paper_condition"] == \
        "oracle + 2 distractors (middle)"
    # the fabricated model is not degenerate: the oracle helps over closed-book
    assert float(by_task[FAKE_MODEL, "nanoknow_nq_supported_oracle"]["accuracy_pct"]) > \
        float(by_task[FAKE_MODEL, "nanoknow_nq_supported_closedbook"]["accuracy_pct"]) > 0

    frequency = _read_csv(out / "frequency.csv")
    for row in frequency:
        task_samples = samples[row["model"]][row["task"]]
        if row["split"] == "unsupported":
            assert row["bucket"] == "unsupported (all)"
            flags = [_flag(s) for s in task_samples]
        else:
            flags = [_flag(s) for s in task_samples if _bucket(s["doc"]["answer_frequency"]) == row["bucket"]]
        if flags:
            _check_numbers(row, flags)
        else:
            assert row["n"] == "0"
    fake_buckets = {r["bucket"] for r in frequency if r["model"] == FAKE_MODEL and int(r["n"])}
    assert {"1-5", "6-20", "21-50", "51+", "unsupported (all)"} <= fake_buckets

    distractors = _read_csv(out / "distractors.csv")
    assert len(distractors) == 3 * len(DISTRACTOR_TASKS)
    for row in distractors:
        task = ("nanoknow_nq_supported_distractors_k0" if row["k"] == "0"
                else f"nanoknow_nq_supported_distractors_k{row['k']}_{row['position']}")
        assert row["task"] == task
        _check_numbers(row, [_flag(s) for s in samples[row["model"]][task]])

    for name in ("frequency.png", "distractors.png"):
        assert (out / name).stat().st_size > 20_000
        assert _distinct_colours(out / name) > 50
    markdown = (out / "summary.md").read_text()
    assert "Wilson" in markdown and "| `nanoknow_nq_supported_oracle` | oracle | supported | 6 |" in markdown
    assert "skipped" not in markdown


def _numeric(rows: list[dict]) -> list[dict]:
    converted = []
    for row in rows:
        row = dict(row)
        for key in ("n", "correct", "k"):
            if key in row:
                row[key] = int(row[key])
        for key in ("accuracy_pct", "ci_low_pct", "ci_high_pct"):
            row[key] = float(row[key])
        converted.append(row)
    return converted


def _plotted(fig) -> dict[tuple[str, str], list[float]]:
    """(panel title, series label) -> plotted y values (error-bar series and horizontal lines)."""
    series = {}
    for ax in fig.axes:
        for container in ax.containers:
            series[ax.get_title(), container.get_label()] = list(container.lines[0].get_ydata())
        for line in ax.lines:
            if line.get_label().startswith("unsupported"):
                series[ax.get_title(), line.get_label()] = list(line.get_ydata())
    return series


@pytest.mark.slow
def test_figures_draw_the_csv_numbers(outputs, tmp_path):
    from nanoknow.report.write_report import write_report
    from nanoknow.report.plots import plot_distractors, plot_frequency

    report = write_report([outputs / "fabricated"], tmp_path)
    assert report.models == [FAKE_MODEL] and not report.skipped
    rows = _numeric(_read_csv(tmp_path / "frequency.csv"))
    plotted = _plotted(plot_frequency(rows))
    title = f"{FAKE_MODEL} - nq"
    for condition, name in (("closedbook", "closed-book"), ("oracle", "oracle")):
        points = [r for r in rows if r["condition"] == condition and r["split"] == "supported"]
        label = f"supported, {name} (n={sum(r['n'] for r in points)})"
        assert plotted[title, label] == pytest.approx([r["accuracy_pct"] for r in points if r["n"]])
    unsupported, = [r for r in rows if r["split"] == "unsupported"]
    label = f"unsupported, closed-book (all, n={unsupported['n']}): {unsupported['accuracy_pct']:.1f}%"
    assert plotted[title, label] == pytest.approx([unsupported["accuracy_pct"]] * 2)

    rows = _numeric(_read_csv(tmp_path / "distractors.csv"))
    plotted = _plotted(plot_distractors(rows))
    for position in ("first", "middle", "last"):
        points = sorted((r for r in rows if r["position"] == position), key=lambda r: r["k"])
        assert [r["k"] for r in points] == [k for k in (1, 2, 4, 8) if position in positions_for(k)]
        assert plotted[title, f"oracle {position} (n={LIMIT} per k)"] == \
            pytest.approx([r["accuracy_pct"] for r in points])
    alone, = [r for r in rows if r["k"] == 0]
    assert alone["task"] == "nanoknow_nq_supported_distractors_k0"
    assert plotted[title, f"oracle alone, k=0 (n={LIMIT})"] == pytest.approx([alone["accuracy_pct"]])
