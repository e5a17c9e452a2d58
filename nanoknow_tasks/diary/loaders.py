"""lm-eval datasets of the diary tasks (``custom_dataset`` in ``_diary_base_yaml``).

lm-eval calls :func:`load_diary_split` with the task's ``dataset_kwargs`` plus its
metadata (``--metadata`` JSON, ``--model_args``), hence the ``diary_`` prefixes and ``**_``.
``--metadata`` options: ``diary_dir`` (a ``nanoknow diary make`` folder to read) and
``diary_seed`` (generate in memory from this seed instead of the default one).
"""

from __future__ import annotations

import logging

import datasets

from nanoknow_common.errors import NanoKnowInputError

from projection.diary import schema
from projection.diary.generator import DEFAULT_SEED, SPLITS, check_num_diarists, generate_diary_set
from projection.diary.files import MANIFEST, read_manifest, read_qa_split

log = logging.getLogger(__name__)

QA_FEATURES = datasets.Features({
    "qid": datasets.Value("string"),
    "diarist_id": datasets.Value("int32"),
    "name": datasets.Value("string"),
    "split": datasets.Value("string"),
    "question": datasets.Value("string"),
    "answer": datasets.Value("string"),
    "num_entries": datasets.Value("int32"),
    "entry_lengths": datasets.Sequence(datasets.Value("int32")),
})


def diary_rows(diary_diarists: int, diary_dir: str | None = None,
               diary_seed: int | str | None = None) -> dict[str, list[dict]]:
    """Q/A rows per split: read from ``diary_dir`` or generated in memory from the seed."""
    size = check_num_diarists(diary_diarists, field="diary_diarists")
    seed = None if diary_seed in (None, "") else int(diary_seed)
    if not diary_dir:
        diary = generate_diary_set(size, DEFAULT_SEED if seed is None else seed)
        return {split: [d.qa_row() for d in diary.split(split)] for split in SPLITS}
    manifest = read_manifest(diary_dir)
    where = f"{diary_dir}/{MANIFEST}"
    if manifest["diarists"] != size:
        raise NanoKnowInputError(f"this folder has {manifest['diarists']} diarists but the task "
                                 f"needs {size}; pick the task of that size", file=where, field="diarists")
    if seed is not None and manifest["seed"] != seed:
        raise NanoKnowInputError(f"folder made with seed {manifest['seed']}, but diary_seed={seed} was given",
                                 file=where, field="seed")
    return {split: read_qa_split(diary_dir, split) for split in SPLITS}


def load_diary_split(diary_diarists: int, diary_dir: str | None = None,
                     diary_seed: int | str | None = None, **_) -> datasets.DatasetDict:
    """The diary Q/A splits (train, validation, test) as an lm-eval ``DatasetDict``."""
    rows = diary_rows(diary_diarists, diary_dir, diary_seed)
    log.info("diary tasks: %s questions from %s", {s: len(r) for s, r in rows.items()},
             diary_dir or f"seed {DEFAULT_SEED if diary_seed in (None, '') else diary_seed} (generated in memory)")
    return datasets.DatasetDict({split: datasets.Dataset.from_list(rows[split], features=QA_FEATURES)
                                 for split in SPLITS})


def recall_prompt(doc: dict) -> str:
    """The question followed by a newline: where the answer starts in a training Q/A document."""
    return doc["question"] + schema.QUESTION_ANSWER_SEPARATOR
