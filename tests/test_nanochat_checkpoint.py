"""Loading nanochat checkpoints: bad input gives a clear NanoKnowInputError; Hub path mocked."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest
import torch

from nanochat_adapter.checkpoint import load_checkpoint
from nanochat_adapter.tiny_checkpoints import write_tiny_checkpoint
from nanochat_adapter.tokenizer import load_encoding
from nanoknow_common.errors import NanoKnowInputError


@pytest.fixture()
def ckpt(tmp_path) -> Path:
    return write_tiny_checkpoint(tmp_path / "ckpt", generation="2026-01", seed=3, step=20)


def test_latest_step_is_default_and_explicit_step_loads(ckpt):
    write_tiny_checkpoint(ckpt, generation="2026-01", seed=4, step=7)
    assert load_checkpoint(ckpt).files.step == 20
    assert load_checkpoint(ckpt, step=7).files.step == 7


def test_missing_step_names_available_steps(ckpt):
    with pytest.raises(NanoKnowInputError, match=r"step 5 not found; available steps: \[20\]"):
        load_checkpoint(ckpt, step=5)


def test_corrupt_model_file(ckpt):
    model = ckpt / "model_000020.pt"
    model.write_bytes(model.read_bytes()[:300])
    with pytest.raises(NanoKnowInputError, match="model_000020.pt: cannot load state dict"):
        load_checkpoint(ckpt)


def test_model_file_with_arbitrary_pickle_is_refused_by_weights_only(ckpt, tmp_path):
    marker = tmp_path / "pwned"
    torch.save({"x": _Exploit(str(marker))}, ckpt / "model_000020.pt", _use_new_zipfile_serialization=True)
    with pytest.raises(NanoKnowInputError, match="cannot load state dict"):
        load_checkpoint(ckpt)
    assert not marker.exists()


def test_meta_and_state_dict_mismatch_lists_keys(ckpt):
    meta_path = ckpt / "meta_000020.json"
    meta = json.loads(meta_path.read_text())
    meta["model_config"]["n_layer"] = 3
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(NanoKnowInputError) as err:
        load_checkpoint(ckpt)
    message = str(err.value)
    assert "model_000020.pt" in message and "generation 2026-01" in message
    assert "unknown weights [" in message and "transformer.h.3.attn.c_k.weight" in message
    assert "missing weights [transformer.h.0.attn.ve_gate.weight" in message
    assert "wrong shapes [resid_lambdas (4,) (expected (3,))" in message


def test_unknown_weight_is_never_ignored(ckpt):
    path = ckpt / "model_000020.pt"
    state = torch.load(path, weights_only=True)
    state["transformer.h.0.attn.new_fancy_gate.weight"] = torch.zeros(2, 2)
    torch.save(state, path)
    with pytest.raises(NanoKnowInputError, match=r"unknown weights \[transformer.h.0.attn.new_fancy_gate.weight\]"):
        load_checkpoint(ckpt)


def test_unknown_meta_field_is_reported(ckpt):
    meta_path = ckpt / "meta_000020.json"
    meta = json.loads(meta_path.read_text())
    meta["model_config"]["mtp_heads"] = 2
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(NanoKnowInputError, match=r"meta_000020.json: model_config: unknown fields \['mtp_heads'\]"):
        load_checkpoint(ckpt)


def test_torch_compile_prefix_is_stripped(tmp_path):
    plain = write_tiny_checkpoint(tmp_path / "a", generation="2026-03-14", seed=5)
    compiled = write_tiny_checkpoint(tmp_path / "b", generation="2026-03-14", seed=5, compiled_prefix=True)
    ids = torch.tensor([[0, 5, 9, 100, 7]])
    with torch.inference_mode():
        torch.testing.assert_close(load_checkpoint(plain).model(ids), load_checkpoint(compiled).model(ids))


class _Exploit:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_tokenizer_pickle_that_builds_anything_else_is_refused(ckpt, tmp_path):
    marker = tmp_path / "pwned"
    (ckpt / "tokenizer.pkl").write_bytes(pickle.dumps(_Exploit(str(marker))))
    with pytest.raises(NanoKnowInputError, match=r"tokenizer.pkl: refusing to unpickle posix.system"):
        load_checkpoint(ckpt)
    assert not marker.exists()


def test_tokenizer_pickle_with_bad_encoding_state_is_refused(tmp_path):
    import tiktoken

    enc = tiktoken.Encoding(name="x", pat_str=r"\S+", mergeable_ranks={b"a": 0}, special_tokens={})
    data = pickle.dumps(enc).replace(b"mergeable_ranks", b"mergeable_rankz")
    path = tmp_path / "tokenizer.pkl"
    path.write_bytes(data)
    with pytest.raises(NanoKnowInputError, match="Encoding state must have the fields"):
        load_encoding(path)


def test_explicit_tokenizer_path(ckpt, tmp_path):
    moved = tmp_path / "tok" / "tokenizer.pkl"
    moved.parent.mkdir()
    shutil.move(ckpt / "tokenizer.pkl", moved)
    with pytest.raises(NanoKnowInputError, match="no tokenizer.pkl"):
        load_checkpoint(ckpt)
    assert load_checkpoint(ckpt, tokenizer=moved).files.tokenizer == moved
    assert load_checkpoint(ckpt, tokenizer=moved.parent).files.tokenizer == moved


def test_hf_repo_id_is_downloaded_with_snapshot_download(ckpt, monkeypatch):
    # The Hugging Face Hub is unreachable from this test machine: snapshot_download is mocked
    # by a stand-in that serves the local tiny checkpoint and records what was asked for.
    import huggingface_hub

    calls = []

    def fake_snapshot_download(repo_id, revision=None, allow_patterns=None, **kwargs):
        calls.append((repo_id, revision, allow_patterns))
        return str(ckpt)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    loaded = load_checkpoint("karpathy/nanochat-d32", step=20, revision="main")
    assert loaded.files.folder == ckpt and loaded.generation.name == "2026-01"
    assert calls == [("karpathy/nanochat-d32", "main",
                      ["meta_*.json", "tokenizer.pkl", "token_bytes.pt", "tokenizer/*", "model_000020.pt"])]


def test_unreachable_hub_is_a_clear_error(monkeypatch):
    import huggingface_hub

    def offline(*args, **kwargs):
        raise ConnectionError("Hub unreachable")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(NanoKnowInputError, match="cannot download Hugging Face repo karpathy/nanochat-d32"):
        load_checkpoint("karpathy/nanochat-d32")


def test_not_a_folder_nor_repo_id(tmp_path):
    with pytest.raises(NanoKnowInputError, match="no such checkpoint folder"):
        load_checkpoint(tmp_path / "missing" / "deeper" / "x")


def test_nonfinite_weights_are_refused_naming_file_and_tensor(ckpt):
    path = ckpt / "model_000020.pt"
    state = torch.load(path, weights_only=True)
    state["transformer.h.1.mlp.c_fc.weight"][3, 5] = float("nan")
    state["transformer.h.1.mlp.c_fc.weight"][0, 0] = float("inf")
    state["lm_head.weight"][0, 1] = float("-inf")
    torch.save(state, path)
    with pytest.raises(NanoKnowInputError) as err:
        load_checkpoint(ckpt)
    assert err.value.file == str(path)
    assert err.value.field == "transformer.h.1.mlp.c_fc.weight"  # the first bad one in file order
    message = str(err.value)
    assert f"{path}: transformer.h.1.mlp.c_fc.weight: non-finite weights: 1 NaN and 1 infinite" in message
    assert "(1 more tensors too: lm_head.weight)" in message


def test_finite_extreme_weights_still_load(ckpt):
    path = ckpt / "model_000020.pt"
    state = torch.load(path, weights_only=True)
    state["lm_head.weight"][0, 1] = 3.0e38  # large but finite: not refused
    torch.save(state, path)
    assert load_checkpoint(ckpt).files.step == 20
