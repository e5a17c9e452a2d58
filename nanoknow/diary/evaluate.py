"""Evaluate a fine-tuned checkpoint on its diary task's test split through lm-eval's Python API.

The calls are the ones the ``lm_eval`` CLI makes (``simple_evaluate`` with ``log_samples``,
then ``EvaluationTracker`` saving the aggregated results and the per-sample log), so the
output folder has the CLI's layout (``<model>/results_<time>.json``, ``samples_<task>_<time>.jsonl``)
and ``nanoknow diary report`` or any lm-eval tooling reads it. The task manager indexes only the
diary task files (lm-eval's own thousands of task files would take longer to index than a small
evaluation takes to run); the task configs are the same ones the CLI loads.
"""

from __future__ import annotations

import logging
from pathlib import Path

from .run_info import read_run_info, task_for

log = logging.getLogger(__name__)


def results_files(folder: str | Path) -> list[Path]:
    """The ``results_*.json`` files under an lm-eval output folder (newest name last)."""
    folder = Path(folder)
    return sorted(folder.rglob("results_*.json"), key=lambda p: p.name) if folder.is_dir() else []


def evaluate_checkpoint(checkpoint: str | Path, *, diary_dir: str | Path, output_path: str | Path,
                        batch_size: int | str = 16, device: str | None = None, limit: float | None = None,
                        gen_kwargs: str | None = None) -> Path:
    """Run the ``nanoknow_diary_*`` task matching ``checkpoint``'s run on ``diary_dir``; return the results file."""
    import lm_eval
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    import nanoknow_tasks.diary

    checkpoint = Path(checkpoint).resolve()
    info = read_run_info(checkpoint)
    task = task_for(info["diarists"])
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    model_args = f"pretrained={checkpoint}" + (",backend=seq2seq" if info.get("is_encoder_decoder") else "")
    tracker = EvaluationTracker(output_path=str(output_path))
    metadata = {"diary_dir": str(Path(diary_dir).resolve())}
    tasks = TaskManager(include_path=str(Path(nanoknow_tasks.diary.__file__).parent), include_defaults=False,
                        metadata=metadata)
    log.info("lm-eval: %s on %s (%s)", task, checkpoint, device)
    results = lm_eval.simple_evaluate(model="hf", model_args=model_args, tasks=[task], batch_size=batch_size,
                                      device=device, limit=limit, gen_kwargs=gen_kwargs, log_samples=True,
                                      evaluation_tracker=tracker, task_manager=tasks, metadata=metadata)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for task_name in results["configs"]:
        tracker.save_results_samples(task_name=task_name, samples=samples[task_name])
    files = results_files(output_path)
    if not files:
        raise RuntimeError(f"lm-eval wrote no results file under {output_path}")
    log.info("%s: %s", task, {k: v for k, v in results["results"][task].items() if k.endswith(",none")})
    return files[-1]
