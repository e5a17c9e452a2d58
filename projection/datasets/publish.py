"""``nanoknow publish``: turn a build folder into a Hugging Face Hub dataset (and upload it).

Writes, for every ``<dataset>/<corpus_dir>`` built by ``nanoknow build``, one config
``<dataset>-<corpus slug>`` (e.g. ``nq-fineweb``) with the splits ``supported`` and
``unsupported`` as ``<config>/<split>-00000-of-00001.parquet``, plus a ``README.md`` dataset
card: YAML front matter (``configs`` with their data files, ``dataset_info`` with features
and split sizes, ``license``) and a body with provenance (corpus, pipeline version, upstream
data commit, counts, build settings), licences and the NanoKnow citation.
``datasets.load_dataset(<folder or repo>, <config>)`` loads every config and split.

With ``--repo-id`` (and a token: ``--token``, ``$HF_TOKEN`` or a ``huggingface-cli login``)
the folder is uploaded with ``huggingface_hub`` (``create_repo`` + ``upload_folder``).

Nothing that publish did not write is ever deleted or uploaded: ``--out/.nanoknow-publish``
lists the files it wrote (``--overwrite`` removes those and only those; a ``.git/`` or a
user's file survives); ``--out`` and ``--build-dir`` may not contain each other. Every split
is read and checked and the whole folder is written in a scratch sibling of ``--out`` first,
then moved in; a bad input leaves ``--out`` as it was.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from pathlib import Path


from projection.data import layout
from projection.datasets import built_layout
from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.file_io import naming_path, read_json
from nanoknow_common.scratch import ScratchDir

log = logging.getLogger(__name__)

SHARD = "{split}-00000-of-00001.parquet"
MARKER = ".nanoknow-publish"

#: Licences of the question sets and corpora the rows come from (Hub licence identifiers).
SOURCE_LICENSES = {"nq": "cc-by-sa-3.0", "squad": "cc-by-sa-4.0", "hotpotqa": "cc-by-sa-4.0",
                   "fineweb-edu": "odc-by"}
SOURCE_NAMES = {"nq": "Natural Questions", "squad": "SQuAD 1.1", "hotpotqa": "HotpotQA",
                "fineweb-edu": "FineWeb-Edu (karpathy/fineweb-edu-100b-shuffle)"}

CITATION = """@inproceedings{gu2026nanoknow,
  title     = {NanoKnow: How to Know What Your Language Model Knows},
  author    = {Gu, Lingwei and Jedidi, Nour and Lin, Jimmy},
  booktitle = {Proceedings of the 49th International ACM SIGIR Conference on Research and Development in Information Retrieval (SIGIR '26)},
  year      = {2026},
  note      = {arXiv:2602.20122}
}"""

FIELDS = """| field | meaning |
|---|---|
| `qid` | question id of the source dataset |
| `question` | the question |
| `answers` | gold answers |
| `answer_frequency` | number of corpus documents in the NanoKnow qrels (0 for unsupported questions) |
| `split` | `supported` or `unsupported` |
| `oracle` | supported rows: first qrels document containing a gold answer (`doc_id`), the passage around the match (200 words by default), the matched `answer`, its offset in the document and in the passage, and the shorter `grid_passage` (100 words by default) around the same match with its offset; null when none |
| `distractors` | documents containing no gold answer (`doc_id`, and `passage`: their first 100 words by default): BM25 hard negatives, best first (random documents for a build without an index) |
| `random_distractors` | documents containing no gold answer drawn at random (seeded), same form |
| `original_context` | SQuAD's own paragraph (SQuAD only) |"""




SCRATCH_PREFIX = ".nanoknow-publish-tmp-"


def _check_paths(build_dir: Path, out: Path) -> None:
    """``--build-dir`` must be a folder, ``--out`` not a file, and neither may contain the other."""
    if not build_dir.is_dir():
        raise NanoKnowInputError("does not exist" if not build_dir.exists() else "is not a folder",
                                 field="--build-dir", file=build_dir)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise NanoKnowInputError("exists and is not a folder", field="--out", file=out)
    built, target = build_dir.resolve(), out.resolve()
    if built == target or built in target.parents or target in built.parents:
        raise NanoKnowInputError(f"and --build-dir {build_dir} must not contain each other (or be the same folder)",
                                 field="--out", file=out)


def _previous_files(out: Path, overwrite: bool) -> list[str] | None:
    """Files an earlier publish wrote into ``out``: None when ``out`` is absent, [] when empty."""
    if not out.exists():
        return None
    if not any(out.iterdir()):
        return []
    marker = out / MARKER
    if not marker.is_file():
        raise NanoKnowInputError("exists and is not an earlier `nanoknow publish` folder; choose an empty one",
                                 field="--out", file=out)
    if not overwrite:
        raise NanoKnowInputError("holds an earlier publish; pass --overwrite to replace it", field="--out", file=out)
    record = read_json(marker, what="the list of files an earlier publish wrote", field="--out")
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, str) and _is_relative_file(f) for f in files):
        raise NanoKnowInputError("does not list the files an earlier publish wrote (written by an older "
                                 "version?): remove that publish yourself", field="--out", file=marker)
    return files


def _is_relative_file(name: str) -> bool:
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts and name != MARKER


def _write_marker(out: Path, files: list[str]) -> None:
    tmp = out / f"{MARKER}.tmp"
    with naming_path(tmp):
        tmp.write_text(json.dumps({"written_by": "nanoknow publish", "files": sorted(files)}, indent=1) + "\n",
                       encoding="utf-8")
    os.replace(tmp, out / MARKER)


def _move_in(staged: Path, out: Path, files: list[str], previous: list[str] | None) -> None:
    """Put the staged folder's ``files`` at ``out``: a rename of the whole folder when ``out``
    is absent; otherwise file by file (an earlier publish's files are replaced), every other
    file in ``out`` is left alone."""
    if previous is None:
        os.replace(staged, out)
        return
    foreign = [f for f in files if f not in previous and ((out / f).exists() or (out / f).is_symlink())]
    if foreign:
        raise NanoKnowInputError("holds a file the earlier publish did not write where this one writes; move it "
                                 "away", field="--out", file=out / foreign[0])
    _write_marker(out, sorted(set(previous) | set(files)))  # an interruption below leaves every file listed
    for name in previous:
        if name not in files:
            (out / name).unlink(missing_ok=True)
            folder = (out / name).parent
            if folder != out and folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    for name in files:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged / name, out / name)
    _write_marker(out, files)


def _read_split(build_dir: Path, dataset: str, corpus_dir: str, split: str):
    path = built_layout.split_path(build_dir, dataset, corpus_dir, split)
    if not path.is_file():
        raise NanoKnowInputError(f"split {split!r} missing (run `nanoknow build`)", field="--build-dir", file=path)
    table = built_layout.read_split(build_dir, dataset, corpus_dir, split)
    missing = [f.name for f in built_layout.SCHEMA if f.name not in table.column_names]
    if missing:
        raise NanoKnowInputError(f"not a NanoKnow built split: missing column(s) {', '.join(missing)}", file=path)
    try:
        return table.select(built_layout.SCHEMA.names).cast(built_layout.SCHEMA)
    except (ValueError, TypeError) as err:  # pyarrow raises ArrowInvalid/ArrowNotImplementedError
        raise NanoKnowInputError(f"columns do not match the NanoKnow schema: {err}", file=path) from err


def write_hub_folder(build_dir: Path, out: Path, *, licenses: list[str] | None = None,
                     repo_id: str | None = None, overwrite: bool = False) -> list[dict]:
    """Write every built config of ``build_dir`` to ``out`` in the Hub layout, with README.md.

    Returns one record per config: ``{config, dataset, corpus_dir, splits: {split: {path,
    num_examples, num_bytes}}, info}``. Raises :class:`NanoKnowInputError` on a bad build folder
    or ``--out`` (before ``out`` is changed).
    """
    build_dir, out = Path(build_dir), Path(out)
    _check_paths(build_dir, out)
    builds = built_layout.discover_builds(build_dir)
    if not builds:
        raise NanoKnowInputError("no built dataset (<dataset>/<corpus_dir>/supported.parquet) found; "
                                 "run `nanoknow build` first", field="--build-dir", file=build_dir)
    previous = _previous_files(out, overwrite)
    configs = []
    with ScratchDir(out.parent, SCRATCH_PREFIX) as scratch:
        staged = scratch / "out"
        for dataset, corpus_dir in builds:
            config = built_layout.config_name(dataset, corpus_dir)
            record = {"config": config, "dataset": dataset, "corpus_dir": corpus_dir, "splits": {},
                      "info": built_layout.read_info(build_dir, dataset, corpus_dir)}
            for split in layout.SPLITS:
                table = _read_split(build_dir, dataset, corpus_dir, split)
                relative = f"{config}/{SHARD.format(split=split)}"
                built_layout.write_split(table, staged / relative)
                record["splits"][split] = {"path": relative, "num_examples": table.num_rows,
                                           "num_bytes": int(table.nbytes)}
            configs.append(record)
            log.info("%s: %s", config, ", ".join(f"{s} {v['num_examples']}" for s, v in record["splits"].items()))
        with naming_path(staged / "README.md"):
            (staged / "README.md").write_text(dataset_card(configs, licenses=licenses, repo_id=repo_id),
                                              encoding="utf-8")
        files = written_files(configs)
        _write_marker(staged, files)
        _move_in(staged, out, files, previous)
    return configs


def written_files(configs: list[dict]) -> list[str]:
    """The files publish writes for ``configs`` (relative to ``--out``), besides its marker."""
    return sorted(["README.md"] + [v["path"] for c in configs for v in c["splits"].values()])


def _licenses(configs: list[dict]) -> list[str]:
    found = []
    for c in configs:
        for source in (c["dataset"], c["corpus_dir"]):
            found.append(SOURCE_LICENSES.get(source, "other"))
    return sorted(set(found))


def dataset_card(configs: list[dict], *, licenses: list[str] | None = None, repo_id: str | None = None) -> str:
    """README.md of the published dataset: YAML front matter and a body with provenance."""
    from importlib.metadata import version

    import datasets
    from huggingface_hub import DatasetCard, DatasetCardData

    from projection.data.manifest import load_manifest

    commit = load_manifest().commit
    features = datasets.Features.from_arrow_schema(built_layout.SCHEMA)._to_yaml_list()
    licenses = licenses or _licenses(configs)
    card_data = DatasetCardData(
        license=licenses[0] if len(licenses) == 1 else licenses,
        language=["en"],
        pretty_name="NanoKnow",
        task_categories=["question-answering"],
        tags=["nanoknow", "knowledge-probing", "pretraining-data"],
        configs=[{"config_name": c["config"],
                  "data_files": [{"split": s, "path": v["path"]} for s, v in c["splits"].items()]}
                 for c in configs],
        dataset_info=[{"config_name": c["config"], "features": copy.deepcopy(features),  # no YAML anchors
                       "splits": [{"name": s, "num_bytes": v["num_bytes"], "num_examples": v["num_examples"]}
                                  for s, v in c["splits"].items()]}
                      for c in configs],
    )
    where = repo_id or "path/to/this/folder"
    rows = "\n".join(
        f"| `{c['config']}` | {SOURCE_NAMES.get(c['dataset'], c['dataset'])} | "
        f"{SOURCE_NAMES.get(c['corpus_dir'], c['corpus_dir'])} | {c['splits']['supported']['num_examples']} | "
        f"{c['splits']['unsupported']['num_examples']} |" for c in configs)
    settings = []
    for c in configs:
        info = c["info"]
        shown = {k: v for k, v in (info.get("settings") or {}).items() if k not in ("data_dir",)}
        extra = {k: v for k, v in (info.get("counts") or {}).items() if k not in layout.SPLITS}
        settings.append(f"- `{c['config']}`: " + (", ".join(f"{k}={v}" for k, v in sorted({**shown, **extra}.items()))
                                                  or "no build_info.json"))
    source_licenses = "\n".join(f"- {SOURCE_NAMES[s]}: `{lic}`" for s, lic in SOURCE_LICENSES.items()
                                if any(s in (c["dataset"], c["corpus_dir"]) for c in configs))
    body = f"""# NanoKnow

Questions of open-domain QA benchmarks split by whether a pre-training corpus contains their
answer (**supported**) or not (**unsupported**), with the oracle passage and distractor
passages from the corpus, as introduced by NanoKnow (Gu, Jedidi and Lin, SIGIR '26).

```python
from datasets import load_dataset
ds = load_dataset("{where}", "{configs[0]['config']}")
```

## Configs and splits

| config | questions | corpus | supported | unsupported |
|---|---|---|---|---|
{rows}

## Fields

{FIELDS}

## Provenance

- Pipeline: `nanoknow` {version('nanoknow')} (`nanoknow build`, then `nanoknow publish`).
- Question/answer/qrels files: the NanoKnow release (github.com/castorini/NanoKnow) at commit `{commit}`.
- Build settings per config:
{chr(10).join(settings)}

## License

Card licence field: {', '.join(f'`{lic}`' for lic in licenses)}. The rows combine material under these licences:
{source_licenses}
- NanoKnow annotations (qrels): Apache-2.0.

## Citation

```bibtex
{CITATION}
```
"""
    return str(DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{body}"))


def resolve_token(token: str | None) -> str:
    """``token``, else ``$HF_TOKEN`` or the cached ``huggingface-cli login``; raises when none."""
    from huggingface_hub import get_token

    token = token or get_token()
    if not token:
        raise NanoKnowInputError("no Hub token: pass --token, set HF_TOKEN or run `huggingface-cli login`",
                                 field="--token")
    return token


def upload(out: Path, repo_id: str, *, token: str, private: bool) -> str:
    """Create the dataset repository ``repo_id`` if needed and upload ``out``; returns the commit URL."""
    from importlib.metadata import version

    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    record = read_json(out / MARKER, what="the list of files publish wrote", field="--out")
    info = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(out),
                             commit_message=f"NanoKnow datasets (nanoknow {version('nanoknow')})",
                             allow_patterns=record["files"],  # only what publish wrote, never a user's file
                             ignore_patterns=[MARKER], delete_patterns=["*.parquet", "**/*.parquet"])
    return getattr(info, "commit_url", str(info))


