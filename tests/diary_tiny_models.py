"""Tiny transformers models for the diary fine-tuning tests, built from configs (no download).

Both tokenizers are trained here with `tokenizers` on the diary texts: a byte-level BPE for
the decoder-only GPT-2 (keeps newlines, like GPT-2's) and a T5-like SentencePiece-style one
(whitespace split + Metaspace, so it drops newlines exactly as T5's tokenizer does) for the
encoder-decoder. Each model is saved with its tokenizer as a Hugging Face folder, which
``diary finetune --model FOLDER`` loads like any model.
"""

from __future__ import annotations

from pathlib import Path


def _train(tokenizer, texts: list[str], vocab_size: int, special: list[str], alphabet=None):
    from tokenizers import trainers

    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special, show_progress=False,
                                  initial_alphabet=alphabet or [])
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


def byte_level_tokenizer(texts: list[str], vocab_size: int = 600):
    """A GPT-2-style byte-level BPE with ``<|endoftext|>`` (BOS = EOS, no pad token)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    _train(tok, texts, vocab_size, ["<|endoftext|>"], pre_tokenizers.ByteLevel.alphabet())
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>")


def t5_like_tokenizer(texts: list[str], vocab_size: int = 600):
    """A T5-like tokenizer: whitespace split + Metaspace (newlines are lost), ``</s>`` appended to every input."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()])
    tok.decoder = decoders.Metaspace()
    _train(tok, texts, vocab_size, ["<pad>", "</s>", "<unk>"])
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>", unk_token="<unk>")


def save_tiny_gpt2(folder: Path, texts: list[str], *, seed: int = 0) -> Path:
    """A 2-layer GPT-2 (width 64) with a byte-level BPE trained on ``texts``, saved to ``folder``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = byte_level_tokenizer(texts)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=1024, n_embd=64, n_layer=2, n_head=2,
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(seed)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_tiny_t5(folder: Path, texts: list[str], *, seed: int = 0) -> Path:
    """A 2+2-layer T5 (width 64) with a T5-like tokenizer trained on ``texts``, saved to ``folder``."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = t5_like_tokenizer(texts)
    config = T5Config(vocab_size=len(tokenizer), d_model=64, d_kv=32, d_ff=128, num_layers=2, num_decoder_layers=2,
                      num_heads=2, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                      decoder_start_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    T5ForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
