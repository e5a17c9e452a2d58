"""``nanoknow publish``: the Hub layout loads with the real ``datasets.load_dataset``; the card
carries configs, features, licences and provenance; the upload is mocked (the Hugging Face
Hub is unreachable from here) and we assert what would be uploaded."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import nanoknow
from nanoknow.cli import main
from projection.datasets import built_layout
from projection.data.manifest import load_manifest


def _row(qid, split, *, oracle=True, context=None):
    return {"qid": qid, "question": f"question {qid}?", "answers": [f"answer {qid}", "alt"],
            "answer_frequency": 3 if split == "supported" else 0, "split": split,
            "oracle": {"doc_id": f"shard_00001_{qid}", "passage": f"... answer {qid} ...", "answer": f"answer {qid}",
                       "answer_offset": 120, "passage_offset": 4, "grid_passage": f". answer {qid} .",
                       "grid_passage_offset": 2} if split == "supported" and oracle else None,
            "distractors": [{"doc_id": "shard_00002_7", "passage": "nothing here"}] if split == "supported" else [],
            "random_distractors": [{"doc_id": "shard_00003_1", "passage": "nor here"}] if split == "supported" else [],
            "original_context": context,
            "qrels_shards": [1, 1, 4] if split == "supported" else [],
            "corpus_answer_docs": {"substring": 9, "token": 7} if split == "supported" else None}


BUILDS = {
    ("nq", "fineweb-edu"): {"supported": [_row("1", "supported"), _row("2", "supported", oracle=False)],
                            "unsupported": [_row("3", "unsupported")]},
    ("squad", "fineweb-edu"): {"supported": [_row("s1", "supported", context="SQuAD paragraph")],
                               "unsupported": [_row("s2", "unsupported", context="p2"),
                                               _row("s3", "unsupported", context="p3")]},
}


@pytest.fixture
def build_dir(tmp_path) -> Path:
    """A build folder as `nanoknow build` writes it (small tables through the shared writer)."""
    root = tmp_path / "build"
    for (dataset, corpus_dir), splits in BUILDS.items():
        for split, rows in splits.items():
            built_layout.write_split(pa.Table.from_pylist(rows, schema=built_layout.SCHEMA),
                                      built_layout.split_path(root, dataset, corpus_dir, split))
    built_layout.info_path(root, "nq", "fineweb-edu").write_text(json.dumps(
        {"settings": {"corpus": "hf://datasets/karpathy/fineweb-edu-100b-shuffle", "seed": 0, "window_words": 200,
                      "data_dir": "/home/someone/private"},
         "counts": {"supported": 2, "unsupported": 1, "supported_without_oracle": 1}}))
    return root


def _front_matter(readme: Path) -> tuple[dict, str]:
    _, front, body = readme.read_text(encoding="utf-8").split("---\n", 2)
    return yaml.safe_load(front), body


def test_publish_writes_a_folder_that_datasets_loads(build_dir, tmp_path, capsys):
    out = tmp_path / "hub"
    assert main(["publish", "--build-dir", str(build_dir), "--out", str(out)]) == 0
    assert "nq-fineweb: supported 2, unsupported 1" in capsys.readouterr().out
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet")) == [
        "nq-fineweb/supported-00000-of-00001.parquet", "nq-fineweb/unsupported-00000-of-00001.parquet",
        "squad-fineweb/supported-00000-of-00001.parquet", "squad-fineweb/unsupported-00000-of-00001.parquet"]
    expected_features = datasets.Features.from_arrow_schema(built_layout.SCHEMA)
    for (dataset, corpus_dir), splits in BUILDS.items():
        config = built_layout.config_name(dataset, corpus_dir)
        loaded = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "hf-cache"))
        assert set(loaded) == set(splits)
        for split, rows in splits.items():
            assert loaded[split].features == expected_features
            assert loaded[split].to_list() == rows


def test_dataset_card_front_matter_and_provenance(build_dir, tmp_path):
    out = tmp_path / "hub"
    assert main(["publish", "--build-dir", str(build_dir), "--out", str(out)]) == 0
    front, body = _front_matter(out / "README.md")
    assert front["configs"] == [
        {"config_name": "nq-fineweb", "data_files": [
            {"split": "supported", "path": "nq-fineweb/supported-00000-of-00001.parquet"},
            {"split": "unsupported", "path": "nq-fineweb/unsupported-00000-of-00001.parquet"}]},
        {"config_name": "squad-fineweb", "data_files": [
            {"split": "supported", "path": "squad-fineweb/supported-00000-of-00001.parquet"},
            {"split": "unsupported", "path": "squad-fineweb/unsupported-00000-of-00001.parquet"}]}]
    info = {c["config_name"]: c for c in front["dataset_info"]}
    assert {s["name"]: s["num_examples"] for s in info["squad-fineweb"]["splits"]} == {"supported": 1, "unsupported": 2}
    assert info["nq-fineweb"]["features"] == datasets.Features.from_arrow_schema(built_layout.SCHEMA)._to_yaml_list()
    assert "&id" not in (out / "README.md").read_text()  # plain YAML, no anchors/aliases
    assert info["squad-fineweb"]["features"] == info["nq-fineweb"]["features"]
    assert front["license"] == ["cc-by-sa-3.0", "cc-by-sa-4.0", "odc-by"]
    assert "| `nq-fineweb` | Natural Questions | FineWeb-Edu (karpathy/fineweb-edu-100b-shuffle) | 2 | 1 |" in body
    assert f"`nanoknow` {nanoknow.__version__}" in body
    assert f"commit `{load_manifest().commit}`" in body
    assert "corpus=hf://datasets/karpathy/fineweb-edu-100b-shuffle" in body and "supported_without_oracle=1" in body
    assert "/home/someone/private" not in body  # local paths stay out of the card
    assert "@inproceedings{gu2026nanoknow" in body and "SIGIR" in body


class FakeHfApi:
    """Stands in for huggingface_hub.HfApi: the Hub cannot be reached from the test machine."""

    calls: list = []
    fail = False

    def __init__(self, token=None):
        self.calls.append(("init", token))

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, **kwargs):
        if self.fail:
            raise ConnectionError("Hub unreachable\nmore")
        files = sorted(str(p.relative_to(kwargs["folder_path"])) for p in Path(kwargs["folder_path"]).rglob("*")
                       if p.is_file() and p.name not in kwargs["ignore_patterns"])
        self.calls.append(("upload_folder", files, kwargs))
        return "https://huggingface.co/datasets/org/nanoknow/commit/abc"


@pytest.fixture
def fake_hub(monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(FakeHfApi, "calls", [])
    monkeypatch.setattr(FakeHfApi, "fail", False)
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeHfApi)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    return FakeHfApi


def test_upload_creates_the_repo_and_uploads_the_folder(build_dir, tmp_path, fake_hub, capsys):
    out = tmp_path / "hub"
    assert main(["publish", "--build-dir", str(build_dir), "--out", str(out), "--repo-id", "org/nanoknow",
                 "--private", "--token", "hf_secret"]) == 0
    (_, token), (_, repo_id, create), (_, files, upload) = fake_hub.calls
    assert token == "hf_secret" and repo_id == "org/nanoknow"
    assert create == {"repo_type": "dataset", "private": True, "exist_ok": True}
    assert upload["repo_id"] == "org/nanoknow" and upload["repo_type"] == "dataset"
    assert Path(upload["folder_path"]) == out
    assert files == ["README.md", "nq-fineweb/supported-00000-of-00001.parquet",
                     "nq-fineweb/unsupported-00000-of-00001.parquet", "squad-fineweb/supported-00000-of-00001.parquet",
                     "squad-fineweb/unsupported-00000-of-00001.parquet"]
    assert nanoknow.__version__ in upload["commit_message"]
    front, _ = _front_matter(out / "README.md")
    assert 'load_dataset("org/nanoknow", "nq-fineweb")' in (out / "README.md").read_text()
    assert "uploaded to https://huggingface.co/datasets/org/nanoknow" in capsys.readouterr().out


def test_upload_failure_keeps_the_folder_and_says_how_to_retry(build_dir, tmp_path, fake_hub, capsys):
    fake_hub.fail = True
    out = tmp_path / "hub"
    assert main(["publish", "--build-dir", str(build_dir), "--out", str(out), "--repo-id", "org/nanoknow",
                 "--token", "t"]) == 1
    printed = capsys.readouterr().out
    assert "upload to org/nanoknow failed (ConnectionError: Hub unreachable)" in printed
    assert f"huggingface-cli upload --repo-type dataset org/nanoknow {out}" in printed
    assert (out / "nq-fineweb" / "supported-00000-of-00001.parquet").is_file()


def test_republish_needs_overwrite_and_replaces_stale_configs(build_dir, tmp_path):
    out = tmp_path / "hub"
    assert main(["publish", "--build-dir", str(build_dir), "--out", str(out)]) == 0
    assert main(["publish", "--build-dir", str(build_dir), "--out", str(out)]) == 2
    for split in ("supported", "unsupported"):
        built_layout.split_path(build_dir, "squad", "fineweb-edu", split).unlink()
    assert main(["publish", "--build-dir", str(build_dir), "--out", str(out), "--overwrite"]) == 0
    assert [p.name for p in out.iterdir() if p.is_dir()] == ["nq-fineweb"]
    assert [c["config_name"] for c in _front_matter(out / "README.md")[0]["configs"]] == ["nq-fineweb"]


@pytest.mark.parametrize("case, words", [
    ("empty build dir", "--build-dir: no built dataset"),
    ("missing build dir", "--build-dir: does not exist"),
    ("foreign out dir", "--out: exists and is not an earlier `nanoknow publish` folder"),
    ("bad repo id", "--repo-id: must be ORG/NAME, got 'nanoknow'"),
    ("no token", "--token: no Hub token"),
    ("missing split", "unsupported.parquet: --build-dir: split 'unsupported' missing"),
    ("bad schema", "supported.parquet: not a NanoKnow built split: missing column(s) answers, answer_frequency"),
])
def test_bad_input_exits_2_with_one_line(case, words, build_dir, tmp_path, fake_hub, capsys):
    out, args = tmp_path / "hub", []
    if case == "empty build dir":
        build_dir = tmp_path / "empty"
        build_dir.mkdir()
    elif case == "missing build dir":
        build_dir = tmp_path / "nowhere"
    elif case == "foreign out dir":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    elif case == "bad repo id":
        args = ["--repo-id", "nanoknow", "--token", "t"]
    elif case == "no token":
        args = ["--repo-id", "org/nanoknow"]
    elif case == "missing split":
        built_layout.split_path(build_dir, "nq", "fineweb-edu", "unsupported").unlink()
    elif case == "bad schema":
        pq.write_table(pa.table({"qid": ["1"], "question": ["q"]}), built_layout.split_path(build_dir, "nq", "fineweb-edu",
                                                                                  "supported"))
    assert main(["publish", "--build-dir", str(build_dir), "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1
    assert not [c for c in fake_hub.calls if c[0] == "upload_folder"]
