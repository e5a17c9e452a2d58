"""Figures of the exposure views (rows of :mod:`nanoknow.report.exposure`): seen vs unseen,
accuracy by documents read beside documents in the corpus, and accuracy over training steps."""

from __future__ import annotations

from nanoknow.report.plots import CONDITION_STYLE, plt
from nanoknow.report.stats import BUCKETS

STATUS_STYLE = {"seen": "tab:green", "uncertain": "tab:gray", "unseen": "tab:red"}
AXIS_STYLE = {"in corpus": ("tab:blue", "o", "-"), "read": ("tab:red", "s", "--")}


def _err(rows):
    return [[max(0.0, r["accuracy_pct"] - r["ci_low_pct"]) if r["n"] else 0.0 for r in rows],
            [max(0.0, r["ci_high_pct"] - r["accuracy_pct"]) if r["n"] else 0.0 for r in rows]]


def _grid(rows, title, width=5.0):
    models = list(dict.fromkeys(r["model"] for r in rows))
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(len(datasets), len(models), squeeze=False, sharey=True,
                             figsize=(max(6.0, width * len(models) + 0.6), 4.2 * len(datasets) + 1.0))
    fig.suptitle(title, fontsize=12)
    return fig, axes, models, datasets


def _finish(ax, title: str, first_column: bool, xlabel: str | None = None, ylim=(-3, 105)) -> None:
    ax.set_ylim(*ylim)
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    if first_column:
        ax.set_ylabel("has_answer (%)")
    ax.legend(fontsize=7, frameon=False)


def plot_exposure(rows: list[dict]):
    """Grouped bars: has_answer (%) of seen / uncertain / unseen supported questions per condition."""
    fig, axes, models, datasets = _grid(rows, "Supported questions split by what the checkpoint read\n"
                                              "(error bars: 95% Wilson score intervals)")
    for i, dataset in enumerate(datasets):
        for j, model in enumerate(models):
            ax = axes[i][j]
            panel = [r for r in rows if r["model"] == model and r["dataset"] == dataset]
            conditions = list(dict.fromkeys(r["condition"] for r in panel))
            for s, status in enumerate(STATUS_STYLE):
                bars = [next((r for r in panel if r["condition"] == c and r["status"] == status), None)
                        for c in conditions]
                xs = [c + (s - 1) * 0.27 for c, bar in enumerate(bars) if bar and bar["n"]]
                shown = [bar for bar in bars if bar and bar["n"]]
                if not shown:
                    continue
                ax.bar(xs, [b["accuracy_pct"] for b in shown], width=0.25, color=STATUS_STYLE[status],
                       yerr=_err(shown), capsize=3, label=f"{status} (n={'/'.join(str(b['n']) for b in shown)})")
            ax.set_xticks(range(len(conditions)), [CONDITION_STYLE[c][0] for c in conditions])
            _finish(ax, f"{model} - {dataset}", j == 0, ylim=(0, 105))
    fig.tight_layout()
    return fig


def plot_frequency_read(rows: list[dict]):
    """has_answer (%) per bucket of answer documents in the corpus and of those the checkpoint read."""
    fig, axes, models, datasets = _grid(rows, "Accuracy by answer frequency: documents in the corpus vs read by "
                                              "the checkpoint\n(supported questions; 95% Wilson intervals)", 6.0)
    labels = ["0 (not read)"] + [b for b, _, _ in BUCKETS]
    for i, dataset in enumerate(datasets):
        for j, model in enumerate(models):
            ax = axes[i][j]
            panel = [r for r in rows if r["model"] == model and r["dataset"] == dataset]
            for condition in dict.fromkeys(r["condition"] for r in panel):
                for axis, (color, marker, line) in AXIS_STYLE.items():
                    points = [r for r in panel if r["condition"] == condition and r["axis"] == axis and r["n"]]
                    points.sort(key=lambda r: labels.index(r["bucket"]))
                    if not points:
                        continue
                    ax.errorbar([labels.index(r["bucket"]) for r in points], [r["accuracy_pct"] for r in points],
                                yerr=_err(points), color=color, marker=marker, linestyle=line, capsize=3,
                                label=f"{CONDITION_STYLE[condition][0]}, {axis}")
            ax.set_xticks(range(len(labels)), labels, fontsize=8)
            _finish(ax, f"{model} - {dataset}", j == 0, "answer documents")
    fig.tight_layout()
    return fig


def plot_dynamics(rows: list[dict]):
    """has_answer (%) against training step: questions whose evidence was read by then vs not yet."""
    runs = list(dict.fromkeys(r["run"] for r in rows))
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(len(datasets), len(runs), squeeze=False, sharey=True,
                             figsize=(max(6.0, 5.5 * len(runs)), 4.2 * len(datasets) + 1.0))
    fig.suptitle("Knowledge over training: questions whose evidence was read by each step vs not yet", fontsize=12)
    styles = {"read by this step": "-", "not yet read": "--"}
    for i, dataset in enumerate(datasets):
        for j, run in enumerate(runs):
            ax = axes[i][j]
            panel = [r for r in rows if r["run"] == run and r["dataset"] == dataset]
            for condition in dict.fromkeys(r["condition"] for r in panel):
                for label, line in styles.items():
                    points = sorted((r for r in panel if r["condition"] == condition and r["questions"] == label
                                     and r["n"]), key=lambda r: r["step"])
                    if points:
                        ax.errorbar([r["step"] for r in points], [r["accuracy_pct"] for r in points],
                                    yerr=_err(points), color=CONDITION_STYLE[condition][1], linestyle=line,
                                    marker="o", capsize=3, label=f"{CONDITION_STYLE[condition][0]}, {label}")
            _finish(ax, f"{run} - {dataset}", j == 0, "training step")
    fig.tight_layout()
    return fig
