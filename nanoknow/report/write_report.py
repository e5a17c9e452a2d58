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
        return "no distractor task with samples (needs nanoknow_{nq,squad}_supported_distractors_k{1,2,4,8}_*)"
    return None


def write_report(result_dirs: list[Path], out: Path, *, judge_cache: str | None = None) -> ReportSummary:
    """Read lm-eval output folders and write the report into ``out``; return what was written.

    Raises :class:`nanoknow_common.errors.NanoKnowInputError` for a path that is not an lm-eval
    output folder. ``judge_cache``: the ``llm_judge`` SQLite cache (default: the judge's own).
    """
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

    report.frequency, notes = frequency_rows(tasks)
    report.notes += notes
    report.distractors = distractor_rows(tasks)
    figures = (("frequency", report.frequency, _frequency_skip, report_plots.plot_frequency),
               ("distractors", report.distractors, _distractor_skip, report_plots.plot_distractors))
    for name, rows, skip, plot in figures:
        reason = skip(rows)
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
             "(exact match: the DPR/Pyserini `has_answers` rule, 0/1 per question). Brackets give 95% Wilson "
             "score intervals of the per-sample 0/1 scores; accuracies in %. When a folder holds several runs "
             "of a task, the newest results file (and its samples) is used.", ""]
    has_judge = any(r["metric"] == "llm_judge" for r in report.summary)
    for run in runs:
        rows = [r for r in report.summary if r["model"] == run.model]
        lines += [f"## {run.model}", "", f"Folder: `{run.folder}`", ""]
        if not rows:
            lines += ["No task with logged samples.", ""]
            continue
        header = "| task | paper condition | split | n | exact match % [95% CI] |"
        rule = "|---|---|---|---:|---|"
        if has_judge:
            header += " llm_judge % [95% CI] |"
            rule += "---|"
        lines += [header, rule]
        for row in rows:
            if row["metric"] != "exact_match":
                continue
            line = f"| `{row['task']}` | {row['paper_condition']} | {row['split']} | {row['n']} | {_pct(row)} |"
            if has_judge:
                judge = [r for r in rows if r["task"] == row["task"] and r["metric"] == "llm_judge"]
                line += f" {_pct(judge[0]) if judge else '-'} |"
            lines.append(line)
        lines.append("")
    lines += ["## Figures", ""]
    for name, caption in (("frequency.png", "Exact match per answer-frequency bucket (qrels documents; "
                           "supported questions), unsupported questions as horizontal lines. Data: frequency.csv."),
                          ("distractors.png", "Exact match against the number of distractors k per oracle "
                           "position; k = 0 is the oracle alone. Data: distractors.csv.")):
        if name in report.skipped:
            lines += [f"- `{name}` skipped: {report.skipped[name]}"]
        else:
            lines += [f"![{name}]({name})", "", caption, ""]
    if report.notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in report.notes]
    return "\n".join(lines) + "\n"




