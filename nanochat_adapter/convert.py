"""``nanoknow convert-nanochat``: a nanochat checkpoint as a transformers ``NanoChatForCausalLM``.

transformers' ``NanoChatForCausalLM`` implements the October 2025 architecture (rotary
base 10k then QK norm, relu² MLP, GQA, softcap). Later generations add weights or constants
it has no place for (lambdas, value embeddings, sliding windows, smear/backout, q/k scale);
converting them is refused with the reason, since the result would compute something else.
The output folder (weights, config, ``tokenizer.json`` with nanochat's chat template) runs
with ``lm_eval --model hf`` or ``--model vllm``.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)


#: Generations transformers' NanoChat model can express exactly.
SUPPORTED_GENERATIONS = ("2025-10",)

_UNSUPPORTED_REASON = {
    "2026-01": "residual/x0 lambdas, sliding-window attention and value embeddings",
    "2026-03-09": "residual/x0 lambdas, sliding windows, value embeddings, rotary base 100k and a q/k scale",
    "2026-03-14": "residual/x0 lambdas, sliding windows, value embeddings, smear, backout and a q/k scale",
}






def transformers_config(loaded):
    """A ``NanoChatConfig`` equivalent to the loaded nanochat model."""
    import torch
    from transformers import NanoChatConfig

    cfg, tok = loaded.model.config, loaded.tokenizer
    return NanoChatConfig(
        vocab_size=cfg["vocab_size"], hidden_size=cfg["n_embd"], intermediate_size=4 * cfg["n_embd"],
        num_hidden_layers=cfg["n_layer"], num_attention_heads=cfg["n_head"],
        num_key_value_heads=cfg["n_kv_head"], max_position_embeddings=cfg["sequence_len"],
        rope_parameters={"rope_type": "default", "rope_theta": float(loaded.generation.rotary_base)},
        final_logit_softcapping=float(loaded.model.softcap),
        rms_norm_eps=float(torch.finfo(torch.float32).eps),  # torch's rms_norm default
        bos_token_id=tok.bos_id, eos_token_id=tok.assistant_end_id, pad_token_id=tok.assistant_end_id,
        tie_word_embeddings=False, architectures=["NanoChatForCausalLM"])


def transformers_state_dict(loaded) -> dict:
    """nanochat weights under transformers' names, vocab padding rows dropped."""
    state = loaded.model.state_dict()
    vocab = loaded.model.vocab_size
    out = {"model.embed_tokens.weight": state["transformer.wte.weight"][:vocab],
           "lm_head.weight": state["lm_head.weight"][:vocab]}
    names = {"attn.c_q": "self_attn.q_proj", "attn.c_k": "self_attn.k_proj", "attn.c_v": "self_attn.v_proj",
             "attn.c_proj": "self_attn.o_proj", "mlp.c_fc": "mlp.fc1", "mlp.c_proj": "mlp.fc2"}
    for i in range(loaded.model.config["n_layer"]):
        for ours, theirs in names.items():
            out[f"model.layers.{i}.{theirs}.weight"] = state[f"transformer.h.{i}.{ours}.weight"]
    return {k: v.contiguous().clone() for k, v in out.items()}


def write_tokenizer(encoding, output: Path) -> None:
    """``tokenizer.json`` + ``tokenizer_config.json`` (with nanochat's chat template)."""
    import base64

    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    from .tokenizer import ASSISTANT_END, BOS, CHAT_TEMPLATE

    with tempfile.TemporaryDirectory() as tmp:
        # the .tiktoken BPE file format (base64 token, rank); written here because
        # tiktoken's own writer needs the optional blobfile package
        bpe_file = Path(tmp) / "nanochat.tiktoken"
        ranks = sorted(encoding._mergeable_ranks.items(), key=lambda item: item[1])
        bpe_file.write_text("".join(f"{base64.b64encode(token).decode()} {rank}\n" for token, rank in ranks))
        backend = TikTokenConverter(vocab_file=str(bpe_file), pattern=encoding._pat_str,
                                    extra_special_tokens=encoding._special_tokens).converted()
        fast = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=ASSISTANT_END,
                                       pad_token=ASSISTANT_END)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(output))


def convert(checkpoint, output, *, step=None, tokenizer=None, dtype="float32", force=False) -> Path:
    """Write ``checkpoint`` as a transformers NanoChatForCausalLM folder at ``output``."""
    import torch
    from transformers import NanoChatForCausalLM

    from .checkpoint import load_checkpoint

    output = Path(output)
    if output.exists() and any(output.iterdir()) and not force:
        raise NanoKnowInputError("output folder is not empty (use --force)", file=output)
    loaded = load_checkpoint(checkpoint, step=step, tokenizer=tokenizer, device="cpu", dtype="float32")
    generation = loaded.generation.name
    if generation not in SUPPORTED_GENERATIONS:
        raise NanoKnowInputError(
            f"nanochat generation {generation} cannot be expressed by transformers' NanoChatForCausalLM "
            f"(it has {_UNSUPPORTED_REASON.get(generation, 'parts transformers lacks')}); "
            "evaluate it natively with lm_eval --model nanochat", file=loaded.files.model)
    config = transformers_config(loaded)
    with torch.device("meta"):
        model = NanoChatForCausalLM(config)
    state = transformers_state_dict(loaded)
    model.load_state_dict(state, strict=True, assign=True)
    model = model.to(getattr(torch, dtype)).eval()
    if output.exists() and force:
        shutil.rmtree(output)
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(output))
    write_tokenizer(loaded.tokenizer.encoding, output)
    log.info("converted %s (step %d, generation %s) to %s", loaded.files.folder, loaded.files.step,
             generation, output)
    return output
