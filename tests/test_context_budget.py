"""Every distractor-grid prompt fits a 2,048-token context with room for 64 new tokens.

A corpus of FineWeb-length documents (1,000+ words of generated prose with numbers, names and
long words) is built by ``nanoknow build`` with its default 100-word grid passages; every grid
prompt (k = 0 to 8, every position) and the 200-word oracle prompt is rendered as one user turn
with the chat template of the bundled SmolLM2-135M-Instruct and counted with its BPE tokenizer
(49k vocabulary, offline; a stand-in for nanochat's 65k BPE, whose tokenizer is not shipped).
The same build with 200-word grid passages (the old grid) does not fit: the test can fail.
"""

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nanoknow_common.bundled_model import smollm2_gguf
from nanoknow_tasks.contexts import compose_context
from nanoknow_tasks.prompts import context_prompt
from nanoknow_tasks.task_specs import grid_conditions
from projection.corpus.shards import shard_file_name
from projection.data import layout
from projection.datasets import built_layout
from projection.datasets.build import BuildSettings, build

CONTEXT, NEW_TOKENS = 2048, 64
BUDGET = CONTEXT - NEW_TOKENS
CORPUS_DIR = "long"
QUESTIONS = [("q1", "In which year did the Varnholt observatory first record the comet?", "1873"),
             ("q2", "Who designed the irrigation canals of the Tessaly basin?", "Miriam Oyelaran-Holt"),
             ("q3", "What mineral gives the Corvane cliffs their green colour?", "glauconite")]
COMMON = ("the of and to in a is that for it as was with be by on not he this are or his from at which but "
          "have an they you were her she there been one all we their has would when if so no will more about "
          "can its into than them only other time new some could these two may first then do any like my now "
          "over such our man me even most made after also did many before must through back years where much "
          "your way well down should because each just those people how too little state good very make world "
          "still own see men work long get here between both life being under never day same another know while "
          "last might us great old year off come since against go came right used take three").split()
RARE = ("photosynthesis mitochondrial sedimentary thermodynamics chlorophyll Mesopotamian cartographers "
        "hydrological interdisciplinary phenomenological electromagnetism biodiversity Anglo-Saxon "
        "socio-economic archaeologists polysaccharides Byzantine Renaissance-era nineteenth-century "
        "e.g., i.e., approximately (see Figure 3) Dr. St. Eleanor Kowalczyk Thibodeaux Nakamura Ouagadougou "
        "km² °C CO₂ 1,250 3.5% $4.7 million 1914–1918 www.example.org/resources").split()


def _document(rng: random.Random, words: int, planted: str | None = None) -> str:
    """``words`` words of prose-like text in sentences; ``planted`` (a sentence) in the middle."""
    sentences, count = [], 0
    while count < words:
        length = rng.randint(8, 24)
        tokens = [rng.choice(RARE) if rng.random() < 0.18 else rng.choice(COMMON) for _ in range(length)]
        if rng.random() < 0.15:
            tokens.insert(rng.randrange(length), str(rng.randint(2, 2024)))
        sentences.append(" ".join(tokens).capitalize() + rng.choice([".", ".", ".", ";", "?", ":"]))
        count += len(tokens)
        if planted and count >= words // 2:
            sentences.append(planted)
            count += len(planted.split())
            planted = None
    return " ".join(sentences)


def _write_corpus_and_root(base):
    rng = random.Random(11)
    docs = [_document(rng, rng.randint(1000, 1600), f"The answer, as the records show, is {answer}.")
            for _, _, answer in QUESTIONS]
    docs += [_document(rng, rng.randint(1000, 1600)) for _ in range(30)]
    (base / "corpus").mkdir()
    pq.write_table(pa.table({"text": docs}), base / "corpus" / shard_file_name(0))
    root = base / "data"
    (root / "nq" / CORPUS_DIR).mkdir(parents=True)
    layout.answers_path(root, "nq").write_text(
        "".join(json.dumps({"qid": q, "answer": [a]}) + "\n" for q, _, a in QUESTIONS))
    layout.topics_path(root, "nq", CORPUS_DIR, "supported").write_text(
        "".join(f"{q}\t{text}\n" for q, text, _ in QUESTIONS))
    layout.topics_path(root, "nq", CORPUS_DIR, "unsupported").write_text("")
    layout.qrels_path(root, "nq", CORPUS_DIR).write_text(
        "".join(f"{q} Q0 shard_00000_{i} 1\n" for i, (q, _, _) in enumerate(QUESTIONS)))
    return docs, root


@pytest.fixture(scope="module")
def long_build(tmp_path_factory):
    base = tmp_path_factory.mktemp("budget")
    docs, root = _write_corpus_and_root(base)
    builds = {}
    for grid_words in (100, 200):
        out = base / f"build-{grid_words}"
        build(root, BuildSettings(dataset="nq", corpus_dir=CORPUS_DIR, corpus=str(base / "corpus"),
                                  grid_words=grid_words), out, progress=False)
        builds[grid_words] = pq.read_table(built_layout.split_path(out, "nq", CORPUS_DIR, "supported")).to_pylist()
    return docs, builds


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    folder, gguf_file = smollm2_gguf()
    return AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)


def _chat_tokens(tokenizer, row: dict, context: str) -> int:
    prompt = context_prompt({"question": row["question"], "context": context})
    ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                        tokenize=True)
    return len(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)


def test_every_grid_prompt_fits_2048_tokens_with_64_to_spare(long_build, tokenizer):
    docs, builds = long_build
    # FineWeb-length documents, and text no easier to tokenize than FineWeb-Edu prose
    assert min(len(d.split()) for d in docs) >= 1000
    words = sum(len(d.split()) for d in docs)
    tokens = sum(len(tokenizer(d, add_special_tokens=False)["input_ids"]) for d in docs)
    assert tokens / words >= 1.4, tokens / words
    rows = builds[100]
    assert len(rows) == len(QUESTIONS) and all(len(r["distractors"]) == 8 for r in rows)
    longest = 0
    for row in rows:
        # full-length passages: the measure is of the real worst case
        assert len(row["oracle"]["grid_passage"].split()) == 100 and len(row["oracle"]["passage"].split()) == 200
        assert all(len(d["passage"].split()) == 100 for d in row["distractors"])
        for k, position in grid_conditions():
            used = _chat_tokens(tokenizer, row, compose_context(row, "distractors", k=k, position=position))
            assert used <= BUDGET, (row["qid"], k, position, used)
            longest = max(longest, used)
        # the paper's oracle task: one 200-word passage
        assert _chat_tokens(tokenizer, row, compose_context(row, "oracle")) <= BUDGET
    assert longest > 1200  # k = 8: nine 100-word passages, measured, not assumed

    # the old grid (200-word passages) overflows at k = 8: what this design avoids
    old = builds[200][0]
    assert _chat_tokens(tokenizer, old, compose_context(old, "distractors", k=8, position="first")) > BUDGET
