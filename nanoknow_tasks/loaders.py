"""Dataset loaders that lm-eval calls through ``custom_dataset`` in the task YAML files.

lm-eval calls them with the task's ``dataset_kwargs`` plus its metadata (task ``metadata``,
``--metadata`` JSON and ``--model_args``), so every loader takes ``**metadata`` for the rest.
Options a user may pass with ``--metadata``:

* ``data_dir``: the NanoKnow question/answer/qrels root (else ``$NANOKNOW_DATA_DIR``, else
  the ``nanoknow data fetch`` cache);
* ``dataset_dir``: a ``nanoknow build`` (or ``nanoknow publish``) folder, else
  ``$NANOKNOW_DATASET_DIR``; or ``dataset_repo``: a Hub dataset id with the published splits;
* ``corpus``: the corpus folder, ``fineweb-edu`` by default (``climbmix`` for its topics).

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
from nanoknow_common.names import check_plain_name
from projection.data.files import load_questions
from nanoknow_tasks.contexts import compose_context

log = logging.getLogger(__name__)

DEFAULT_CORPUS = "fineweb-edu"
QUESTION_COLUMNS = ("qid", "question", "answers", "answer_frequency", "split")


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


def load_question_split(nanoknow_dataset: str, nanoknow_split: str, **metadata) -> datasets.DatasetDict:
    """Closed-book rows (qid, question, answers, answer_frequency, split) as lm-eval's ``test``."""
    _configure_judge(metadata)
    corpus_dir = check_plain_name(metadata.get("corpus") or DEFAULT_CORPUS, field="corpus")
    source = _built_source(metadata) if not metadata.get("data_dir") else None
    if source is not None:
        rows = _read_built(source, nanoknow_dataset, corpus_dir, nanoknow_split)
        return _test_split(rows.select_columns(list(QUESTION_COLUMNS)))
    root = resolve_data_dir(metadata.get("data_dir"))
    questions = load_questions(root, nanoknow_dataset, corpus_dir, nanoknow_split)
    rows = [{"qid": q.qid, "question": q.question, "answers": list(q.answers),
             "answer_frequency": q.answer_frequency, "split": q.split} for q in questions]
    features = datasets.Features({
        "qid": datasets.Value("string"), "question": datasets.Value("string"),
        "answers": datasets.Sequence(datasets.Value("string")),
        "answer_frequency": datasets.Value("int32"), "split": datasets.Value("string"),
    })
    return _test_split(datasets.Dataset.from_list(rows, features=features))


def load_context_split(nanoknow_dataset: str, nanoknow_split: str, nanoknow_context: str,
                       nanoknow_k: int | None = None, nanoknow_position: str | None = None,
                       **metadata) -> datasets.DatasetDict:
    """Rows with a ``context`` column composed from the built dataset's passages.

    ``nanoknow_context`` is ``oracle`` (the oracle passage), ``original`` (SQuAD's paragraph)
    or ``distractors`` (the oracle among the first ``nanoknow_k`` distractors, at
    ``nanoknow_position``). Rows lacking what the context needs are skipped and counted.
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
    contexts = [compose_context(row, nanoknow_context, k=nanoknow_k, position=nanoknow_position)
                for row in rows]
    keep = [i for i, context in enumerate(contexts) if context is not None]
    if len(keep) < len(contexts):
        log.warning("%s %s/%s: %d of %d rows lack the %s context and are skipped", nanoknow_context,
                    nanoknow_dataset, nanoknow_split, len(contexts) - len(keep), len(contexts), nanoknow_context)
    rows = rows.select(keep).add_column("context", [contexts[i] for i in keep])
    return _test_split(rows.select_columns([*QUESTION_COLUMNS, "context"]))
