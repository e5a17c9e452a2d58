"""Dataset loaders that lm-eval calls through ``custom_dataset`` in the task YAML files.

lm-eval calls them with the task's ``dataset_kwargs`` plus its metadata (task ``metadata``,
``--metadata`` JSON and ``--model_args``), so every loader takes ``**metadata`` for the rest.
Options a user may pass with ``--metadata``:

* ``data_dir``: the NanoKnow question/answer/qrels root (else ``$NANOKNOW_DATA_DIR``, else
  the ``nanoknow data fetch`` cache);
* ``dataset_dir``: a ``nanoknow build`` (or ``nanoknow publish``) folder, else
  ``$NANOKNOW_DATASET_DIR``; or ``dataset_repo``: a Hub dataset id with the published splits;
* ``corpus``: the corpus folder, ``fineweb-edu`` by default (``climbmix`` for its topics);
* ``distractors``: ``hard`` (default: the build's ``distractors``, BM25 hard negatives when it
  was built with an index) or ``random`` (its ``random_distractors``), for the distractor grid;
* ``judge_*``: the LLM judge (:mod:`nanoknow_tasks.judge.metric`); its credentials come only
  from the environment: a key-like setting (``judge_api_key``, ``*token*``...) is refused.
* the exposure tasks (``..._seen_...``, ``..._unseen_...``): the evaluated checkpoint's exposure,
  ``shards_seen``, ``tokens_read`` or ``exposure_from`` (see :mod:`nanoknow_tasks.exposure_filter`).

Every row carries ``qrels_shards`` (the shard of each qrels document), so logged samples hold
what an exposure analysis of any checkpoint needs.

Closed-book tasks read the built dataset when one is given (so a Hub copy suffices) and the
NanoKnow files otherwise; the context tasks need a built dataset. When a judge is configured,
the first loader of the process checks that it answers, before lm-eval generates anything.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import datasets

from projection.datasets import built_layout
from projection.data.data_root import resolve_data_dir
from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.names import check_plain_name
from projection.data import layout
from projection.data.files import load_questions, read_qrels
from nanoknow_tasks.contexts import DEFAULT_DISTRACTORS, DISTRACTOR_FIELDS, compose_context, in_grid
from nanoknow_tasks.exposure_filter import select_exposed, shards_of
from nanoknow_tasks.task_specs import MAX_DISTRACTORS

log = logging.getLogger(__name__)

DEFAULT_CORPUS = "fineweb-edu"
QUESTION_COLUMNS = ("qid", "question", "answers", "answer_frequency", "split", "qrels_shards")
#: kept when the rows have them: whole-corpus answer documents (``nanoknow build --counts``)
OPTIONAL_COLUMNS = ("corpus_answer_docs",)


def _columns(rows: datasets.Dataset, *extra: str) -> list[str]:
    return [*QUESTION_COLUMNS, *(c for c in OPTIONAL_COLUMNS if c in rows.column_names), *extra]


def _with_answer_counts(rows: datasets.Dataset, dataset: str, metadata: dict) -> datasets.Dataset:
    """``--metadata '{"answer_counts": "<nanoknow count output>"}'`` adds ``corpus_answer_docs``."""
    if not metadata.get("answer_counts"):
        return rows
    from projection.count import read_counts

    counts = read_counts(str(metadata["answer_counts"]), dataset)
    values = [{"substring": counts[q].substring, "token": counts[q].token} if q in counts else None
              for q in rows["qid"]]
    if "corpus_answer_docs" in rows.column_names:
        rows = rows.remove_columns("corpus_answer_docs")
    return rows.add_column("corpus_answer_docs", values)


def _built_source(metadata: dict) -> tuple[str, str] | None:
    """``("dir", path)`` or ``("repo", id)`` of a built dataset, if the user gave one."""
    if metadata.get("dataset_dir"):
        return "dir", str(metadata["dataset_dir"])
    if metadata.get("dataset_repo"):
        return "repo", str(metadata["dataset_repo"])
    if os.environ.get(built_layout.DATASET_DIR_ENV):
        return "dir", os.environ[built_layout.DATASET_DIR_ENV]
    return None


def _read_built(source: tuple[str, str], dataset: str, corpus_dir: str, split: str) -> datasets.Dataset:
    kind, where = source
    name = built_layout.config_name(dataset, corpus_dir)
    if kind == "dir" and built_layout.split_path(where, dataset, corpus_dir, split).is_file():
        return datasets.Dataset(built_layout.read_split(where, dataset, corpus_dir, split))
    builds = built_layout.discover_builds(where) if kind == "dir" and Path(where).is_dir() else []
    if builds:  # a build folder, but not of this dataset/corpus
        raise NanoKnowInputError(f"no built {dataset}/{corpus_dir} {split} split in {where}: "
                                 + _what_it_holds(builds, dataset, corpus_dir), field="dataset_dir")
    try:  # a published folder or a Hub repository: one config per dataset/corpus
        return datasets.load_dataset(where, name, split=split)
    except (FileNotFoundError, ValueError, datasets.exceptions.DatasetNotFoundError) as err:
        raise NanoKnowInputError(
            f"no built split {split!r} of {name} in {where} ({err.__class__.__name__}); "
            f"build it with `nanoknow build --dataset {dataset} --corpus-dir {corpus_dir} --out DIR`",
            field="dataset_dir" if kind == "dir" else "dataset_repo") from err


def _what_it_holds(builds: list[tuple[str, str]], dataset: str, corpus_dir: str) -> str:
    """``it holds nq/sample; pass --metadata '{"corpus": "sample"}'`` (or the build command)."""
    held = ", ".join(f"{d}/{c}" for d, c in builds)
    corpora = [c for d, c in builds if d == dataset]
    if corpora:
        hint = f"pass --metadata '{json.dumps({'corpus': corpora[0]})}'"
        if corpus_dir != DEFAULT_CORPUS:
            hint += " (or build this corpus)"
    else:
        hint = f"build it with `nanoknow build --dataset {dataset} --corpus-dir {corpus_dir} --out DIR`"
    return f"it holds {held}; {hint}"


def _test_split(rows: datasets.Dataset) -> datasets.DatasetDict:
    return datasets.DatasetDict({"test": rows})


def _configure_judge(metadata: dict) -> None:
    """Set the judge from the metadata (refusing credentials there) and check that it answers."""
    from nanoknow_tasks.judge import metric as judge

    judge.ensure_judge_answers(judge.configure_from_metadata(metadata))


_warned_random: set[tuple] = set()


def _distractor_kind(metadata: dict) -> str:
    kind = str(metadata.get("distractors") or DEFAULT_DISTRACTORS).strip().lower()
    if kind not in DISTRACTOR_FIELDS:
        raise NanoKnowInputError(f"must be one of {', '.join(DISTRACTOR_FIELDS)}, got {metadata['distractors']!r}",
                                 field="distractors")
    return kind


def _distractor_source(source: tuple[str, str], dataset: str, corpus_dir: str, rows: datasets.Dataset) -> str:
    """``bm25`` or ``random``: what the build's ``distractors`` column holds."""
    kind, where = source
    if kind == "dir":
        recorded = built_layout.read_info(where, dataset, corpus_dir).get("distractor_source")
        if recorded:
            return recorded
    # A published copy has no build_info.json beside it; a build without an index stores
    # the same random documents in both columns.
    table = rows.data
    return "random" if table.column("distractors").equals(table.column("random_distractors")) else "bm25"


def _grid_rows(rows: datasets.Dataset, source: tuple[str, str], dataset: str, corpus_dir: str,
               metadata: dict) -> tuple[datasets.Dataset, str]:
    """The distractor grid's rows (an oracle and MAX_DISTRACTORS distractors of the kind asked
    for): the same questions for every k and position. Returns them and the kind."""
    if "random_distractors" not in rows.column_names or "grid_passage" not in rows.features["oracle"]:
        raise NanoKnowInputError(f"the built {dataset}/{corpus_dir} predates the distractor grid's passages "
                                 "(oracle.grid_passage, random_distractors): rebuild it with `nanoknow build`",
                                 field="dataset_dir")
    kind = _distractor_kind(metadata)
    if kind == "hard" and (source, dataset, corpus_dir) not in _warned_random \
            and _distractor_source(source, dataset, corpus_dir, rows) == "random":
        _warned_random.add((source, dataset, corpus_dir))
        log.warning("%s/%s was built without an index: its distractors are random documents, not BM25 hard "
                    "negatives (build with --index for those; --metadata '{\"distractors\": \"random\"}' "
                    "says so explicitly)", dataset, corpus_dir)
    keep = [i for i, row in enumerate(rows) if in_grid(row, kind)]
    if not keep:
        raise NanoKnowInputError(f"no supported question of {dataset}/{corpus_dir} has an oracle and "
                                 f"{MAX_DISTRACTORS} {kind} distractors, which the distractor grid needs "
                                 f"(build with --distractors {MAX_DISTRACTORS} or more)", field="distractors")
    if len(keep) < len(rows):
        log.info("distractor grid %s/%s: %d of %d supported questions (the others lack an oracle or %d %s "
                 "distractors; build_info.json counts them)", dataset, corpus_dir, len(keep), len(rows),
                 MAX_DISTRACTORS, kind)
    return rows.select(keep), kind


def _question_rows(root, dataset: str, corpus_dir: str, split: str) -> datasets.Dataset:
    """Closed-book rows from the NanoKnow files, with the shards of each question's qrels documents."""
    questions = load_questions(root, dataset, corpus_dir, split)
    qrels_file = layout.qrels_path(root, dataset, corpus_dir)
    qrels = read_qrels(qrels_file) if split == "supported" and qrels_file.is_file() else {}
    rows = [{"qid": q.qid, "question": q.question, "answers": list(q.answers),
             "answer_frequency": q.answer_frequency, "split": q.split,
             "qrels_shards": shards_of(qrels.get(q.qid, []))} for q in questions]
    features = datasets.Features({
        "qid": datasets.Value("string"), "question": datasets.Value("string"),
        "answers": datasets.Sequence(datasets.Value("string")),
        "answer_frequency": datasets.Value("int32"), "split": datasets.Value("string"),
        "qrels_shards": datasets.Sequence(datasets.Value("int32")),
    })
    return datasets.Dataset.from_list(rows, features=features)


def _with_qrels_shards(rows: datasets.Dataset, dataset: str, corpus_dir: str, metadata: dict) -> datasets.Dataset:
    """A built split made before ``qrels_shards`` existed gets it from the NanoKnow qrels when they resolve."""
    if "qrels_shards" in rows.column_names:
        return rows
    try:
        root = resolve_data_dir(metadata.get("data_dir"))
        qrels = read_qrels(layout.qrels_path(root, dataset, corpus_dir))
    except NanoKnowInputError:
        return rows.add_column("qrels_shards", [None] * len(rows))
    return rows.add_column("qrels_shards", [shards_of(qrels.get(qid, [])) for qid in rows["qid"]])


def _exposure_subset(rows: datasets.Dataset, exposure: str | None, metadata: dict, *, dataset: str,
                     corpus_dir: str, task: str) -> datasets.Dataset:
    if exposure is None:
        return rows
    return select_exposed(rows, exposure, metadata, corpus_dir=corpus_dir, task=task)


def load_question_split(nanoknow_dataset: str, nanoknow_split: str, nanoknow_exposure: str | None = None,
                        **metadata) -> datasets.DatasetDict:
    """Closed-book rows (qid, question, answers, answer_frequency, split, qrels_shards) as lm-eval's
    ``test``; ``nanoknow_exposure`` (seen/unseen) keeps that subset of the supported split."""
    _configure_judge(metadata)
    corpus_dir = check_plain_name(metadata.get("corpus") or DEFAULT_CORPUS, field="corpus")
    task = f"nanoknow_{nanoknow_dataset}_{nanoknow_exposure or nanoknow_split}_closedbook"
    source = _built_source(metadata) if not metadata.get("data_dir") else None
    if source is not None:
        rows = _read_built(source, nanoknow_dataset, corpus_dir, nanoknow_split)
        rows = _with_qrels_shards(rows, nanoknow_dataset, corpus_dir, metadata)
        rows = rows.select_columns(_columns(rows))
    else:
        rows = _question_rows(resolve_data_dir(metadata.get("data_dir")), nanoknow_dataset, corpus_dir,
                              nanoknow_split)
    rows = _with_answer_counts(rows, nanoknow_dataset, metadata)
    return _test_split(_exposure_subset(rows, nanoknow_exposure, metadata, dataset=nanoknow_dataset,
                                        corpus_dir=corpus_dir, task=task))


def load_context_split(nanoknow_dataset: str, nanoknow_split: str, nanoknow_context: str,
                       nanoknow_k: int | None = None, nanoknow_position: str | None = None,
                       nanoknow_exposure: str | None = None, **metadata) -> datasets.DatasetDict:
    """Rows with a ``context`` column composed from the built dataset's passages.

    ``nanoknow_context`` is ``oracle`` (the oracle passage), ``original`` (SQuAD's paragraph)
    or ``distractors`` (the oracle's grid passage among the first ``nanoknow_k`` distractors, at
    ``nanoknow_position``; alone for k = 0). Rows lacking what the context needs are skipped
    and counted; the distractor grid keeps the same rows for every k and position.
    ``nanoknow_exposure`` (seen/unseen) keeps that subset of the supported split.
    """
    _configure_judge(metadata)
    corpus_dir = check_plain_name(metadata.get("corpus") or DEFAULT_CORPUS, field="corpus")
    source = _built_source(metadata)
    if source is None:
        raise NanoKnowInputError(
            "this task needs a built NanoKnow dataset: run `nanoknow build ... --out DIR` and pass "
            "--metadata '{\"dataset_dir\": \"DIR\"}' (or set $NANOKNOW_DATASET_DIR), or pass "
            "--metadata '{\"dataset_repo\": \"ORG/NAME\"}' for a published copy", field="dataset_dir")
    rows = _read_built(source, nanoknow_dataset, corpus_dir, nanoknow_split)
    rows = _with_qrels_shards(rows, nanoknow_dataset, corpus_dir, metadata)
    rows = _with_answer_counts(rows, nanoknow_dataset, metadata)
    if nanoknow_exposure is not None:
        task = f"nanoknow_{nanoknow_dataset}_{nanoknow_exposure}_{nanoknow_context}"
        rows = _exposure_subset(rows, nanoknow_exposure, metadata, dataset=nanoknow_dataset,
                                corpus_dir=corpus_dir, task=task)
    kind = DEFAULT_DISTRACTORS
    if nanoknow_context == "distractors":
        rows, kind = _grid_rows(rows, source, nanoknow_dataset, corpus_dir, metadata)
    contexts = [compose_context(row, nanoknow_context, k=nanoknow_k, position=nanoknow_position, distractors=kind)
                for row in rows]
    keep = [i for i, context in enumerate(contexts) if context is not None]
    if len(keep) < len(contexts):
        log.warning("%s %s/%s: %d of %d rows lack the %s context and are skipped", nanoknow_context,
                    nanoknow_dataset, nanoknow_split, len(contexts) - len(keep), len(contexts), nanoknow_context)
    rows = rows.select(keep).add_column("context", [contexts[i] for i in keep])
    extra = [c for c in ("exposure_status", "frequency_read") if c in rows.column_names]
    return _test_split(rows.select_columns(_columns(rows, *extra, "context")))
