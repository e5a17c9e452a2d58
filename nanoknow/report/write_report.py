"""``nanoknow report``: tables and figures from lm-eval output folders of NanoKnow runs.

:func:`write_report` reads lm-eval ``--output_path`` folders written with ``--log_samples``
(:mod:`nanoknow.report.load`), recomputes every number from the per-sample scores
(:mod:`nanoknow.report.tables`, :mod:`nanoknow.report.stats`) and writes ``summary.md``,
``summary.csv``, ``frequency.png``/``.csv`` and ``distractors.png``/``.csv``
(:mod:`nanoknow.report.plots`). A figure whose tasks are missing is skipped; the reason is
logged and written into ``summary.md``.
"""

from __future__ import annotations

import csv
import logging
from dataclasses import dataclass, field
from pathlib import Path

from nanoknow.report.load import load_runs
from nanoknow.report.stats import METRIC, METRIC_LABEL
from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.file_io import naming_path
from nanoknow.report.tables import distractor_rows, frequency_rows, score_runs, summary_rows

log = logging.getLogger(__name__)



@dataclass
class ReportSummary:
    """What :func:`write_report` wrote: files, models, skipped figures (name -> reason) and notes."""

    out: Path
    files: dict[str, Path] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    summary: list[dict] = field(default_factory=list)
    frequency: list[dict] = field(default_factory=list)
    distractors: list[dict] = field(default_factory=list)
    exposure: list[dict] = field(default_factory=list)
    frequency_read: list[dict] = field(default_factory=list)
    dynamics: list[dict] = field(default_factory=list)
    exposures: dict[str, str] = field(default_factory=dict)  # model -> its exposure, described
    answer_counts: list[dict] = field(default_factory=list)  # capped vs uncapped frequency per task
    frequency_axis: str = "qrels"


def write_csv(path: Path, rows: list[dict]) -> None:
    """Write rows (dicts with the same keys) as CSV with a header."""
    with naming_path(path), open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["empty"])
        writer.writeheader()
        writer.writerows(rows)


def _frequency_skip(rows: list[dict]) -> str | None:
    if not any(r["split"] == "supported" and r["n"] for r in rows):
        return ("no supported closed-book, oracle or original-context task with answer frequencies in the "
                "samples (needs e.g. nanoknow_nq_supported_closedbook and nanoknow_nq_supported_oracle)")
    return None


def _distractor_skip(rows: list[dict]) -> str | None:
    if not any(r["k"] for r in rows):
        return ("no distractor task with samples (needs nanoknow_{nq,squad}_supported_distractors_k0 and "
                "..._k{1,2,4,8}_{first,middle,last}; middle from k=2)")
    return None


def _exposure_skip(rows: list[dict]) -> str | None:
    if not any(r["n"] for r in rows):
        return ("no supported task of a model with a known exposure (give --shards-seen/--tokens-read/"
                "--exposure-from, or evaluate a local nanochat checkpoint)")
    return None


def _dynamics_skip(rows: list[dict]) -> str | None:
    if not rows:
        return "needs result folders of one nanochat run at two or more steps (pretrained=DIR,step=N)"
    return None


def write_report(result_dirs: list[Path], out: Path, *, judge_cache: str | None = None,
                 exposure: dict | None = None, frequency_axis: str = "qrels", top_k: int = 100) -> ReportSummary:
    """Read lm-eval output folders and write the report into ``out``; return what was written.

    Raises :class:`nanoknow_common.errors.NanoKnowInputError` for a path that is not an lm-eval
    output folder. ``judge_cache``: the ``llm_judge`` SQLite cache (default: the judge's own).
    ``exposure``: the evaluated checkpoints' exposure for every model (``shards_seen``,
    ``tokens_read`` or ``exposure_from``); otherwise each model's own (see
    :mod:`nanoknow.report.exposure`). ``frequency_axis``: what ``frequency.png`` buckets by: the
    capped qrels frequency (``qrels``, the paper's) or a whole-corpus count (``substring``,
    ``token``; :mod:`nanoknow.report.answer_counts`); ``top_k``: the cap counted in ``answer_counts.csv``.
    """
    from nanoknow.report import answer_counts
    from nanoknow.report import exposure as exposure_views
    from nanoknow.report import exposure_plots
    from nanoknow.report import plots as report_plots

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise NanoKnowInputError("exists and is not a folder", file=out, field="--out")
    runs = load_runs([Path(p) for p in result_dirs])
    out.mkdir(parents=True, exist_ok=True)
    report = ReportSummary(out=out, models=[r.model for r in runs])
    for run in runs:
        report.notes += run.notes
    tasks, notes = score_runs(runs, judge_cache)
    report.notes += notes
    report.summary = summary_rows(tasks)
    write_csv(out / "summary.csv", report.summary)
    report.files["summary.csv"] = out / "summary.csv"

    report.answer_counts = answer_counts.cap_rows(tasks, top_k)
    if any(r["with_counts"] for r in report.answer_counts):
        write_csv(out / "answer_counts.csv", report.answer_counts)
        report.files["answer_counts.csv"] = out / "answer_counts.csv"
    report.frequency_axis = frequency_axis
    report.frequency, notes = frequency_rows(answer_counts.with_axis(tasks, frequency_axis))
    report.notes += notes
    report.distractors = distractor_rows(tasks)
    model_exposures, notes = exposure_views.resolve_model_exposures(runs, exposure)
    report.notes += notes
    report.exposure, notes = exposure_views.exposure_rows(tasks, model_exposures)
    report.notes += notes
    for note in notes:
        log.warning(note)
    report.frequency_read = exposure_views.frequency_read_rows(tasks, model_exposures)
    report.dynamics = exposure_views.dynamics_rows(tasks, model_exposures)
    report.exposures = {m.model: f"{m.exposure.describe()} (from {m.origin})" for m in model_exposures}
    figures = (("frequency", report.frequency, _frequency_skip, report_plots.plot_frequency),
               ("distractors", report.distractors, _distractor_skip, report_plots.plot_distractors),
               ("exposure", report.exposure, _exposure_skip, exposure_plots.plot_exposure),
               ("frequency_read", report.frequency_read, _exposure_skip, exposure_plots.plot_frequency_read),
               ("training_dynamics", report.dynamics, _dynamics_skip, exposure_plots.plot_dynamics))
    # the exposure figures exist only when some model's exposure is known (training dynamics:
    # when one run was evaluated at several steps); otherwise they are left out without a word
    optional = {"exposure": not model_exposures, "frequency_read": not model_exposures,
                "training_dynamics": len({m.step for m in model_exposures if m.run_key}) < 2}
    for name, rows, skip, plot in figures:
        reason = skip(rows)
        if reason and optional.get(name):
            continue
        if reason:
            report.skipped[f"{name}.png"] = reason
            log.warning("%s.png skipped: %s", name, reason)
            continue
        write_csv(out / f"{name}.csv", rows)
        report_plots.save(plot(rows), out / f"{name}.png")
        report.files[f"{name}.csv"] = out / f"{name}.csv"
        report.files[f"{name}.png"] = out / f"{name}.png"
    with naming_path(out / "summary.md"):
        (out / "summary.md").write_text(render_markdown(report, runs), encoding="utf-8")
    report.files["summary.md"] = out / "summary.md"
    log.info("report written to %s (%s)", out, ", ".join(sorted(report.files)))
    return report


def _pct(row: dict) -> str:
    if not row["n"]:
        return "-"
    return f"{row['accuracy_pct']:.1f} [{row['ci_low_pct']:.1f}, {row['ci_high_pct']:.1f}]"


def render_markdown(report: ReportSummary, runs) -> str:
    """``summary.md``: per-model tables, figures, skipped figures and notes."""
    lines = ["# NanoKnow report", "",
             "Every number is recomputed from the per-sample scores in the lm-eval `samples_*.jsonl` files "
             f"({METRIC_LABEL}: the DPR/Pyserini `has_answers` rule, a gold answer's tokens occur in the "
             "generation, 0/1 per question; not lm-eval's string-equality `exact_match`). Brackets give 95% Wilson "
             "score intervals of the per-sample 0/1 scores; accuracies in %. When a folder holds several runs "
             "of a task, the newest results file (and its samples) is used.", ""]
    has_judge = any(r["metric"] == "llm_judge" for r in report.summary)
    for run in runs:
        rows = [r for r in report.summary if r["model"] == run.model]
        lines += [f"## {run.model}", "", f"Folder: `{run.folder}`", ""]
        if not rows:
            lines += ["No task with logged samples.", ""]
            continue
        header = f"| task | paper condition | split | n | {METRIC_LABEL} % [95% CI] |"
        rule = "|---|---|---|---:|---|"
        if has_judge:
            header += " llm_judge % [95% CI] |"
            rule += "---|"
        lines += [header, rule]
        for row in rows:
            if row["metric"] != METRIC:
                continue
            line = f"| `{row['task']}` | {row['paper_condition']} | {row['split']} | {row['n']} | {_pct(row)} |"
            if has_judge:
                judge = [r for r in rows if r["task"] == row["task"] and r["metric"] == "llm_judge"]
                line += f" {_pct(judge[0]) if judge else '-'} |"
            lines.append(line)
        lines.append("")
    if any(r["at_cap"] or r["with_counts"] for r in report.answer_counts):
        lines += ["## Answer frequency: capped vs whole corpus", "",
                  "The qrels count answer documents among BM25's top-k (capped); `nanoknow count` counts them "
                  "over the whole corpus (substring: the stage-1 rule; token: the has_answer rule).", "",
                  "| model | task | n | at the top-k cap | median capped | median whole corpus (substring / token) |",
                  "|---|---|---:|---:|---:|---|"]
        for r in report.answer_counts:
            lines.append(f"| {r['model']} | `{r['task']}` | {r['n']} | {r['at_cap']} (k={r['top_k']}) | "
                         f"{r['median_capped']} | {r['median_uncapped_substring'] or '-'} / "
                         f"{r['median_uncapped_token'] or '-'} |")
        lines.append("")
    if report.exposures:
        lines += ["## Exposure", "", "Supported questions split by what each checkpoint read: *seen* when a qrels "
                  "document lies in a shard the checkpoint surely read, *unseen* when none lies in a shard it "
                  "possibly read (exposure counts documents read, not remembered).", ""]
        lines += [f"- {model}: {text}" for model, text in report.exposures.items()] + [""]
        if report.exposure:
            lines += ["| model | task | seen % [95% CI] (n) | unseen % [95% CI] (n) |", "|---|---|---|---|"]
            for model, task in dict.fromkeys((r["model"], r["task"]) for r in report.exposure):
                cells = {r["status"]: r for r in report.exposure if r["model"] == model and r["task"] == task}
                lines.append(f"| {model} | `{task}` | " + " | ".join(
                    f"{_pct(cells[s])} ({cells[s]['n']})" if s in cells else "-" for s in ("seen", "unseen")) + " |")
            lines.append("")
    lines += ["## Figures", ""]
    for name, caption in (("frequency.png", f"{METRIC_LABEL} per answer-frequency bucket (qrels documents; "
                           "supported questions), unsupported questions as horizontal lines. Data: frequency.csv."),
                          ("distractors.png", f"{METRIC_LABEL} against the number of distractors k per oracle "
                           "position (middle from k = 2); k = 0 is the oracle's grid passage alone, the baseline. "
                           "Every k runs on the same questions with passages of the same length. "
                           "Data: distractors.csv."),
                          ("exposure.png", "Supported questions the checkpoint read (seen) vs not (unseen). "
                           "Data: exposure.csv."),
                          ("frequency_read.png", "Accuracy by answer documents in the corpus (capped by BM25's "
                           "top-k) and by those the checkpoint read. Data: frequency_read.csv."),
                          ("training_dynamics.png", "Accuracy against training step for questions whose first "
                           "evidence shard was read by that step vs not yet. Data: training_dynamics.csv.")):
        if name in report.skipped:
            lines += [f"- `{name}` skipped: {report.skipped[name]}"]
        elif name in report.files:
            lines += [f"![{name}]({name})", "", caption, ""]
    if report.notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in report.notes]
    return "\n".join(lines) + "\n"




