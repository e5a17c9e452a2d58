"""Dataset loaders that lm-eval calls through ``custom_dataset`` in the task YAML files.

lm-eval calls them with the task's ``dataset_kwargs`` plus its metadata (task ``metadata``,
``--metadata`` JSON and ``--model_args``), so every loader takes ``**_`` for the rest.
Options a user may pass with ``--metadata``: ``data_dir`` (NanoKnow files) and ``corpus``
(``fineweb-edu`` by default, or ``climbmix``).
"""

from __future__ import annotations

import datasets

from projection.data_root import resolve_data_dir
from projection.nanoknow_files import load_questions

DEFAULT_CORPUS = "fineweb-edu"

QUESTION_FEATURES = datasets.Features({
    "qid": datasets.Value("string"),
    "question": datasets.Value("string"),
    "answers": datasets.Sequence(datasets.Value("string")),
    "answer_frequency": datasets.Value("int32"),
    "split": datasets.Value("string"),
})


def load_question_split(nanoknow_dataset: str, nanoknow_split: str, data_dir: str | None = None,
                        corpus: str | None = None, **_) -> datasets.DatasetDict:
    """One NanoKnow split (questions, answers, answer frequency) as lm-eval's ``test`` split."""
    root = resolve_data_dir(data_dir)
    questions = load_questions(root, nanoknow_dataset, corpus or DEFAULT_CORPUS, nanoknow_split)
    rows = [{"qid": q.qid, "question": q.question, "answers": list(q.answers),
             "answer_frequency": q.answer_frequency, "split": q.split} for q in questions]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows, features=QUESTION_FEATURES)})
