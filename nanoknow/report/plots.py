"""The report's figures (matplotlib, Agg): ``has_answer`` (the paper's exact match) per
answer-frequency bucket and per k distractors.

Both functions draw from the rows of :mod:`nanoknow.report.tables` (the rows written to the
CSVs) and return the figure; one panel per dataset (rows) x model (columns). Error bars are
95% Wilson intervals; ``n`` per bucket is written under the bucket, ``n`` per line in the legend.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from nanoknow.report.stats import BUCKETS, METRIC_LABEL  # noqa: E402
from nanoknow_tasks.task_specs import DISTRACTOR_COUNTS, POSITIONS  # noqa: E402

CONDITION_STYLE = {"closedbook": ("closed-book", "tab:blue", "o", "-"),
                   "oracle": ("oracle", "tab:orange", "s", "--"),
                   "original": ("original context", "tab:green", "^", "-.")}
POSITION_STYLE = dict(zip(POSITIONS, (("tab:blue", "o"), ("tab:orange", "s"), ("tab:green", "^"))))
REFERENCE_STYLE = {"closedbook": ("tab:gray", ":"), "original": ("tab:purple", (0, (5, 2, 1, 2)))}
K_VALUES = DISTRACTOR_COUNTS


def _panels(rows: list[dict], title: str):
    models = list(dict.fromkeys(r["model"] for r in rows))
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(len(datasets), len(models), squeeze=False, sharey=True,
                             figsize=(max(6.0, 4.8 * len(models) + 0.6), 4.4 * len(datasets) + 1.0))
    fig.suptitle(title, fontsize=13)
    return fig, axes, models, datasets


def _yerr(rows: list[dict]):
    low = [max(0.0, r["accuracy_pct"] - r["ci_low_pct"]) if r["n"] else 0.0 for r in rows]
    high = [max(0.0, r["ci_high_pct"] - r["accuracy_pct"]) if r["n"] else 0.0 for r in rows]
    return [low, high]


def _annotate_n(ax, xs, rows, color, level=0):
    for x, r in zip(xs, rows):
        if r["n"]:
            ax.annotate(f"n={r['n']}", (x, r["accuracy_pct"]), textcoords="offset points", xytext=(6, 3 + 9 * level),
                        fontsize=7, color=color)


def _finish(ax, xlabel: str, ylabel: bool, ncol: int = 2, legend_y: float = -0.2):
    ax.set_ylim(-3, 105)
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(f"{METRIC_LABEL}, %")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, legend_y), ncol=ncol, frameon=False)


def _bucket_tick(bucket: str, counts: list[dict]) -> str:
    """``1-5`` over ``n=12`` (or ``n=12/10`` when the conditions' counts differ, in legend order)."""
    ns = [c.get(bucket, 0) for c in counts]
    return f"{bucket}\nn={ns[0]}" if len(set(ns)) == 1 else f"{bucket}\nn={'/'.join(map(str, ns))}"


def plot_frequency(rows: list[dict]):
    """``has_answer`` (%) per answer-frequency bucket (supported), unsupported as horizontal lines."""
    fig, axes, models, datasets = _panels(
        rows, f"{METRIC_LABEL} by answer frequency in the pre-training corpus\n"
              "(error bars: 95% Wilson score intervals)")
    labels = [label for label, _, _ in BUCKETS]
    for i, dataset in enumerate(datasets):
        for j, model in enumerate(models):
            ax = axes[i][j]
            panel = [r for r in rows if r["model"] == model and r["dataset"] == dataset]
            conditions = [c for c in CONDITION_STYLE if any(r["condition"] == c and r["split"] == "supported"
                                                            for r in panel)]
            offsets = {c: (k - (len(conditions) - 1) / 2) * 0.12 for k, c in enumerate(conditions)}
            counts: list[dict] = []
            for condition in conditions:
                name, color, marker, line = CONDITION_STYLE[condition]
                points = {r["bucket"]: r for r in panel if r["condition"] == condition and r["split"] == "supported"}
                present = [points[b] for b in labels if b in points and points[b]["n"]]
                xs = [labels.index(r["bucket"]) + offsets[condition] for r in present]
                ax.errorbar(xs, [r["accuracy_pct"] for r in present], yerr=_yerr(present), color=color,
                            marker=marker, linestyle=line, capsize=3,
                            label=f"supported, {name} (n={sum(r['n'] for r in present)})")
                counts.append({r["bucket"]: r["n"] for r in present})
            for r in panel:
                if r["split"] == "unsupported":
                    color, line = REFERENCE_STYLE.get(r["condition"], ("black", ":"))
                    ax.axhline(r["accuracy_pct"], color=color, linestyle=line, linewidth=1.6,
                               label=f"unsupported, {CONDITION_STYLE[r['condition']][0]} "
                                     f"(all, n={r['n']}): {r['accuracy_pct']:.1f}%")
            ax.set_xticks(range(len(labels)), [_bucket_tick(b, counts) for b in labels])
            ax.set_xlim(-0.5, len(labels) - 0.5)
            ax.set_title(f"{model} - {dataset}", fontsize=10)
            _finish(ax, "answer frequency (qrels documents)", j == 0, ncol=1, legend_y=-0.27)
    fig.tight_layout()
    return fig


def _n_label(rows: list[dict]) -> str:
    ns = sorted({r["n"] for r in rows})
    return f"n={ns[0]} per k" if len(ns) == 1 else "n per point"


def plot_distractors(rows: list[dict]):
    """``has_answer`` (%) against the number of distractors k, one line per oracle position; k = 0
    (the grid passage alone, the same questions) is the baseline point."""
    fig, axes, models, datasets = _panels(
        rows, f"{METRIC_LABEL} with the oracle passage among k distractor passages\n"
              "(same questions and passage length for every k; error bars: 95% Wilson score intervals)")
    for i, dataset in enumerate(datasets):
        for j, model in enumerate(models):
            ax = axes[i][j]
            panel = [r for r in rows if r["model"] == model and r["dataset"] == dataset]
            ks = sorted({r["k"] for r in panel} | set(K_VALUES))
            where = {k: n for n, k in enumerate(ks)}
            for p, position in enumerate(POSITION_STYLE):
                color, marker = POSITION_STYLE[position]
                present = sorted((r for r in panel if r["position"] == position and r["n"]), key=lambda r: r["k"])
                if not present:
                    continue
                xs = [where[r["k"]] + (p - 1) * 0.12 for r in present]
                ax.errorbar(xs, [r["accuracy_pct"] for r in present], yerr=_yerr(present), color=color,
                            marker=marker, capsize=3, label=f"oracle {position} ({_n_label(present)})")
                if len({r["n"] for r in present}) > 1:
                    _annotate_n(ax, xs, present, color, p)
            alone = [r for r in panel if r["k"] == 0 and r["n"]]
            if alone:
                ax.errorbar([where[0]], [alone[0]["accuracy_pct"]], yerr=_yerr(alone), color="black", marker="D",
                            capsize=3, linestyle="none", label=f"oracle alone, k=0 (n={alone[0]['n']})")
            ax.set_xticks(range(len(ks)), [str(k) for k in ks])
            ax.set_xlim(-0.5, len(ks) - 0.5)
            ax.set_title(f"{model} - {dataset}", fontsize=10)
            _finish(ax, "distractor passages in the context (k)", j == 0)
    fig.tight_layout()
    return fig


def save(fig, path) -> None:
    """Write ``fig`` as a PNG (150 dpi) and close it."""
    from nanoknow_common.file_io import naming_path

    try:
        with naming_path(path):  # a failed write (disk full) names the file
            fig.savefig(path, dpi=150)
    finally:
        plt.close(fig)
