"""Exposure-aware NanoKnow (issue 12): a checkpoint's exposure from nanochat's own files, per-question
seen/unseen splits, the ``nanoknow exposure`` command, and the released NQ qrels.

Checkpoints are tiny random nanochat checkpoints in nanochat's on-disk layout
(``nanochat_adapter.tiny_checkpoints``) whose ``meta_<step>.json`` is rewritten to the format each generation
of nanochat's ``scripts/base_train.py`` / ``mid_train.py`` / ``chat_sft.py`` / ``chat_rl.py`` writes.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from nanoknow.cli import main as nanoknow_main
from projection.data import layout
from nanoknow_common.errors import NanoKnowInputError
from projection.exposure import (Exposure, question_exposures, records_from_qrels, resolve_exposure, seen_qids,
                                 summarize, unseen_qids)
from projection.data.files import read_qrels, read_topics

# --------------------------------------------------------------------------------------------
# a small NanoKnow data dir: qrels spread over shards 0..9 (shard 9 = validation of a 10-shard download)

QRELS = {  # file order on purpose not shard order (q3)
    "q1": ["shard_00000_5", "shard_00007_1"],
    "q2": ["shard_00003_10"],
    "q3": ["shard_00008_0", "shard_00004_2", "shard_00004_9"],
    "q4": ["shard_00006_1"],
    "q5": ["shard_00009_3"],
}
UNSUPPORTED = ["q6"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("nanoknow-data")
    folder = root / "nq" / "fineweb-edu"
    folder.mkdir(parents=True)
    qids = list(QRELS) + UNSUPPORTED
    layout.answers_path(root, "nq").write_text(
        "".join(json.dumps({"qid": q, "answer": [f"answer {q}"]}) + "\n" for q in qids), encoding="utf-8")
    for split, split_qids in (("supported", list(QRELS)), ("unsupported", UNSUPPORTED)):
        layout.topics_path(root, "nq", "fineweb-edu", split).write_text(
            "".join(f"{q}\twhat is {q}?\n" for q in split_qids), encoding="utf-8")
    layout.qrels_path(root, "nq", "fineweb-edu").write_text(
        "".join(f"{q} Q0 {d} 1\n" for q, docs in QRELS.items() for d in docs), encoding="utf-8")
    return root


def split_of(records) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in records:
        out.setdefault(r.status, set()).add(r.qid)
    return out


# --------------------------------------------------------------------------------------------
# metas in the format of each nanochat generation (fields as nanochat's scripts write them)

def _base_user_config(depth: int, *, total_batch_size=524288, device_batch_size=4, max_seq_len=64) -> dict:
    """base_train.py's settings as saved in ``user_config`` (October 2025 configurator names)."""
    return {"run": "dummy", "depth": depth, "max_seq_len": max_seq_len, "num_iterations": -1, "target_flops": -1.0,
            "target_param_data_ratio": 20, "device_batch_size": device_batch_size,
            "total_batch_size": total_batch_size, "embedding_lr": 0.2, "unembedding_lr": 0.004,
            "weight_decay": 0.0, "matrix_lr": 0.02, "grad_clip": 1.0, "eval_every": 250,
            "eval_tokens": 20 * 524288, "core_metric_every": 2000, "core_metric_max_per_task": 500,
            "sample_every": 2000, "model_tag": ""}


def meta_2025_10(step, model_config, **batch) -> dict:
    """scripts/base_train.py at 3a5e0bc (2025-10-13): no loader position."""
    uc = _base_user_config(model_config["n_layer"], **batch)
    return {"step": step, "val_bpb": 1.1, "model_config": model_config, "user_config": uc,
            "device_batch_size": uc["device_batch_size"], "max_seq_len": uc["max_seq_len"]}


def meta_2025_11(step, model_config, pq_idx, rg_idx) -> dict:
    """c6abcdf (2025-11-13): + dataloader_state_dict {pq_idx, rg_idx} and loop_state."""
    meta = meta_2025_10(step, model_config)
    meta["dataloader_state_dict"] = {"pq_idx": pq_idx, "rg_idx": rg_idx}
    meta["loop_state"] = {"min_val_bpb": 1.0, "smooth_train_loss": 3.0, "total_training_time": 12.5}
    return meta


def meta_2026_01(step, model_config, pq_idx, rg_idx, epoch) -> dict:
    """43c29dd (2026-01-13): argparse names (warmup_ratio, window_pattern), loader state with epoch."""
    meta = meta_2025_11(step, model_config, pq_idx, rg_idx)
    meta["user_config"].update(warmup_ratio=0.0, warmdown_ratio=0.4, window_pattern="SSSL", save_every=-1,
                               resume_from_step=-1, eval_tokens=20 * 524288)
    meta["dataloader_state_dict"]["epoch"] = epoch
    return meta


def meta_2026_03(step, model_config, pq_idx, rg_idx, epoch=1) -> dict:
    """6ed7d1d+ (2026-03-09, ClimbMix era): warmup_steps replaces warmup_ratio, top-level total_batch_size."""
    meta = meta_2026_01(step, model_config, pq_idx, rg_idx, epoch)
    uc = meta["user_config"]
    del uc["warmup_ratio"]
    uc.update(warmup_steps=40, eval_tokens=80 * 524288, total_batch_size=-1)
    meta["total_batch_size"] = 524288
    return meta


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A factory: ``tiny(name, generation, step, meta_fn, *args)`` -> a checkpoint folder with that meta."""
    from nanochat_adapter.tiny_checkpoints import write_tiny_checkpoint

    root = tmp_path_factory.mktemp("checkpoints")

    def make(name: str, generation: str, step: int, meta_fn, *args, parent: Path | None = None, **kwargs) -> Path:
        folder = write_tiny_checkpoint((parent or root) / name, generation=generation, step=step)
        meta_path = folder / f"meta_{step:06d}.json"
        model_config = json.loads(meta_path.read_text())["model_config"]
        meta_path.write_text(json.dumps(meta_fn(step, model_config, *args, **kwargs), indent=2))
        return folder

    make.root = root
    return make


# --------------------------------------------------------------------------------------------
# stated exposure and question splits

def test_stated_shards_split_questions_exactly(data_dir):
    exposure = Exposure.from_stated(shards_seen=5)
    records = {r.qid: r for r in question_exposures(data_dir, "nq", "fineweb-edu", exposure)}
    assert split_of(records.values()) == {"seen": {"q1", "q2", "q3"}, "unseen": {"q4", "q5"}, "unsupported": {"q6"}}
    assert {q: r.frequency_read for q, r in records.items()} == {"q1": 1, "q2": 1, "q3": 2, "q4": 0, "q5": 0, "q6": 0}
    assert {q: r.frequency_in_corpus for q, r in records.items()} == {"q1": 2, "q2": 1, "q3": 3, "q4": 1,
                                                                       "q5": 1, "q6": 0}
    assert (records["q3"].first_shard, records["q3"].first_doc_id) == (4, "shard_00004_2")
    assert records["q6"].first_shard is None
    assert seen_qids(data_dir, "nq", "fineweb-edu", exposure) == {"q1", "q2", "q3"}
    assert unseen_qids(data_dir, "nq", "fineweb-edu", exposure) == {"q4", "q5"}
    summary = summarize(list(records.values()))
    assert summary.counts == {"seen": 3, "uncertain": 0, "unseen": 2, "unsupported": 1}
    assert (summary.supported, summary.share_seen) == (5, 0.6)
    assert (summary.median_frequency_read, summary.median_frequency_in_corpus) == (1, 1)


def test_stated_tokens_give_a_band_and_bad_statements_are_refused():
    # 262,144,000 tokens x 4.8 chars = 1,258,291,200 chars: 4.93 shards of 255M .. 5.03 of 250M, +-1 drift
    exposure = Exposure.from_stated(tokens_read=500 * 524288, chars_per_token=4.8)
    assert (exposure.shards_surely_read, exposure.shards_possibly_read, exposure.shards_nominal) == (3, 7, 6)
    assert exposure.status([2]) == "seen" and exposure.status([3, 9]) == "uncertain" and exposure.status([7]) == "unseen"
    with pytest.raises(NanoKnowInputError, match="shards_seen"):
        Exposure.from_stated(shards_seen=-1)
    with pytest.raises(NanoKnowInputError, match="exceeds the 1823 shards"):
        Exposure.from_stated(shards_seen=1824)
    with pytest.raises(NanoKnowInputError, match="exactly one"):
        Exposure.from_stated(shards_seen=3, tokens_read=10)
    with pytest.raises(NanoKnowInputError, match="no documented chars/token .* climbmix"):
        Exposure.from_stated(tokens_read=10**9, corpus="climbmix")
    with pytest.raises(NanoKnowInputError, match="only for climbmix, fineweb"):
        Exposure.from_stated(tokens_read=10**9, corpus="my-corpus")
    assert Exposure.from_stated(shards_seen=4, corpus="my-corpus").shards_surely_read == 4


def test_exposure_json_round_trip_and_resolution(tmp_path):
    exposure = Exposure.from_stated(tokens_read=500 * 524288, chars_per_token=(4.7, 4.8, 4.9), shards_downloaded=8)
    assert Exposure.from_json(exposure.to_json()) == exposure
    path = exposure.save(tmp_path / "e.json")
    assert resolve_exposure({"exposure_from": str(path)}) == exposure
    assert resolve_exposure({"shards_seen": "216"}).shards_surely_read == 216  # lm-eval may pass strings
    with pytest.raises(NanoKnowInputError, match="shards_seen.*exposure_from"):
        resolve_exposure({})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**exposure.to_dict(), "shards_surely_read": 9, "shards_possibly_read": 4}))
    with pytest.raises(NanoKnowInputError) as err:
        Exposure.load(bad)
    assert (err.value.file, err.value.field) == (str(bad), "shards_surely_read")
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"corpus": "fineweb"}))
    with pytest.raises(NanoKnowInputError, match="shards_surely_read: missing"):
        Exposure.load(missing)


# --------------------------------------------------------------------------------------------
# checkpoints of each generation

def test_loader_state_metas_of_each_generation(tiny, data_dir):
    nov = tiny("nov", "2025-10", 300, meta_2025_11, 5, 3)
    exposure = Exposure.from_checkpoint(nov)
    # rank 0 in shard 5: shards 0..3 surely read (one shard of rank drift), 0..6 possibly
    assert (exposure.shards_surely_read, exposure.shards_possibly_read, exposure.shards_nominal) == (4, 7, 6)
    assert (exposure.method, exposure.corpus, exposure.step) == ("loader_state", "fineweb", 300)
    assert exposure.loader_state == {"pq_idx": 5, "rg_idx": 3, "epoch": 1}
    assert "meta_000300.json" in exposure.source and "pq_idx=5" in exposure.source
    assert exposure.world_size is None  # no optimizer shards saved
    import torch

    for rank in range(4):  # nanochat saves one optimizer shard per rank since c6abcdf
        torch.save({"rank": rank}, nov / f"optim_000300_rank{rank}.pt")
    assert Exposure.from_checkpoint(nov).world_size == 4
    assert resolve_exposure({"exposure_from": str(nov), "exposure_step": "300"}) == Exposure.from_checkpoint(nov)
    records = {r.qid: r for r in question_exposures(data_dir, "nq", "fineweb-edu", exposure)}
    assert split_of(records.values()) == {"seen": {"q1", "q2"}, "uncertain": {"q3", "q4"}, "unseen": {"q5"},
                                          "unsupported": {"q6"}}
    assert (records["q3"].frequency_read, records["q3"].frequency_read_possibly) == (0, 2)

    # January 2026: a second epoch over a 10-shard download read every train shard, not the validation shard 9
    jan = tiny("jan", "2026-01", 900, meta_2026_01, 1, 0, 2)
    full = Exposure.from_checkpoint(jan, shards_downloaded=10)
    assert (full.shards_surely_read, full.shards_possibly_read) == (9, 9)
    assert split_of(question_exposures(data_dir, "nq", "fineweb-edu", full)) == {
        "seen": {"q1", "q2", "q3", "q4"}, "unseen": {"q5"}, "unsupported": {"q6"}}
    unknown = Exposure.from_checkpoint(jan)  # without the download count: at least shards 0..1, at most all
    assert (unknown.shards_surely_read, unknown.shards_possibly_read) == (2, 1822)
    assert any("shards_downloaded" in note for note in unknown.notes)

    # March 2026: the meta dates the run after the switch, so the corpus is inferred as ClimbMix
    mar = tiny("mar", "2026-03-14", 40, meta_2026_03, 2, 8)
    climb = Exposure.from_checkpoint(mar)
    assert (climb.corpus, climb.shards_surely_read, climb.shards_possibly_read) == ("climbmix", 1, 4)
    assert "warmup_steps" in climb.corpus_source
    assert climb.corpus_mismatch("fineweb-edu").startswith("WARNING") and climb.corpus_mismatch("climbmix") is None
    stated = Exposure.from_checkpoint(mar, corpus="fineweb")
    assert stated.corpus == "fineweb" and any("overrides 'climbmix'" in n for n in stated.notes)


def test_token_count_meta_of_october_2025(tiny, data_dir):
    october = tiny("oct", "2025-10", 500, meta_2025_10, total_batch_size=524288)
    # the tiny tokenizer has 313 tokens: no documented chars/token, so the error names the field
    with pytest.raises(NanoKnowInputError) as err:
        Exposure.from_checkpoint(october)
    assert err.value.field == "model_config.vocab_size" and err.value.file.endswith("meta_000500.json")
    exposure = Exposure.from_checkpoint(october, chars_per_token=4.8)
    assert (exposure.method, exposure.tokens_read) == ("tokens", 500 * 524288)
    assert (exposure.shards_surely_read, exposure.shards_possibly_read, exposure.shards_nominal) == (3, 7, 6)
    assert "user_config.total_batch_size=524,288" in exposure.source
    assert split_of(question_exposures(data_dir, "nq", "fineweb-edu", exposure)) == {
        "seen": {"q1"}, "uncertain": {"q2", "q3", "q4"}, "unseen": {"q5"}, "unsupported": {"q6"}}


def test_fine_tuned_checkpoints_take_their_base_runs_exposure(tiny, data_dir):
    root = tiny.root / "nanochat"
    base = tiny("d4", "2025-10", 300, meta_2025_11, 5, 3, parent=root / "base_checkpoints")
    sft_meta = lambda step, config, tag: {  # noqa: E731 - chat_sft.py since 2026-01-31 (1ddaad1)
        "step": step, "val_bpb": 0.9, "model_config": config,
        "user_config": {"run": "dummy", "model_tag": tag, "model_step": None, "num_iterations": -1}}
    sft = tiny("d4", "2025-10", 12, sft_meta, "d4", parent=root / "chatsft_checkpoints")
    exposure = Exposure.from_checkpoint(sft)
    assert (exposure.shards_surely_read, exposure.shards_possibly_read) == (4, 7)
    assert exposure.checkpoint == str(sft) and exposure.step == 12
    assert str(base) in exposure.source and "user_config.model_tag='d4'" in exposure.source
    assert any("fine-tuning data" in note for note in exposure.notes)
    untagged = tiny("untagged", "2025-10", 12, sft_meta, None, parent=root / "chatsft_checkpoints")
    assert "'d4' as nanochat picks it" in Exposure.from_checkpoint(untagged).source
    # the October mid_train meta: user_config.model_tag / user_config.step name the base checkpoint
    mid = tiny("d4", "2025-10", 80, lambda step, config: {
        "step": step, "val_bpb": 0.95, "model_config": config,
        "user_config": {"run": "dummy", "model_tag": None, "step": 300, "dtype": "bfloat16", "max_seq_len": 2048,
                        "device_batch_size": 32, "total_batch_size": 524288, "eval_tokens": 20 * 524288}},
        parent=root / "mid_checkpoints")
    from_mid = Exposure.from_checkpoint(mid)
    assert (from_mid.shards_surely_read, from_mid.shards_possibly_read, from_mid.step) == (4, 7, 80)
    assert f"fine-tuned from {base} step 300" in from_mid.source

    # the October chat_sft meta names no base run: require it stated, or the base checkpoint given
    old_sft = tiny("old-sft", "2025-10", 650, lambda step, config: {
        "step": step, "val_loss": 1.2, "mmlu_acc": 0.3, "arc_easy_acc": 0.4, "model_config": config})
    with pytest.raises(NanoKnowInputError) as err:
        Exposure.from_checkpoint(old_sft)
    assert err.value.field == "user_config.model_tag" and err.value.file.endswith("meta_000650.json")
    assert "--shards-seen" in str(err.value)
    given = Exposure.from_checkpoint(old_sft, base_checkpoint=base)
    assert (given.shards_surely_read, given.step) == (4, 650) and "base checkpoint stated" in given.source
    missing = tiny("d9", "2025-10", 12, sft_meta, "d9", parent=root / "chatsft_checkpoints")
    with pytest.raises(NanoKnowInputError, match="base_checkpoints/d9 does not exist"):
        Exposure.from_checkpoint(missing)


@pytest.mark.parametrize("edit, field, message", [
    (lambda m: m["dataloader_state_dict"].update(pq_idx="five"), "dataloader_state_dict.pq_idx", "got 'five'"),
    (lambda m: m["dataloader_state_dict"].pop("rg_idx"), "dataloader_state_dict.rg_idx", "got missing"),
    (lambda m: m["dataloader_state_dict"].update(epoch=0), "dataloader_state_dict.epoch", ">= 1"),
    (lambda m: m.update(dataloader_state_dict=[5, 3]), "dataloader_state_dict", "pq_idx, rg_idx"),
    (lambda m: m["dataloader_state_dict"].update(pq_idx=1822), "dataloader_state_dict.pq_idx", "1822 train shards"),
])
def test_bad_loader_fields_name_file_and_field(tiny, edit, field, message):
    meta = meta_2025_11(7, {"sequence_len": 64, "vocab_size": 313, "n_layer": 2, "n_head": 4, "n_kv_head": 2,
                            "n_embd": 32}, 5, 3)
    edit(meta)
    folder = tiny(f"bad-{field}-{message[:6]}", "2025-10", 7, lambda step, config: meta)
    with pytest.raises(NanoKnowInputError) as err:
        Exposure.from_checkpoint(folder)
    assert err.value.field == field and err.value.file == str(folder / "meta_000007.json")
    assert message in str(err.value)


@pytest.mark.parametrize("edit, field, message", [
    (lambda m: m["user_config"].pop("total_batch_size"), "user_config.total_batch_size", "got missing"),
    (lambda m: m["user_config"].update(total_batch_size=-1), "user_config.total_batch_size", "computed automatically"),
    (lambda m: m["user_config"].update(total_batch_size=1000), "user_config.total_batch_size", "not a multiple"),
    (lambda m: m.update(step=8), "step", "differs from the file name"),
    (lambda m: m.pop("step"), "step", "got missing"),
])
def test_bad_token_fields_name_file_and_field(tiny, edit, field, message):
    meta = meta_2025_10(7, {"sequence_len": 64, "vocab_size": 65536, "n_layer": 2, "n_head": 4, "n_kv_head": 2,
                            "n_embd": 32})
    edit(meta)
    folder = tiny(f"badtok-{field}-{message[:6]}", "2025-10", 7, lambda step, config: meta)
    with pytest.raises(NanoKnowInputError) as err:
        Exposure.from_checkpoint(folder)
    assert err.value.field == field and err.value.file == str(folder / "meta_000007.json")
    assert message in str(err.value)


# --------------------------------------------------------------------------------------------
# measured constants against a simulation of nanochat's flat loader on a tiny corpus

def test_measured_band_contains_the_shard_the_flat_loader_reaches(tiny, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nanochat_adapter.tokenizer import load_encoding

    rng = random.Random(3)
    words = ["the", "planet", "answer", "question", "song", "band", "year", "largest", "capital", "war",
             "1914", "novel", "solar", "system", "Paris", "Jupiter", "wrote", "started", "ended", "France"]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shards = []
    for shard in range(10):
        docs = [" ".join(rng.choice(words) for _ in range(rng.randint(40, 160))) for _ in range(rng.randint(30, 50))]
        pq.write_table(pa.table({"text": docs}), corpus / f"shard_{shard:05d}.parquet", row_group_size=16)
        shards.append(docs)
    folder = tiny("measured", "2025-10", 1, meta_2025_10)  # its tokenizer.pkl is what we measure with
    encoding = load_encoding(folder / "tokenizer.pkl")
    # nanochat's flat loader: <|bos|> + tokens of each document, shards in order
    per_shard = [sum(len(ids) + 1 for ids in encoding.encode_ordinary_batch(docs)) for docs in shards]
    target = sum(per_shard[:5]) + per_shard[5] // 2  # halfway through shard 5
    step = math.ceil(target / 256)  # the tiny meta's device_batch_size x max_seq_len = 4 x 64
    meta_path = folder / "meta_000001.json"
    meta = json.loads(meta_path.read_text())
    meta["user_config"]["total_batch_size"] = 256
    meta_path.rename(folder / f"meta_{step:06d}.json")
    (folder / f"meta_{step:06d}.json").write_text(json.dumps({**meta, "step": step}))
    exposure = Exposure.from_checkpoint(folder, measure_corpus=corpus, measure_docs=500)
    tokens, reached = step * 256, 0
    while sum(per_shard[:reached]) < tokens:
        reached += 1
    assert reached == 6
    assert exposure.shards_surely_read <= reached - 1 and reached <= exposure.shards_possibly_read
    assert exposure.shards_possibly_read - exposure.shards_surely_read <= 4  # measured: a narrow band
    assert any("measured" in note for note in exposure.notes)
    assert exposure.chars_per_shard == (min(sum(len(d) for d in s) for s in shards[:exposure.shards_possibly_read]),
                                        max(sum(len(d) for d in s) for s in shards[:exposure.shards_possibly_read]))


# --------------------------------------------------------------------------------------------
# the command

def test_cli_writes_records_and_prints_the_summary(tiny, data_dir, tmp_path, capsys):
    folder = tiny("cli", "2025-10", 300, meta_2025_11, 5, 3)
    out, saved = tmp_path / "nq.jsonl", tmp_path / "exposure.json"
    code = nanoknow_main(["exposure", "--data-dir", str(data_dir), "--dataset", "nq", "--checkpoint", str(folder),
                          "--out", str(out), "--save-exposure", str(saved)])
    printed = capsys.readouterr().out
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["qid"] for r in rows] == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert [r["status"] for r in rows] == ["seen", "seen", "uncertain", "uncertain", "unseen", "unsupported"]
    assert "| nq | 4-7 (best guess 6) | 2 of 5 (40.0%) | 2 | 1 (20.0%) | 1 | 0 / 1 |" in printed
    assert Exposure.load(saved) == Exposure.from_checkpoint(folder)
    # refuses to overwrite its output
    assert nanoknow_main(["exposure", "--data-dir", str(data_dir), "--dataset", "nq", "--shards-seen", "5",
                          "--out", str(out)]) == 2
    assert "output file exists" in capsys.readouterr().err
    # stated, with a corpus the checkpoint did not read: loud warning
    climb = tiny("cli-climb", "2026-03-14", 40, meta_2026_03, 2, 8)
    assert nanoknow_main(["exposure", "--data-dir", str(data_dir), "--dataset", "nq", "--checkpoint", str(climb),
                          "--out", str(tmp_path / "climb.jsonl")]) == 0
    assert "WARNING: the questions are projected on 'fineweb' but this checkpoint read 'climbmix'" in \
        capsys.readouterr().out


def test_cli_bad_exposure_fields_exit_2_naming_file_and_field(tiny, data_dir, tmp_path, capsys):
    meta = meta_2025_11(7, {"sequence_len": 64, "vocab_size": 313, "n_layer": 2, "n_head": 4, "n_kv_head": 2,
                            "n_embd": 32}, 5, 3)
    meta["dataloader_state_dict"]["pq_idx"] = -2
    folder = tiny("cli-bad", "2025-10", 7, lambda step, config: meta)
    code = nanoknow_main(["exposure", "--data-dir", str(data_dir), "--dataset", "nq", "--checkpoint", str(folder),
                          "--out", str(tmp_path / "x.jsonl")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{folder / 'meta_000007.json'}: dataloader_state_dict.pq_idx: expected an integer >= 0, got -2" in err
    assert not (tmp_path / "x.jsonl").exists()
    code = nanoknow_main(["exposure", "--data-dir", str(data_dir), "--dataset", "nq", "--checkpoint", str(folder),
                          "--step", "9", "--out", str(tmp_path / "x.jsonl")])
    assert code == 2 and "step: no meta for step 9; steps with a meta: [7]" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# the released NQ qrels reproduce issue 12's table

@pytest.fixture(scope="module")
def nq_released(nanoknow_data_dir):
    qrels = read_qrels(layout.qrels_path(nanoknow_data_dir, "nq", "fineweb-edu"))
    supported = list(read_topics(layout.topics_path(nanoknow_data_dir, "nq", "fineweb-edu", "supported")))
    return qrels, supported


def _seen(nq_released, exposure):
    qrels, supported = nq_released
    return summarize(records_from_qrels(qrels, supported, [], exposure))


@pytest.mark.parametrize("shards, seen, median_read", [
    (215, 1672, 2), (216, 1674, 2), (217, 1675, 2),  # d20: exactly 216 shards give the table's 1,674
    (722, 2119, 5), (726, 2121, 5), (727, 2122, 5), (730, 2122, 5), (731, 2123, 5),  # d32: 727..730 give 2,122
])
def test_released_nq_reproduces_the_issue_table(nq_released, shards, seen, median_read):
    summary = _seen(nq_released, Exposure.from_stated(shards_seen=shards))
    assert (summary.supported, summary.counts["seen"]) == (2389, seen)
    assert (summary.median_frequency_read, summary.median_frequency_in_corpus) == (median_read, 14)


def test_released_nq_with_d20_and_d32_metas(tiny, nq_released):
    """The October-2025 metas of the speedrun d20 (21,400 steps) and run1000 d32 (71,680 steps), 524,288 tokens
    a step, 65,536-token tokenizer: nanochat's own arithmetic (4.8 chars/token, 250M chars/shard) gives 216 and
    722 shards; the documented constants' band around them."""
    d20_config = {"sequence_len": 2048, "vocab_size": 65536, "n_layer": 20, "n_head": 10, "n_kv_head": 10,
                  "n_embd": 1280}
    d20 = Exposure.from_checkpoint(tiny("d20", "2025-10", 21400, lambda s, c: meta_2025_10(
        s, d20_config, device_batch_size=32, max_seq_len=2048)))
    assert d20.tokens_read == 11_219_763_200
    assert (d20.shards_surely_read, d20.shards_nominal, d20.shards_possibly_read) == (205, 216, 224)
    summary = _seen(nq_released, d20)
    assert (summary.counts["seen"], summary.counts["uncertain"], summary.counts["unseen"]) == (1643, 44, 702)
    d32_config = {**d20_config, "n_layer": 32, "n_head": 16, "n_kv_head": 16, "n_embd": 2048}
    d32 = Exposure.from_checkpoint(tiny("d32", "2025-10", 71680, lambda s, c: meta_2025_10(
        s, d32_config, device_batch_size=8, max_seq_len=2048)))
    assert d32.tokens_read == 37_580_963_840
    assert (d32.shards_surely_read, d32.shards_nominal, d32.shards_possibly_read) == (691, 722, 746)
    assert _seen(nq_released, Exposure.from_stated(shards_seen=d32.shards_nominal)).counts["seen"] == 2119
