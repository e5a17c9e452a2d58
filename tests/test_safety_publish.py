"""Issue 13, built datasets: ``nanoknow publish --overwrite`` removes only its own files and
never a build it would contain (case 3); corrupt parquet, a ``build_info.json`` that is not
JSON and an ``--out`` that is a file give one-line errors and leave ``--out`` as it was; the
lm-eval context loaders name a corrupt file (case 14).

The builds are real ``nanoknow build`` outputs; publish runs in-process through the CLI. The
one upload check replaces ``huggingface_hub.HfApi`` (the Hub is unreachable from here)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from nanoknow.cli import main
from nanoknow_common.errors import NanoKnowInputError
from projection.datasets import built_layout
from projection.datasets.build import BuildSettings, build
from tests.safety_helpers import one_line_error, write_corpus, write_root

PUBLISHED = ["README.md", "nq-sample/supported-00000-of-00001.parquet", "nq-sample/unsupported-00000-of-00001.parquet",
             "squad-sample/supported-00000-of-00001.parquet", "squad-sample/unsupported-00000-of-00001.parquet"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """Two real builds (nq, squad) of the small corpus."""
    base = tmp_path_factory.mktemp("built")
    corpus = write_corpus(base / "corpus")
    for dataset in ("nq", "squad"):
        write_root(base / "data", dataset=dataset)
        build(base / "data", BuildSettings(dataset=dataset, corpus_dir="sample", corpus=str(corpus),
                                           num_distractors=1), base / "build", progress=False)
    return base / "build"


@pytest.fixture
def build_dir(built, tmp_path) -> Path:
    shutil.copytree(built, tmp_path / "build")
    return tmp_path / "build"


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def publish(build_dir, out, *extra) -> int:
    return main(["publish", "--build-dir", str(build_dir), "--out", str(out), *map(str, extra)])


def scratch_left(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".nanoknow-publish-tmp-")]


# -- case 3 ---------------------------------------------------------------------------------
def test_overwrite_removes_only_what_publish_wrote(build_dir, tmp_path, capsys):
    out = tmp_path / "hub"
    assert publish(build_dir, out) == 0
    assert json.loads((out / ".nanoknow-publish").read_text())["files"] == PUBLISHED
    (out / ".git").mkdir()  # the user turns it into a git clone of the Hub repo and adds notes
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / "NOTES.md").write_text("my notes")
    (out / "nq-sample" / "mine.txt").write_text("kept")
    shutil.rmtree(build_dir / "squad")  # squad is no longer built: its config must go
    assert publish(build_dir, out, "--overwrite") == 0
    assert (out / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (out / "NOTES.md").read_text() == "my notes" and (out / "nq-sample" / "mine.txt").read_text() == "kept"
    assert not (out / "squad-sample").exists()
    assert json.loads((out / ".nanoknow-publish").read_text())["files"] == [f for f in PUBLISHED if "squad" not in f]
    assert scratch_left(tmp_path) == []


def test_overwrite_refuses_a_file_it_did_not_write_where_it_would_write(build_dir, tmp_path, capsys):
    out = tmp_path / "hub"
    assert publish(build_dir, out) == 0
    shutil.rmtree(out / "squad-sample")
    (out / ".nanoknow-publish").write_text(json.dumps({"files": [f for f in PUBLISHED if "squad" not in f]}))
    (out / "squad-sample").mkdir()
    (out / "squad-sample" / "supported-00000-of-00001.parquet").write_bytes(b"the user's own file")
    assert publish(build_dir, out, "--overwrite") == 2
    assert "holds a file the earlier publish did not write" in one_line_error(capsys.readouterr().err)
    assert (out / "squad-sample" / "supported-00000-of-00001.parquet").read_bytes() == b"the user's own file"


@pytest.mark.parametrize("where", ["out contains build", "build contains out", "same folder"])
def test_out_and_build_dir_may_not_contain_each_other(build_dir, tmp_path, capsys, where):
    if where == "out contains build":  # an earlier publish in hub/, the build later moved into it
        out = tmp_path / "hub"
        assert publish(build_dir, out) == 0
        capsys.readouterr()
        build_dir = Path(shutil.move(str(build_dir), str(out / "builds")))
    else:
        out = build_dir / "hub" if where == "build contains out" else build_dir
    before = snapshot(build_dir)
    assert publish(build_dir, out, "--overwrite") == 2
    assert "must not contain each other" in one_line_error(capsys.readouterr().err)
    assert snapshot(build_dir) == before


# -- case 14 --------------------------------------------------------------------------------
def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize("earlier", [False, True])
def test_a_corrupt_built_parquet_is_a_one_line_error_and_out_is_untouched(build_dir, tmp_path, capsys, earlier):
    out = tmp_path / "hub"
    if earlier:
        assert publish(build_dir, out) == 0
    before = snapshot(out) if earlier else None
    corrupt = built_layout.split_path(build_dir, "squad", "sample", "unsupported")  # the last one read
    _truncate(corrupt)
    capsys.readouterr()
    assert publish(build_dir, out, "--overwrite") == 2
    line = one_line_error(capsys.readouterr().err)
    assert f"{corrupt}: not a readable parquet file" in line
    assert (snapshot(out) == before) if earlier else not out.exists()
    assert scratch_left(tmp_path) == []


def test_build_info_that_is_not_json_is_a_one_line_error(build_dir, tmp_path, capsys):
    info = built_layout.info_path(build_dir, "nq", "sample")
    info.write_text('{"settings": {"seed": 0},\n  "counts": oops}\n')
    assert publish(build_dir, tmp_path / "hub") == 2
    assert f"{info}:2: build_info.json is not valid JSON" in one_line_error(capsys.readouterr().err)
    info.write_text("[1, 2]\n")
    assert publish(build_dir, tmp_path / "hub") == 2
    assert "must hold a JSON object" in one_line_error(capsys.readouterr().err)
    assert not (tmp_path / "hub").exists()


def test_out_that_is_a_regular_file_is_a_one_line_error(build_dir, tmp_path, capsys):
    out = tmp_path / "hub.txt"
    out.write_text("a file")
    assert publish(build_dir, out, "--overwrite") == 2
    assert "--out: exists and is not a folder" in one_line_error(capsys.readouterr().err)
    assert out.read_text() == "a file"


def test_upload_sends_only_the_files_publish_wrote(build_dir, tmp_path, monkeypatch, capsys):
    import huggingface_hub

    calls = []

    class FakeHfApi:  # the Hub is unreachable from the test machine
        def __init__(self, token=None):
            pass

        def create_repo(self, *args, **kwargs):
            pass

        def upload_folder(self, **kwargs):
            calls.append(kwargs)
            return "https://huggingface.co/datasets/org/x/commit/1"

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeHfApi)
    out = tmp_path / "hub"
    assert publish(build_dir, out) == 0
    (out / "NOTES.md").write_text("private notes")
    assert publish(build_dir, out, "--overwrite", "--repo-id", "org/x", "--token", "t") == 0
    assert calls[0]["allow_patterns"] == PUBLISHED


def test_context_task_loader_names_a_corrupt_built_parquet(build_dir):
    from nanoknow_tasks.loaders import load_context_split

    corrupt = built_layout.split_path(build_dir, "nq", "sample", "supported")
    _truncate(corrupt)
    # the function lm-eval calls through the task YAML's custom_dataset
    with pytest.raises(NanoKnowInputError) as err:
        load_context_split("nq", "supported", "oracle", dataset_dir=str(build_dir), corpus="sample")
    assert err.value.file == str(corrupt) and "not a readable parquet file" in str(err.value)
