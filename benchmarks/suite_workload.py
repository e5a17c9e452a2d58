"""The NQ suite's generation workload for benchmarks: prompts, settings, a stand-in tokenizer.

* :func:`nq_suite_prompts`: the closed-book prompts of every released NQ question (3,610) and
  the oracle prompts of every supported one (2,389), with a 200-word passage of synthetic
  FineWeb-length text (words drawn from the questions themselves) where the corpus is absent;
  prompt formats from :mod:`nanoknow_tasks.prompts`.
* :func:`task_generation_kwargs`: the ``generation_kwargs`` of the NanoKnow tasks, read from
  ``nanoknow_tasks/_nanoknow_base_yaml`` (greedy, 64 new tokens, ``until``).
* :func:`standin_tokenizer`: a tiktoken BPE with nanochat's special tokens and a 65,536-row
  vocabulary. ``smollm2`` takes the 49k merges of the bundled SmolLM2 tokenizer (read from its
  GGUF file; about as many tokens per word as nanochat's own 65k BPE); ``tiny`` is the 48-merge
  tokenizer of the test checkpoints (many more tokens per word). The rows above the BPE's own
  tokens are filler that no text encodes to but that decode (a random model emits them).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from nanoknow_tasks.prompts import closedbook_prompt, context_prompt
from projection.data.files import load_questions, read_answers

TASKS_DIR = Path(__file__).resolve().parents[1] / "nanoknow_tasks"
PASSAGE_WORDS = 200


@dataclass(frozen=True)
class SuitePrompt:
    kind: str  # "closedbook" or "oracle"
    qid: str
    text: str


def task_generation_kwargs() -> dict:
    """``generation_kwargs`` shared by every NanoKnow QA task (from the tasks' base YAML)."""
    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    config = yaml.load((TASKS_DIR / "_nanoknow_base_yaml").read_text(encoding="utf-8"), Loader=_Loader)
    return dict(config["generation_kwargs"])


def synthetic_passage(rng: random.Random, words: list[str], n_words: int = PASSAGE_WORDS) -> str:
    """``n_words`` words of prose-like text: sentences of 8-30 words, capitalised, full stops."""
    out, left = [], n_words
    while left > 0:
        length = min(left, rng.randint(8, 30))
        sentence = [rng.choice(words) for _ in range(length)]
        sentence[0] = sentence[0].capitalize()
        out.append(" ".join(sentence) + ".")
        left -= length
    return " ".join(out)


def nq_suite_prompts(data_dir: Path, *, seed: int = 0) -> list[SuitePrompt]:
    """Closed-book prompts of all NQ questions, then oracle prompts of the supported ones."""
    answers = read_answers(Path(data_dir) / "nq" / "answers.nanoknow-nq.jsonl")
    supported = load_questions(data_dir, "nq", "fineweb-edu", "supported", answers=answers)
    unsupported = load_questions(data_dir, "nq", "fineweb-edu", "unsupported", answers=answers)
    words = [w for q in supported + unsupported for w in re.findall(r"[A-Za-z']+", q.question)]
    rng = random.Random(seed)
    prompts = [SuitePrompt("closedbook", q.qid, closedbook_prompt({"question": q.question}))
               for q in supported + unsupported]
    prompts += [SuitePrompt("oracle", q.qid, context_prompt({"question": q.question,
                                                               "context": synthetic_passage(rng, words)}))
                for q in supported]
    return prompts


# -- stand-in tokenizer -------------------------------------------------------------------------
def _gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-ins for bytes (``Ġ`` = space), inverted."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return {c: b for b, c in chars.items()}


def smollm2_ranks() -> dict[bytes, int]:
    """BPE ranks (bytes -> merge order) from the bundled SmolLM2 GGUF file's merges."""
    import gguf

    from nanoknow_common.bundled_model import smollm2_gguf

    folder, name = smollm2_gguf()
    reader = gguf.GGUFReader(str(folder / name))
    field = reader.fields["tokenizer.ggml.merges"]
    decode = _gpt2_byte_decoder()
    ranks = {bytes([b]): b for b in range(256)}
    for index in field.data:
        left, right = bytes(field.parts[index]).decode("utf-8").split(" ")
        token = bytes(decode[c] for c in left) + bytes(decode[c] for c in right)
        ranks.setdefault(token, len(ranks))
    return ranks


def standin_tokenizer(kind: str = "smollm2", vocab_size: int = 65536):
    """A :class:`NanoChatTokenizer` of ``vocab_size`` ids (see the module docstring)."""
    import tiktoken

    from nanochat_adapter.tiny_checkpoints import SPLIT_PATTERN, train_tiny_encoding
    from nanochat_adapter.tokenizer import NanoChatTokenizer, SPECIAL_TOKENS

    if kind == "smollm2":
        ranks = smollm2_ranks()
    elif kind == "tiny":
        ranks = dict(train_tiny_encoding()._mergeable_ranks)
    else:
        raise ValueError(f"unknown tokenizer {kind!r} (smollm2 or tiny)")
    filler = vocab_size - len(SPECIAL_TOKENS) - len(ranks)
    if filler < 0:
        raise ValueError(f"vocab_size {vocab_size} is smaller than the {kind} tokenizer")
    for i in range(filler):  # 0xFF never occurs in UTF-8 text, so no text encodes to these
        ranks[b"\xff\xff" + i.to_bytes(3, "big")] = len(ranks)
    specials = {name: len(ranks) + i for i, name in enumerate(SPECIAL_TOKENS)}
    encoding = tiktoken.Encoding(name=f"standin-{kind}", pat_str=SPLIT_PATTERN, mergeable_ranks=ranks,
                                 special_tokens=specials)
    return NanoChatTokenizer(encoding, source=f"stand-in {kind} BPE")
