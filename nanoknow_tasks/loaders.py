"""Dataset loaders that lm-eval calls through ``custom_dataset`` in the task YAML files.

lm-eval calls them with the task's ``dataset_kwargs`` plus its metadata (task ``metadata``,
``--metadata`` JSON and ``--model_args``), so every loader takes ``**metadata`` for the rest.
Options a user may pass with ``--metadata``:

* ``data_dir``: the NanoKnow question/answer/qrels root (else ``$NANOKNOW_DATA_DIR``, else
  the ``nanoknow data fetch`` cache);
* ``dataset_dir``: a ``nanoknow build`` (or ``nanoknow publish``) folder, else
  ``$NANOKNOW_DATASET_DIR``; or ``dataset_repo``: a Hub dataset id with the published splits;
* ``corpus``: the corpus folder, ``fineweb-edu`` by default (``climbmix`` for its topics);
* the exposure tasks (``..._seen_...``, ``..._unseen_...``): the evaluated checkpoint's exposure,
  ``shards_seen``, ``tokens_read`` or ``exposure_from`` (see :mod:`nanoknow_tasks.exposure_filter`).

Every row carries ``qrels_shards`` (the shard of each qrels document), so logged samples hold
what an exposure analysis of any checkpoint needs.

Closed-book tasks read the built dataset when one is given (so a Hub copy suffices) and the
NanoKnow files otherwise; the context tasks need a built dataset.
"""

from __future__ import annotations

import logging
import os

import datasets

from projection.datasets import built_layout
from projection.data.data_root import resolve_data_dir
from nanoknow_common.errors import NanoKnowInputError
from projection.data import layout
from projection.data.files import load_questions, read_qrels
from nanoknow_tasks.contexts import compose_context
from nanoknow_tasks.exposure_filter import select_exposed, shards_of

log = logging.getLogger(__name__)

DEFAULT_CORPUS = "fineweb-edu"
QUESTION_COLUMNS = ("qid", "question", "answers", "answer_frequency", "split", "qrels_shards")


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
    try:  # a published folder or a Hub repository: one config per dataset/corpus
        return datasets.load_dataset(where, name, split=split)
    except (FileNotFoundError, ValueError, datasets.exceptions.DatasetNotFoundError) as err:
        raise NanoKnowInputError(
            f"no built split {split!r} of {name} in {where} ({err.__class__.__name__}); "
            f"build it with `nanoknow build --dataset {dataset} --corpus-dir {corpus_dir} --out DIR`",
            field="dataset_dir" if kind == "dir" else "dataset_repo") from err


def _test_split(rows: datasets.Dataset) -> datasets.DatasetDict:
    return datasets.DatasetDict({"test": rows})


def _configure_judge(metadata: dict) -> None:
    from nanoknow_tasks.judge import metric as judge

    judge.configure_from_metadata(metadata)


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
    corpus_dir = metadata.get("corpus") or DEFAULT_CORPUS
    task = f"nanoknow_{nanoknow_dataset}_{nanoknow_exposure or nanoknow_split}_closedbook"
    source = _built_source(metadata) if not metadata.get("data_dir") else None
    if source is not None:
        rows = _read_built(source, nanoknow_dataset, corpus_dir, nanoknow_split)
        rows = _with_qrels_shards(rows, nanoknow_dataset, corpus_dir, metadata)
        rows = rows.select_columns(list(QUESTION_COLUMNS))
    else:
        rows = _question_rows(resolve_data_dir(metadata.get("data_dir")), nanoknow_dataset, corpus_dir,
                              nanoknow_split)
    return _test_split(_exposure_subset(rows, nanoknow_exposure, metadata, dataset=nanoknow_dataset,
                                        corpus_dir=corpus_dir, task=task))


def load_context_split(nanoknow_dataset: str, nanoknow_split: str, nanoknow_context: str,
                       nanoknow_k: int | None = None, nanoknow_position: str | None = None,
                       nanoknow_exposure: str | None = None, **metadata) -> datasets.DatasetDict:
    """Rows with a ``context`` column composed from the built dataset's passages.

    ``nanoknow_context`` is ``oracle`` (the oracle passage), ``original`` (SQuAD's paragraph)
    or ``distractors`` (the oracle among the first ``nanoknow_k`` distractors, at
    ``nanoknow_position``). Rows lacking what the context needs are skipped and counted.
    ``nanoknow_exposure`` (seen/unseen) keeps that subset of the supported split.
    """
    _configure_judge(metadata)
    corpus_dir = metadata.get("corpus") or DEFAULT_CORPUS
    source = _built_source(metadata)
    if source is None:
        raise NanoKnowInputError(
            "this task needs a built NanoKnow dataset: run `nanoknow build ... --out DIR` and pass "
            "--metadata '{\"dataset_dir\": \"DIR\"}' (or set $NANOKNOW_DATASET_DIR), or pass "
            "--metadata '{\"dataset_repo\": \"ORG/NAME\"}' for a published copy", field="dataset_dir")
    rows = _read_built(source, nanoknow_dataset, corpus_dir, nanoknow_split)
    rows = _with_qrels_shards(rows, nanoknow_dataset, corpus_dir, metadata)
    if nanoknow_exposure is not None:
        task = f"nanoknow_{nanoknow_dataset}_{nanoknow_exposure}_{nanoknow_context}"
        rows = _exposure_subset(rows, nanoknow_exposure, metadata, dataset=nanoknow_dataset,
                                corpus_dir=corpus_dir, task=task)
    contexts = [compose_context(row, nanoknow_context, k=nanoknow_k, position=nanoknow_position)
                for row in rows]
    keep = [i for i, context in enumerate(contexts) if context is not None]
    if len(keep) < len(contexts):
        log.warning("%s %s/%s: %d of %d rows lack the %s context and are skipped", nanoknow_context,
                    nanoknow_dataset, nanoknow_split, len(contexts) - len(keep), len(contexts), nanoknow_context)
    rows = rows.select(keep).add_column("context", [contexts[i] for i in keep])
    extra = [c for c in ("exposure_status", "frequency_read") if c in rows.column_names]
    return _test_split(rows.select_columns([*QUESTION_COLUMNS, *extra, "context"]))
