"""Where the context tasks find their data: a build folder, $NANOKNOW_DATASET_DIR, a published copy."""

import pytest

from nanoknow_tasks.loaders import load_context_split, load_question_split
from projection.datasets.build import BuildSettings, build
from nanoknow_common.errors import NanoKnowInputError
from projection.datasets.publish import write_hub_folder

from sample_root import CORPUS_DIR, make_embedded_sample, write_sample_root


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    base = tmp_path_factory.mktemp("sources")
    questions, corpus, root = make_embedded_sample(base, filler_docs=300)
    write_sample_root(corpus, root, questions)
    build(root, BuildSettings(dataset="nq", corpus_dir=CORPUS_DIR, corpus=str(corpus)), base / "build", progress=False)
    write_hub_folder(base / "build", base / "hub")
    return base


def _rows(split):
    return [(r["qid"], r["context"]) for r in split["test"]]


def test_build_dir_env_and_published_folder_give_the_same_rows(sources, monkeypatch):
    monkeypatch.delenv("NANOKNOW_DATASET_DIR", raising=False)
    kwargs = dict(nanoknow_dataset="nq", nanoknow_split="supported", nanoknow_context="distractors",
                  nanoknow_k=2, nanoknow_position="middle", corpus=CORPUS_DIR)
    from_dir = load_context_split(**kwargs, dataset_dir=str(sources / "build"))
    # a published folder is what a Hub repository holds: the same code path as a repo id
    from_repo = load_context_split(**kwargs, dataset_repo=str(sources / "hub"))
    monkeypatch.setenv("NANOKNOW_DATASET_DIR", str(sources / "build"))
    from_env = load_context_split(**kwargs)
    assert _rows(from_dir) == _rows(from_repo) == _rows(from_env)
    assert len(_rows(from_dir)) > 10
    closed = load_question_split("nq", "unsupported", corpus=CORPUS_DIR)  # from the env's build
    assert closed["test"].column_names == ["qid", "question", "answers", "answer_frequency", "split", "qrels_shards",
                                           "corpus_answer_docs"]
    assert set(closed["test"]["answer_frequency"]) == {0}


def test_no_built_dataset_is_an_actionable_error(monkeypatch):
    monkeypatch.delenv("NANOKNOW_DATASET_DIR", raising=False)
    with pytest.raises(NanoKnowInputError, match="nanoknow build.*dataset_dir.*NANOKNOW_DATASET_DIR.*dataset_repo"):
        load_context_split("nq", "supported", "oracle", corpus=CORPUS_DIR)


def test_missing_config_names_the_build_command(sources):
    with pytest.raises(NanoKnowInputError, match="nanoknow build --dataset squad"):
        load_context_split("squad", "supported", "oracle", dataset_dir=str(sources / "build"), corpus=CORPUS_DIR)
