"""The paper's two diary figures from lm-eval output folders (Prato et al., Figures 2 and 3).

:func:`load_results` reads every ``results_*.json`` under the given folders, keeps the
``nanoknow_diary_*`` tasks, and finds the evaluated checkpoint's ``diary_run.json`` (written by
``diary finetune``) through the ``pretrained=`` model argument: the model's family, parameter
count and training variant come from there. The per-sample log next to the results (when
present) gives the number of questions and correct answers for 95% Wilson intervals.

:func:`draw_figures` writes ``diary_accuracy_vs_size.png`` (accuracy vs parameters, one colour
per dataset size, standard solid and simplified dashed, one panel per model family),
``diary_simplified_gap.png`` (simplified minus standard, percentage points) and
``diary_results.csv`` (every row).
"""

from __future__ import annotations

import csv
import json
import logging
import math
import re
from pathlib import Path

from projection.diary.generator import SIZES
from nanoknow_common.errors import NanoKnowInputError

from .run_info import read_run_info

log = logging.getLogger(__name__)

FIGURE_METRICS = ("exact_recall", "count_accuracy", "entry_accuracy")
_TASK = re.compile(r"^nanoknow_diary_(\d+k)$")
COLUMNS = ("label", "model_type", "parameters", "size", "variant", "metric", "value", "n", "correct",
           "ci_low", "ci_high", "exact_recall", "count_accuracy", "entry_accuracy", "count_error", "results_file")


def _model_args(config: dict) -> dict:
    args = config.get("model_args")
    if isinstance(args, dict):
        return args
    if isinstance(args, str):
        return dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    return {}


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _samples(results_file: Path, task: str) -> list[dict] | None:
    stamp = results_file.stem[len("results_"):]
    path = results_file.with_name(f"samples_{task}_{stamp}.jsonl")
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _read(results_file: Path, metric: str) -> list[dict]:
    from nanoknow.report.stats import wilson_interval

    try:
        data = json.loads(results_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise NanoKnowInputError(f"not valid JSON: {err}", file=results_file) from None
    tasks = {t: m for t, m in (data.get("results") or {}).items() if _TASK.match(t)}
    if not tasks:
        return []
    pretrained = _model_args(data.get("config") or {}).get("pretrained")
    if not pretrained:
        raise NanoKnowInputError("no pretrained= in config.model_args", file=results_file, field="config.model_args")
    info = read_run_info(pretrained)
    rows = []
    for task, metrics in tasks.items():
        size = _TASK.match(task).group(1)
        if SIZES.get(size) != info["diarists"]:
            log.warning("%s: %s evaluated a checkpoint trained on %d diarists; skipped", results_file, task,
                        info["diarists"])
            continue
        row = {"label": info["label"], "model_type": info["model_type"], "parameters": int(info["parameters"]),
               "size": size, "variant": info["variant"], "metric": metric, "results_file": str(results_file)}
        for name in ("exact_recall", "count_accuracy", "entry_accuracy", "count_error"):
            row[name] = _number(metrics.get(f"{name},none"))
        row["value"] = row[metric]
        samples = _samples(results_file, task)
        n = len(samples) if samples is not None else int((data.get("n-samples") or {}).get(task, {}).get("effective", 0))
        correct = None
        if metric != "entry_accuracy":
            correct = (sum(s[metric] for s in samples) if samples is not None
                       else round(row[metric] * n) if n and math.isfinite(row[metric]) else 0)
        low, high = wilson_interval(int(correct), n) if correct is not None and n else (math.nan, math.nan)
        rows.append({**row, "n": n, "correct": correct, "ci_low": low, "ci_high": high})
    return rows


def load_results(paths: list[str | Path], metric: str = "exact_recall") -> list[dict]:
    """One row per (model, size, variant): the newest results file wins when one was evaluated twice."""
    if metric not in FIGURE_METRICS:
        raise NanoKnowInputError(f"must be one of {FIGURE_METRICS}, got {metric!r}", field="--metric")
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            found = sorted(path.rglob("results_*.json"))
            if not found:
                raise NanoKnowInputError("no results_*.json under this folder (an lm-eval --output_path)", file=path)
            files += found
        else:
            raise NanoKnowInputError("no such file or folder", file=path)
    chosen: dict[tuple, dict] = {}
    for results_file in sorted(set(files), key=lambda p: p.name):  # timestamps in the names: newest last
        for row in _read(results_file, metric):
            key = (row["label"], row["size"], row["variant"])
            if key in chosen:
                log.warning("%s %s %s evaluated twice; using %s", *key, results_file)
            chosen[key] = row
    if not chosen:
        raise NanoKnowInputError("no nanoknow_diary_* results found", file=", ".join(map(str, paths)))
    order = list(SIZES)
    return sorted(chosen.values(), key=lambda r: (r["model_type"], order.index(r["size"]), r["variant"], r["parameters"]))


def _families(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["model_type"] for r in rows))


def _axes(rows: list[dict], title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    families = _families(rows)
    fig, axes = plt.subplots(1, len(families), squeeze=False, figsize=(5.2 * len(families) + 0.6, 4.6))
    fig.suptitle(title, fontsize=12)
    return fig, dict(zip(families, axes[0]))


def _colors(rows: list[dict]) -> dict[str, str]:
    sizes = [s for s in SIZES if any(r["size"] == s for r in rows)]
    return {size: f"C{i % 10}" for i, size in enumerate(sizes)}


def _metric_title(metric: str) -> str:
    return metric.replace("_", " ")


def plot_accuracy_vs_size(rows: list[dict], metric: str = "exact_recall"):
    """Accuracy (%) vs parameters per dataset size: standard solid, simplified dashed; one panel per family."""
    fig, panels = _axes(rows, f"Diary recall: {_metric_title(metric)} vs model size")
    colors = _colors(rows)
    for family, ax in panels.items():
        for size, color in colors.items():
            for variant, style in (("standard", "-"), ("simplified", "--")):
                line = sorted((r for r in rows if r["model_type"] == family and r["size"] == size
                               and r["variant"] == variant), key=lambda r: r["parameters"])
                if not line:
                    continue
                xs = [r["parameters"] for r in line]
                ys = [100 * r["value"] for r in line]
                ax.plot(xs, ys, linestyle=style, marker="o" if variant == "standard" else "s", color=color,
                        label=f"{size} {variant}")
                low = [max(0.0, y - 100 * r["ci_low"]) if math.isfinite(r["ci_low"]) else 0.0 for y, r in zip(ys, line)]
                high = [max(0.0, 100 * r["ci_high"] - y) if math.isfinite(r["ci_high"]) else 0.0 for y, r in zip(ys, line)]
                ax.errorbar(xs, ys, yerr=[low, high], fmt="none", ecolor=color, alpha=0.35, capsize=2)
                if size == next(iter(colors)) and variant == "standard":  # name the models once
                    for x, y, r in zip(xs, ys, line):
                        ax.annotate(r["label"], (x, y), textcoords="offset points", xytext=(4, 6), fontsize=7,
                                    color="dimgray", rotation=30)
        ax.set_xscale("log")
        ax.set_ylim(-3, 103)
        ax.set_title(family)
        ax.set_xlabel("parameters")
        ax.set_ylabel(f"{_metric_title(metric)} (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5, frameon=False)
    fig.tight_layout()
    return fig


def gap_rows(rows: list[dict]) -> list[dict]:
    """Simplified minus standard (percentage points) for every (model, size) evaluated in both variants."""
    by_key = {(r["label"], r["size"], r["variant"]): r for r in rows}
    gaps = []
    for (label, size, variant), row in by_key.items():
        other = by_key.get((label, size, "standard"))
        if variant == "simplified" and other is not None:
            gaps.append({"label": label, "model_type": row["model_type"], "parameters": row["parameters"],
                         "size": size, "gap_pp": 100 * (row["value"] - other["value"])})
    return gaps


def plot_simplified_gap(rows: list[dict], metric: str = "exact_recall"):
    """Simplified minus standard accuracy (percentage points) vs parameters, per dataset size and family."""
    gaps = gap_rows(rows)
    fig, panels = _axes(rows, f"Diary recall: simplified minus standard ({_metric_title(metric)})")
    colors = _colors(rows)
    for family, ax in panels.items():
        for size, color in colors.items():
            line = sorted((g for g in gaps if g["model_type"] == family and g["size"] == size),
                          key=lambda g: g["parameters"])
            if line:
                ax.plot([g["parameters"] for g in line], [g["gap_pp"] for g in line], marker="o", color=color,
                        label=size)
        if not any(g["model_type"] == family for g in gaps):
            ax.text(0.5, 0.5, "no model evaluated in both variants", ha="center", va="center",
                    transform=ax.transAxes, fontsize=9, color="gray")
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_title(family)
        ax.set_xlabel("parameters")
        ax.set_ylabel("simplified - standard (pp)")
        ax.grid(alpha=0.3)
        if any(g["model_type"] == family for g in gaps):
            ax.legend(fontsize=7.5, frameon=False, title="dataset size", title_fontsize=7.5)
    fig.tight_layout()
    return fig


def write_table(rows: list[dict], path: str | Path) -> Path:
    """Every row as CSV (NaN left empty)."""
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if isinstance(row.get(k), float) and math.isnan(row[k]) else row.get(k))
                             for k in COLUMNS})
    return path


def draw_figures(rows: list[dict], out: str | Path, metric: str = "exact_recall") -> list[Path]:
    """Write both figures and the CSV into ``out``; return their paths."""
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in (("diary_accuracy_vs_size.png", plot_accuracy_vs_size),
                       ("diary_simplified_gap.png", plot_simplified_gap)):
        fig = draw(rows, metric)
        fig.savefig(out / name, dpi=130)
        plt.close(fig)
        written.append(out / name)
    written.append(write_table(rows, out / "diary_results.csv"))
    return written
