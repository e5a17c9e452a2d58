"""``nanoknow convert-nanochat``: transformers' NanoChatForCausalLM reproduces the native logits."""

from __future__ import annotations

import pytest
import torch

from nanochat_adapter.checkpoint import load_checkpoint
from nanochat_adapter.tiny_checkpoints import write_tiny_checkpoint

#: fp32 on CPU, same operations in a different order: logits agree to well within this.
LOGIT_ATOL = 1e-4


@pytest.mark.parametrize("pad_vocab", [False, True], ids=["oct2025", "dec2025_padded_vocab"])
def test_converted_model_matches_native_logits_and_tokens(run, tmp_path, pad_vocab):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ckpt = write_tiny_checkpoint(tmp_path / "ckpt", generation="2025-10", seed=7, pad_vocab=pad_vocab)
    out = tmp_path / "hf"
    run(["nanoknow", "convert-nanochat", str(ckpt), str(out)], timeout=300)
    native = load_checkpoint(ckpt)
    hf_model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    hf_tok = AutoTokenizer.from_pretrained(out)
    assert type(hf_model).__name__ == "NanoChatForCausalLM"

    text = "Question: when was the first world war?\nAnswer: It started in 1914, ended  1918.\n\n"
    ids = [native.tokenizer.bos_id] + native.tokenizer.encode(text)
    assert hf_tok.encode("<|bos|>" + text) == ids
    chat = [{"role": "user", "content": "Who sang?"}]
    assert hf_tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) == \
        native.tokenizer.render_chat(chat)
    batch = torch.tensor([ids, ids[::-1]])
    with torch.inference_mode():
        expected = native.model(batch)
        got = hf_model(batch).logits
    assert got.shape == expected.shape == (2, len(ids), native.tokenizer.vocab_size)
    torch.testing.assert_close(got, expected, atol=LOGIT_ATOL, rtol=0)


def test_generations_transformers_cannot_express_are_refused(run, tmp_path):
    from nanochat_adapter.convert import convert
    from nanoknow_common.errors import NanoKnowInputError

    jan = write_tiny_checkpoint(tmp_path / "jan", generation="2026-01", seed=7)
    with pytest.raises(NanoKnowInputError, match="generation 2026-01 cannot be expressed.*value embeddings"):
        convert(jan, tmp_path / "jan_hf")
    generation = "2026-03-14"  # and through the CLI: exit 2 with a one-line reason
    ckpt = write_tiny_checkpoint(tmp_path / "ckpt", generation=generation, seed=7)
    proc = run(["nanoknow", "convert-nanochat", str(ckpt), str(tmp_path / "hf")], check=False, timeout=300)
    assert proc.returncode == 2
    assert f"nanochat generation {generation} cannot be expressed" in proc.stderr
    assert not (tmp_path / "hf").exists()
