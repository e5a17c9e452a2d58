"""Training and validation examples of a diary set in the paper's formats (Prato et al., 3.2).

Decoder-only models learn every document as plain causal-LM text: an entry (or a merged
"simplified" document) is its text, a Q/A document is the prompt ``question\\n`` followed by
the answer. Encoder-decoder models get the entry's first line (its title) as encoder input and
the whole entry as target, and the question as input with the answer as target.

Each text is tokenised the way lm-eval's ``hf`` model tokenises a prompt (the tokenizer's own
special tokens, e.g. a BOS if it adds one), a continuation without special tokens, and every
target ends with the end-of-sequence token, so a model learns where an answer stops and the
validation prompts match the ``nanoknow_diary_*`` tasks token for token.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from projection.diary import schema
from projection.diary.files import MANIFEST, read_manifest
from nanoknow_common.errors import NanoKnowInputError

#: ``kind`` of the documents in the shards (``projection.diary.generator``).
KINDS = ("entry", "merged", "qa")


@dataclass(frozen=True)
class Document:
    """One training document of a diary set: ``kind`` is entry, merged or qa."""

    kind: str
    text: str

    def prompt_and_target(self) -> tuple[str, str]:
        """The Q/A split of a ``qa`` document: ``(question + "\\n", answer)``."""
        question, separator, answer = self.text.partition(schema.QUESTION_ANSWER_SEPARATOR)
        if not separator:
            raise ValueError(f"a Q/A document without a newline: {self.text[:60]!r}")
        return question + separator, answer


def read_documents(diary_dir: str | Path, variant: str) -> list[Document]:
    """The training documents of ``variant`` from a ``diary make`` folder, in the shards' (shuffled) order."""
    import pyarrow.parquet as pq

    manifest = read_manifest(diary_dir)
    shards = manifest["files"].get(variant) if isinstance(manifest.get("files"), dict) else None
    if not shards:
        raise NanoKnowInputError(f"no {variant} shards listed", file=Path(diary_dir) / MANIFEST,
                                 field=f"files.{variant}")
    documents = []
    for shard in shards:
        path = Path(diary_dir) / shard
        if not path.is_file():
            raise NanoKnowInputError("missing shard", file=path)
        table = pq.read_table(path, columns=["text", "kind"])
        for text, kind in zip(table.column("text").to_pylist(), table.column("kind").to_pylist()):
            if kind not in KINDS or not isinstance(text, str):
                raise NanoKnowInputError(f"unexpected document kind {kind!r}", file=path, field="kind")
            documents.append(Document(kind, text))
    return documents


def qa_documents(rows: list[dict]) -> list[Document]:
    """Q/A records (``qa/*.jsonl``) as ``qa`` documents, e.g. the validation questions for a loss."""
    return [Document("qa", schema.qa_document(row["question"], row["answer"])) for row in rows]


def _ids(tokenizer, texts: list[str], *, special: bool) -> list[list[int]]:
    if not texts:
        return []
    return tokenizer(texts, add_special_tokens=special)["input_ids"]


def decoder_examples(tokenizer, documents: list[Document]) -> list[dict]:
    """Causal-LM examples: ``input_ids`` = ``labels`` = the document's tokens + EOS."""
    eos = tokenizer.eos_token_id
    plain = [i for i, d in enumerate(documents) if d.kind != "qa"]
    qa = [i for i, d in enumerate(documents) if d.kind == "qa"]
    tokens: list[list[int]] = [[] for _ in documents]
    for i, ids in zip(plain, _ids(tokenizer, [documents[i].text for i in plain], special=True)):
        tokens[i] = list(ids) + [eos]
    pairs = [documents[i].prompt_and_target() for i in qa]
    prompts = _ids(tokenizer, [p for p, _ in pairs], special=True)
    answers = _ids(tokenizer, [a for _, a in pairs], special=False)
    for i, prompt, answer in zip(qa, prompts, answers):
        tokens[i] = list(prompt) + list(answer) + [eos]
    return [{"input_ids": ids, "attention_mask": [1] * len(ids), "labels": list(ids), "length": len(ids)}
            for ids in tokens]


def seq2seq_examples(tokenizer, documents: list[Document]) -> list[dict]:
    """Encoder-decoder examples: title -> whole entry, question -> answer (targets end with EOS)."""
    eos = tokenizer.eos_token_id
    sources, targets = [], []
    for document in documents:
        if document.kind == "qa":
            prompt, answer = document.prompt_and_target()
        else:  # the first line (the title of the first entry) -> the whole entry / merged entries
            prompt, answer = document.text.split("\n", 1)[0], document.text
        sources.append(prompt)
        targets.append(answer)
    inputs = _ids(tokenizer, sources, special=True)
    labels = _ids(tokenizer, targets, special=False)
    return [{"input_ids": list(x), "attention_mask": [1] * len(x), "labels": list(y) + [eos],
             "length": len(x) + len(y) + 1} for x, y in zip(inputs, labels)]


def build_dataset(tokenizer, documents: list[Document], *, encoder_decoder: bool):
    """A ``datasets.Dataset`` of tokenised examples (with a ``length`` column for length grouping)."""
    import datasets

    make = seq2seq_examples if encoder_decoder else decoder_examples
    return datasets.Dataset.from_list(make(tokenizer, documents))
