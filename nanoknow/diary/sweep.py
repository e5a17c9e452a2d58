"""``diary sweep``: models x dataset sizes x variants from a YAML grid, resumable run by run.

Grid file (see ``grid_example.yaml``)::

    models:                       # Hugging Face ids or folders; label, gguf_file, finetune optional
      - model: EleutherAI/pythia-70m
      - {model: google/flan-t5-small, finetune: {learning_rate: 3.0e-4}}
    sizes: [1k, 2k]               # nanoknow_diary task sizes (1k ... 64k)
    variants: [standard, simplified]
    seed: 1234                    # diary seed (default: the tasks' 1234)
    diary_dirs: {1k: data/diary-1k}   # optional: existing `diary make` folders
    finetune: {eval_steps: 200, patience: 5}   # FinetuneSettings fields for every run
    eval: {batch_size: 16, device: cuda, limit: null, gen_kwargs: null}

Layout under ``OUT``: ``data/diary-<size>-seed<seed>/`` (generated when no folder is given),
``runs/<label>-<size>-<variant>/`` (``diary finetune`` run folders), ``eval/<label>-<size>-<variant>/``
(lm-eval output folders on the test split). A run whose ``result.json`` exists is not trained
again and an evaluation whose ``results_*.json`` exists is not repeated, so an interrupted
sweep continues where it stopped. ``sweep.jsonl`` gets one line per finished run.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from projection.diary.generator import DEFAULT_SEED, SIZES
from nanoknow_common.errors import NanoKnowInputError

from .finetune import VARIANTS, FinetuneSettings
from .run_info import default_label

log = logging.getLogger(__name__)

EVAL_FIELDS = {"batch_size": 16, "device": None, "limit": None, "gen_kwargs": None}
#: FinetuneSettings fields a grid may not set (the sweep sets them per run).
_PER_RUN = {"model", "diary_dir", "out", "variant", "gguf_file", "label"}


@dataclass
class ModelSpec:
    """One model of the grid."""

    model: str
    label: str
    gguf_file: str | None = None
    finetune: dict = field(default_factory=dict)


@dataclass
class Grid:
    """A parsed grid file."""

    models: list[ModelSpec]
    sizes: list[str]
    variants: list[str]
    seed: int = DEFAULT_SEED
    diary_dirs: dict[str, str] = field(default_factory=dict)
    finetune: dict = field(default_factory=dict)
    eval: dict = field(default_factory=lambda: dict(EVAL_FIELDS))

    def runs(self):
        """``(model, size, variant)`` for every run, in order (models outermost)."""
        return [(m, s, v) for m in self.models for s in self.sizes for v in self.variants]


def _finetune_overrides(value, path: Path, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise NanoKnowInputError("must be a mapping of diary finetune settings", file=path, field=where)
    types = {f.name: f.type for f in dataclasses.fields(FinetuneSettings) if f.name not in _PER_RUN}
    settings = {}
    for key, item in value.items():
        if key not in types:
            raise NanoKnowInputError(f"unknown setting (known: {', '.join(sorted(types))})", file=path,
                                     field=f"{where}.{key}")
        settings[key] = _coerce(item, types[key], path, f"{where}.{key}")
    return settings


def _coerce(value, type_name: str, path: Path, where: str):
    """A YAML value as the settings field's type (YAML 1.1 reads ``1e-4`` as a string)."""
    if value is None and "None" in type_name:
        return None
    base = type_name.split("|")[0].strip()
    try:
        if base == "bool":
            if not isinstance(value, bool):
                raise ValueError
            return value
        if base == "int":
            if isinstance(value, bool) or float(value) != int(float(value)):
                raise ValueError
            return int(float(value))
        if base == "float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        return str(value)
    except (TypeError, ValueError):
        raise NanoKnowInputError(f"must be {'a' if base != 'int' else 'an'} {base}, got {value!r}", file=path,
                                 field=where) from None


def _safe(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label)


def load_grid(path: str | Path) -> Grid:
    """Parse and check a grid file; input errors name the file and the field."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise NanoKnowInputError("no such grid file", file=path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise NanoKnowInputError(f"not valid YAML: {err}", file=path) from None
    if not isinstance(raw, dict):
        raise NanoKnowInputError("must be a mapping with models, sizes and variants", file=path)
    unknown = set(raw) - {"models", "sizes", "variants", "seed", "diary_dirs", "finetune", "eval"}
    if unknown:
        raise NanoKnowInputError("unknown key", file=path, field=sorted(unknown)[0])
    models = []
    if not isinstance(raw.get("models"), list) or not raw["models"]:
        raise NanoKnowInputError("must be a non-empty list", file=path, field="models")
    for i, entry in enumerate(raw["models"]):
        where = f"models[{i}]"
        if isinstance(entry, str):
            entry = {"model": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
            raise NanoKnowInputError("needs a `model` (Hugging Face id or folder)", file=path, field=where)
        extra = set(entry) - {"model", "label", "gguf_file", "finetune"}
        if extra:
            raise NanoKnowInputError("unknown key", file=path, field=f"{where}.{sorted(extra)[0]}")
        label = str(entry.get("label") or default_label(entry["model"], entry.get("gguf_file")))
        models.append(ModelSpec(entry["model"], label, entry.get("gguf_file"),
                                _finetune_overrides(entry.get("finetune"), path, f"{where}.finetune")))
    labels = [_safe(m.label) for m in models]
    if len(set(labels)) != len(labels):
        raise NanoKnowInputError("two models have the same label; give them distinct `label`s", file=path,
                                 field="models")
    sizes = raw.get("sizes")
    if not isinstance(sizes, list) or not sizes:
        raise NanoKnowInputError(f"must be a non-empty list of {', '.join(SIZES)}", file=path, field="sizes")
    sizes = [str(s) for s in sizes]
    for size in sizes:
        if size not in SIZES:
            raise NanoKnowInputError(f"unknown size {size!r}; the tasks have {', '.join(SIZES)}", file=path,
                                     field="sizes")
    variants = raw.get("variants", list(VARIANTS))
    if not isinstance(variants, list) or not variants or any(v not in VARIANTS for v in variants):
        raise NanoKnowInputError(f"must be a list of {', '.join(VARIANTS)}", file=path, field="variants")
    seed = raw.get("seed", DEFAULT_SEED)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise NanoKnowInputError("must be an integer", file=path, field="seed")
    diary_dirs = raw.get("diary_dirs") or {}
    if not isinstance(diary_dirs, dict) or any(str(k) not in SIZES for k in diary_dirs):
        raise NanoKnowInputError(f"must map sizes ({', '.join(SIZES)}) to `diary make` folders", file=path,
                                 field="diary_dirs")
    base = path.parent
    diary_dirs = {str(k): str(base / v) if not Path(v).is_absolute() else str(v) for k, v in diary_dirs.items()}
    evaluation = dict(EVAL_FIELDS)
    if raw.get("eval") is not None:
        if not isinstance(raw["eval"], dict):
            raise NanoKnowInputError("must be a mapping", file=path, field="eval")
        for key in raw["eval"]:
            if key not in EVAL_FIELDS:
                raise NanoKnowInputError(f"unknown key (known: {', '.join(EVAL_FIELDS)})", file=path,
                                         field=f"eval.{key}")
        evaluation.update(raw["eval"])
    return Grid(models, sizes, [str(v) for v in variants], seed, diary_dirs,
                _finetune_overrides(raw.get("finetune"), path, "finetune"), evaluation)


def locate_diary_set(grid: Grid, size: str, out: Path) -> Path:
    """The ``diary make`` folder of ``size``: the grid's, or one generated under ``out/data`` (once)."""
    from projection.diary.generator import generate_diary_set
    from projection.diary.files import MANIFEST, read_manifest, write_diary_set

    if size in grid.diary_dirs:
        folder = Path(grid.diary_dirs[size])
    else:
        folder = out / "data" / f"diary-{size}-seed{grid.seed}"
        if not (folder / MANIFEST).is_file():
            log.info("generating the %s diary set (seed %d) in %s", size, grid.seed, folder)
            write_diary_set(generate_diary_set(SIZES[size], grid.seed), folder)
    manifest = read_manifest(folder)
    if manifest["diarists"] != SIZES[size]:
        raise NanoKnowInputError(f"has {manifest['diarists']} diarists, size {size} needs {SIZES[size]}",
                                 file=folder / MANIFEST, field="diarists")
    return folder


def run_sweep(grid: Grid, out: str | Path) -> list[dict]:
    """Fine-tune and evaluate every run of ``grid`` under ``out`` (finished steps are skipped); one record per run."""
    from tqdm import tqdm

    from .evaluate import evaluate_checkpoint, results_files
    from .finetune import finetune

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    records = []
    for spec, size, variant in tqdm(grid.runs(), desc="diary sweep"):
        name = f"{_safe(spec.label)}-{size}-{variant}"
        diary_dir = locate_diary_set(grid, size, out)
        settings = FinetuneSettings(model=spec.model, diary_dir=str(diary_dir), out=str(out / "runs" / name),
                                    variant=variant, gguf_file=spec.gguf_file, label=spec.label,
                                    **{**grid.finetune, **spec.finetune})
        result = finetune(settings)
        eval_dir = out / "eval" / name
        existing = results_files(eval_dir)
        if existing:
            log.info("%s: evaluated already (%s); skipped", name, existing[-1])
            results_file = existing[-1]
        else:
            results_file = evaluate_checkpoint(result.best_dir, diary_dir=diary_dir, output_path=eval_dir,
                                               **grid.eval)
        record = {"run": name, "model": spec.model, "label": spec.label, "size": size, "variant": variant,
                  "run_dir": result.run_dir, "best_step": result.best_step, "stop_reason": result.stop_reason,
                  "results": str(results_file), "trained_now": not result.skipped, "evaluated_now": not existing}
        records.append(record)
        if record["trained_now"] or record["evaluated_now"]:
            with open(out / "sweep.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
    return records
