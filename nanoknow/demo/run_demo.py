"""``nanoknow demo``: the whole NanoKnow chain, offline, on an embedded sample.

Steps (each is skipped on a re-run when its output exists and was made with the same
settings; ``--fresh`` starts over). The demo writes only into names it records as its own in
``<out>/.steps/created.json`` and refuses to start when one of them exists without that
record; ``--fresh`` deletes only what that record lists:

1. sample corpus: FineWeb-like parquet shards with planted answers (``make-sample-corpus``),
   for NQ questions of the NanoKnow data when it is available, else for embedded questions
   about invented facts (``nanoknow.demo.invented_facts``);
2. index: a Lucene BM25 index over the shards (``nanoknow index``);
3. project: BM25 top-100, answer matching, LLM verification with the bundled SmolLM2
   (``nanoknow project --judge-mode choose``: the likelier of TRUE/COINCIDENTAL, one forward
   pass per candidate, 80-word windows, to stay fast on a CPU; a 135M judge is no real
   filter, a Qwen3-14B behind ``--verifier openai`` is) -> topics, qrels and answers;
4. build: datasets with oracle passages and BM25 hard-negative distractors (``nanoknow build``);
5. evaluate: SmolLM2-135M-Instruct (``--model hf``) and a nanochat checkpoint (a tiny random
   one unless ``--model-args`` names a real one) through the ``lm_eval`` CLI on closed-book,
   oracle and the whole NQ distractor grid (k = 0, 1, 2, 4, 8; 100-word passages);
6. report: tables and figures (``nanoknow report``), then the summary is printed.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

DATASET = "nq"
CORPUS_DIR = "sample"


def demo_tasks() -> list[str]:
    """The lm-eval tasks the demo runs: NQ closed-book, oracle and the whole distractor grid (its
    100-word passages keep k = 8 about as long as the old 200-word grid's k = 4)."""
    from nanoknow_tasks.task_specs import all_task_specs

    return [spec.name for spec in all_task_specs() if spec.dataset == DATASET
            and spec.condition in ("closedbook", "oracle", "distractors")]


#: Everything the demo writes into ``--out``, by top-level name (besides its ``.steps`` folder).
OUTPUTS = ("corpus", "index", "data", "build", "models", "results", "report")


class Steps:
    """Runs named steps once: a step's marker records its settings; same settings -> skipped.

    ``<out>/.steps/created.json`` lists the top-level outputs the demo created (recorded just
    before it creates them): only those are ever replaced or deleted (``--fresh``); an output
    name that exists without that record is the user's and makes the demo stop before it
    writes anything.
    """

    MANIFEST = "created.json"

    def __init__(self, out: Path):
        self.out = out
        self.markers = out / ".steps"
        if out.exists() and not out.is_dir():
            raise NanoKnowInputError("exists and is not a folder", file=out, field="--out")
        if self.markers.exists() and not (self.markers / self.MANIFEST).is_file():
            raise NanoKnowInputError(f"has a .steps folder without the demo's record of its outputs ({self.MANIFEST}; "
                                     "an older demo's folder?): delete it yourself or choose another --out",
                                     file=out, field="--out")
        self.created: list[str] = []
        if self.markers.exists():
            from nanoknow_common.file_io import read_json

            record = read_json(self.markers / self.MANIFEST, what="the demo's record of its outputs")
            if not isinstance(record, dict) or not isinstance(record.get("created"), list):
                raise NanoKnowInputError("not the demo's record of its outputs", file=self.markers / self.MANIFEST)
            self.created = [name for name in record["created"] if name in OUTPUTS]
        self.timings: dict[str, float] = {}

    def check_owned(self, names=OUTPUTS) -> None:
        """Refuse to start when an output name exists in ``out`` but the demo did not create it."""
        foreign = [name for name in names if (self.out / name).exists() or (self.out / name).is_symlink()
                   if name not in self.created]
        if foreign:
            raise NanoKnowInputError(
                f"{', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} in {self.out} but not made by "
                "nanoknow demo, which replaces only what it made: move it away or choose another --out",
                file=self.out / foreign[0], field="--out")

    def claim(self, path: Path) -> None:
        """Record ``path``'s top-level output name as the demo's before the demo creates it."""
        name = path.relative_to(self.out).parts[0]
        if name in self.created:
            return
        self.check_owned([name])
        self.created.append(name)
        self._save()

    def _save(self) -> None:
        self.markers.mkdir(parents=True, exist_ok=True)
        tmp = self.markers / f".{self.MANIFEST}.tmp"
        tmp.write_text(json.dumps({"created": self.created, "by": "nanoknow demo"}, indent=1) + "\n",
                       encoding="utf-8")
        os.replace(tmp, self.markers / self.MANIFEST)

    def discard(self) -> None:
        """``--fresh``: delete what the demo created (and its step markers), nothing else."""
        for name in list(self.created):
            path = self.out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
            log.info("--fresh: removed %s", path)
        if self.markers.is_dir():
            shutil.rmtree(self.markers)
        self.created = []

    def run(self, name: str, settings: dict, action, *outputs: Path) -> None:
        marker = self.markers / f"{name}.json"
        wanted = json.dumps(settings, sort_keys=True, default=str)
        if marker.is_file() and marker.read_text() == wanted and all(p.exists() for p in outputs):
            log.info("[%s] done earlier, reusing %s", name, ", ".join(str(p) for p in outputs))
            return
        for path in outputs:
            self.claim(path)
        for path in outputs:  # a changed or unfinished step starts clean (only the demo's own outputs)
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        marker.unlink(missing_ok=True)
        log.info("[%s] running", name)
        start = time.monotonic()
        action()
        self.timings[name] = time.monotonic() - start
        marker.write_text(wanted)


def _questions(data_dir: Path | None, count: int):
    """NQ questions from the NanoKnow data when it resolves, else embedded questions about
    invented facts (which no model can answer closed-book)."""
    from projection.data.data_root import resolve_data_dir
    from nanoknow.demo.invented_facts import invented_questions
    from nanoknow.demo.sample_corpus import load_data_dir_questions

    try:
        root = resolve_data_dir(data_dir)
    except NanoKnowInputError:
        if data_dir:
            raise
        log.info("NanoKnow data not found: using %d embedded questions about invented facts", count)
        return "invented", invented_questions(count)
    return str(root), load_data_dir_questions(root, DATASET, "fineweb-edu", count, seed=0)


def _lm_eval(model: str, model_args: str, tasks: list[str], out: Path, limit: int | None,
             metadata: dict, extra: list[str]) -> None:
    command = [sys.executable, "-m", "lm_eval", "--model", model, "--model_args", model_args,
               "--tasks", ",".join(tasks), "--device", "cpu", "--batch_size", "8",
               "--apply_chat_template", "--log_samples", "--output_path", str(out),
               "--metadata", json.dumps(metadata), *extra]
    if limit:
        command += ["--limit", str(limit)]
    log.info("%s", " ".join(command))
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run(command, env=env)
    if result.returncode != 0:
        raise NanoKnowInputError(f"lm_eval exited {result.returncode} for --model {model}")


def run_demo(out: Path, *, limit: int | None = 20, questions: int = 60, model_args: str | None = None,
             data_dir: Path | None = None, fresh: bool = False, max_gen_toks: int = 32) -> Path:
    """Run every step into ``out``; returns the report folder."""
    from nanochat_adapter.tiny_checkpoints import write_tiny_checkpoint
    from nanoknow.report.write_report import write_report
    from projection.datasets.build import BuildSettings, build
    from nanoknow_common.bundled_model import smollm2_model_args
    from projection.index.build_index import build_corpus_index
    from nanoknow.demo.sample_corpus import make_sample_corpus

    out = Path(out)
    steps = Steps(out)
    steps.check_owned()  # before anything is written or deleted
    if fresh:
        steps.discard()
    corpus, index, data, built = out / "corpus", out / "index", out / "data", out / "build"
    results, report = out / "results", out / "report"
    source, sample_questions = _questions(data_dir, questions)

    steps.run("corpus", {"source": source, "questions": questions},
              lambda: make_sample_corpus(corpus, sample_questions, shards=2, filler_docs=2000, seed=0), corpus)
    steps.run("index", {"corpus": "corpus"}, lambda: build_corpus_index(corpus, index, threads=2), index)

    def project_step() -> None:
        from projection.pipeline import ProjectSettings, project

        project(ProjectSettings(dataset=DATASET, questions=corpus / "questions.jsonl", index=index,
                                corpus=str(corpus), corpus_name=CORPUS_DIR, out=data, verifier="hf",
                                judge_mode="choose", window_words=80, dtype="bfloat16", threads=2, resume=True))

    steps.run("project", {"verifier": "hf-smollm2-choose", "window_words": 80}, project_step, data)
    settings = BuildSettings(dataset=DATASET, corpus_dir=CORPUS_DIR, corpus=str(corpus), index=str(index))
    steps.run("build", {"settings": settings.__dict__}, lambda: build(data, settings, built), built)

    metadata = {"dataset_dir": str(built), "corpus": CORPUS_DIR}
    extra = ["--gen_kwargs", f"max_gen_toks={max_gen_toks}"]
    tasks = demo_tasks()
    tiny = out / "models" / "nanochat-tiny"
    nanochat_args = model_args or f"pretrained={tiny}"
    if model_args is None:
        steps.run("tiny-nanochat", {"seed": 0}, lambda: write_tiny_checkpoint(tiny, seed=0), tiny)
    eval_settings = {"tasks": tasks, "limit": limit, "max_gen_toks": max_gen_toks}
    steps.run("eval-smollm2", eval_settings,
              lambda: _lm_eval("hf", smollm2_model_args(), tasks, results / "smollm2", limit, metadata, extra),
              results / "smollm2")
    steps.run("eval-nanochat", {**eval_settings, "model_args": nanochat_args},
              lambda: _lm_eval("nanochat", nanochat_args, tasks, results / "nanochat", limit, metadata, extra),
              results / "nanochat")

    log.info("[report] writing %s", report)  # cheap: always rewritten from the results
    steps.claim(report)
    write_report([results / "smollm2", results / "nanochat"], report)
    for name, seconds in steps.timings.items():
        log.info("step %-14s %6.1f s", name, seconds)
    return report
