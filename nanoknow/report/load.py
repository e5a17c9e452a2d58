"""Find and read lm-eval output folders (``--output_path`` with ``--log_samples``) for ``nanoknow report``.

lm-eval writes ``OUT/<model_name_sanitized>/results_<timestamp>.json`` and, with
``--log_samples``, ``samples_<task>_<timestamp>.jsonl`` beside it. A report input may be
``OUT`` (one sub-folder per model) or one model folder. When a folder holds several runs, each
task is read from the newest results file that has it (timestamps sort as text).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError
from nanoknow_tasks.task_specs import TaskSpec, parse_task_name

log = logging.getLogger(__name__)

_RESULTS = re.compile(r"^results_(?P<ts>.+)\.json$")


@dataclass
class TaskRun:
    """One task of one model: the results file it came from and its logged samples (if any)."""

    info: TaskSpec
    results_file: Path
    samples_file: Path | None
    reported: dict = field(default_factory=dict)  # lm-eval's own numbers, for a cross-check only
    older_runs: int = 0  # how many older results files also had this task
    task_config: dict = field(default_factory=dict)  # the task's config in that results file (metadata...)

    def samples(self) -> list[dict]:
        """The logged samples (one dict per doc), in file order."""
        if self.samples_file is None:
            return []
        from nanoknow_common.file_io import text_lines

        rows = []
        for number, line in text_lines(self.samples_file):
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise NanoKnowInputError(f"not JSON ({err.msg})", file=self.samples_file, line=number)
                if not isinstance(row, dict):
                    raise NanoKnowInputError(f"expected a JSON object (an lm-eval sample), got {type(row).__name__}",
                                             file=self.samples_file, line=number)
                if row.get("doc") is not None and not isinstance(row["doc"], dict):
                    raise NanoKnowInputError(f"expected a JSON object, got {type(row['doc']).__name__}",
                                             file=self.samples_file, line=number, field="doc")
                rows.append(row)
        return rows


@dataclass
class ModelRuns:
    """Every NanoKnow task found for one model folder."""

    model: str
    folder: Path
    config: dict
    tasks: dict[str, TaskRun]
    other_tasks: list[str] = field(default_factory=list)  # non-NanoKnow tasks, ignored
    notes: list[str] = field(default_factory=list)

    @property
    def task_configs(self) -> dict:
        """Task name -> its config as lm-eval recorded it."""
        return {name: run.task_config for name, run in self.tasks.items()}


def _model_name(results: dict, folder: Path) -> str:
    args = (results.get("config") or {}).get("model_args")
    if isinstance(args, dict) and args.get("pretrained"):
        name = str(args["pretrained"])
    elif isinstance(args, str) and "pretrained=" in args:
        name = args.split("pretrained=", 1)[1].split(",", 1)[0]
    else:
        name = results.get("model_name") or folder.name
    return Path(name).name if "/" in name and Path(name).is_absolute() else name


def _read_json(path: Path) -> dict:
    from nanoknow_common.file_io import read_text

    try:
        data = json.loads(read_text(path))
    except (OSError, json.JSONDecodeError) as err:
        raise NanoKnowInputError(f"unreadable lm-eval results file ({err})", file=path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise NanoKnowInputError("not an lm-eval results file (no 'results' object)", file=path)
    return data


def load_model_folder(folder: Path) -> ModelRuns:
    """Read one ``OUT/<model>/`` folder: per task the newest results file and its samples file."""
    results_files = sorted((p for p in folder.iterdir() if _RESULTS.match(p.name)), key=lambda p: p.name)
    if not results_files:
        raise NanoKnowInputError("not an lm-eval output folder (no results_*.json)", file=folder)
    newest = _read_json(results_files[-1])
    runs = ModelRuns(model=_model_name(newest, folder), folder=folder, config=newest.get("config") or {}, tasks={})
    other: set[str] = set()
    for path in reversed(results_files):  # newest first
        stamp = _RESULTS.match(path.name)["ts"]
        data = newest if path == results_files[-1] else _read_json(path)
        for name, reported in data["results"].items():
            info = parse_task_name(name)
            if info is None:
                other.add(name)
                continue
            if name in runs.tasks:
                runs.tasks[name].older_runs += 1
                continue
            samples = folder / f"samples_{name}_{stamp}.jsonl"
            config = (data.get("configs") or {}).get(name)
            runs.tasks[name] = TaskRun(info, path, samples if samples.is_file() else None, dict(reported),
                                       task_config=config if isinstance(config, dict) else {})
    runs.other_tasks = sorted(other - set(runs.tasks))
    repeated = sorted(n for n, t in runs.tasks.items() if t.older_runs)
    if repeated:
        runs.notes.append(f"{folder}: {len(repeated)} task(s) were run more than once; the newest results "
                          f"file of each is used ({', '.join(repeated[:4])}{', ...' if len(repeated) > 4 else ''})")
    missing = sorted(n for n, t in runs.tasks.items() if t.samples_file is None)
    if missing:
        runs.notes.append(f"{folder}: no samples_*.jsonl for {len(missing)} task(s) "
                          f"({', '.join(missing[:4])}{', ...' if len(missing) > 4 else ''}); run lm_eval with "
                          "--log_samples; these tasks are left out of the report")
    if not runs.tasks:
        runs.notes.append(f"{folder}: no NanoKnow tasks in its results files"
                          + (f" (found {', '.join(runs.other_tasks[:4])})" if runs.other_tasks else ""))
    for note in runs.notes:
        log.warning(note)
    return runs


def find_model_folders(path: Path) -> list[Path]:
    """``path`` itself if it holds ``results_*.json``, else its sub-folders that do; error if none."""
    path = Path(path)
    if not path.is_dir():
        raise NanoKnowInputError("not an lm-eval output folder (no such directory)", file=path)
    if any(_RESULTS.match(p.name) for p in path.iterdir()):
        return [path]
    folders = sorted(p for p in path.iterdir() if p.is_dir() and any(_RESULTS.match(q.name) for q in p.iterdir()))
    if not folders:
        raise NanoKnowInputError("not an lm-eval output folder (no results_*.json in it or its sub-folders)",
                                 file=path)
    return folders


def load_runs(paths: list[Path]) -> list[ModelRuns]:
    """All model folders under the given inputs; model names made unique by their folder if needed."""
    runs = [load_model_folder(folder) for path in paths for folder in find_model_folders(path)]
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.model] = seen.get(run.model, 0) + 1
    for run in runs:
        if seen[run.model] > 1:
            run.model = f"{run.model} ({run.folder.parent.name}/{run.folder.name})"
    return runs
