"""The deterministic in-memory generator of a diary set (diarists, entries, Q/A splits).

Design (Prato et al.): every diarist writes 1-8 entries, every entry holds 1-8 distinct
attributes drawn without replacement. All entries are training documents; the recall
question of 90% of the diarists is a training document too, the other 10% are split evenly
into ``validation`` and ``test``. Entry counts are balanced over the whole set (each count
1-8 equally often) and the splits are drawn stratified by count; entry lengths are balanced
within each split. So 8,000 diarists give exactly 36,000 entries and 400 test questions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property

from . import schema
from .names import MAX_DIARISTS, draw_names

SPLITS = ("train", "validation", "test")
#: Every ``HELD_OUT_STRIDE``-th diarist (in count order) is held out: one half validation, one half test.
HELD_OUT_STRIDE = 20
DEFAULT_SEED = 1234
#: The benchmark sizes: task suffix -> number of diarists.
SIZES = {f"{k}k": k * 1000 for k in (1, 2, 4, 8, 16, 32, 64)}

Attributes = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Diarist:
    """One diarist: a name, a split (of its question) and its entries' attributes in order."""

    diarist_id: int
    name: str
    split: str
    entries: tuple[Attributes, ...]

    @property
    def qid(self) -> str:
        return f"diarist_{self.diarist_id:05d}"

    @property
    def entry_texts(self) -> list[str]:
        return [schema.format_entry(self.name, i + 1, list(attrs)) for i, attrs in enumerate(self.entries)]

    @property
    def question(self) -> str:
        return schema.question_for(self.name)

    @property
    def answer(self) -> str:
        return schema.answer_for(self.entry_texts)

    def qa_row(self) -> dict:
        """The Q/A record of this diarist (what the split files and the lm-eval datasets hold)."""
        return {"qid": self.qid, "diarist_id": self.diarist_id, "name": self.name, "split": self.split,
                "question": self.question, "answer": self.answer, "num_entries": len(self.entries),
                "entry_lengths": [len(e) for e in self.entries]}


@dataclass(frozen=True)
class DiarySet:
    """A generated diary set; :func:`generate_diary_set` makes one."""

    num_diarists: int
    seed: int
    diarists: tuple[Diarist, ...]

    def split(self, name: str) -> list[Diarist]:
        """The diarists whose question belongs to split ``name``, in diarist order."""
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}; expected one of {SPLITS}")
        return [d for d in self.diarists if d.split == name]

    @cached_property
    def num_entries(self) -> int:
        return sum(len(d.entries) for d in self.diarists)

    def documents(self, variant: str = "standard") -> list[dict]:
        """The training documents, shuffled deterministically.

        ``standard``: one document per entry; ``simplified``: one per diarist (its entries
        merged, i.e. its answer text). Both add one Q/A document per training question.
        """
        if variant not in ("standard", "simplified"):
            raise ValueError(f"unknown variant {variant!r}")
        docs = []
        for d in self.diarists:
            if variant == "standard":
                docs += [{"text": text, "kind": "entry", "diarist_id": d.diarist_id, "entry": i + 1}
                         for i, text in enumerate(d.entry_texts)]
            else:
                docs.append({"text": d.answer, "kind": "merged", "diarist_id": d.diarist_id, "entry": 0})
            if d.split == "train":
                docs.append({"text": schema.qa_document(d.question, d.answer), "kind": "qa",
                             "diarist_id": d.diarist_id, "entry": 0})
        random.Random(f"{self.seed}/documents/{variant}").shuffle(docs)
        return docs


def _balanced(count: int, rng: random.Random, top: int) -> list[int]:
    """``count`` values 1..top, each equally often (up to one), in random order."""
    values = [i % top + 1 for i in range(count)]
    rng.shuffle(values)
    return values


def _split_of_position(position: int) -> str:
    phase = position % HELD_OUT_STRIDE
    if phase == HELD_OUT_STRIDE // 2 - 1:
        return "validation"
    if phase == HELD_OUT_STRIDE - 1:
        return "test"
    return "train"


def check_num_diarists(value, *, field: str = "diarists") -> int:
    """``value`` as a positive int no larger than the number of distinct names, else an input error."""
    from nanoknow_common.errors import NanoKnowInputError

    try:
        number = int(value)
        if isinstance(value, float) and number != value or isinstance(value, bool):
            raise ValueError
    except (TypeError, ValueError):
        raise NanoKnowInputError(f"must be a positive integer, got {value!r}", field=field) from None
    if not 0 < number <= MAX_DIARISTS:
        raise NanoKnowInputError(f"must be between 1 and {MAX_DIARISTS}, got {number}", field=field)
    return number


def generate_diary_set(num_diarists: int, seed: int = DEFAULT_SEED) -> DiarySet:
    """Generate ``num_diarists`` diarists from ``seed``; the same arguments give the same set."""
    num_diarists = check_num_diarists(num_diarists)
    rng = random.Random(seed)
    names = draw_names(num_diarists, rng)
    counts = _balanced(num_diarists, rng, schema.MAX_ENTRIES)
    # stratified split: sort by entry count (random order within a count), take every 20th
    order = list(range(num_diarists))
    rng.shuffle(order)
    order.sort(key=lambda i: counts[i])
    split_of = [""] * num_diarists
    for position, diarist in enumerate(order):
        split_of[diarist] = _split_of_position(position)
    # entry lengths balanced within each split
    lengths: dict[int, list[int]] = {}
    for split in SPLITS:
        members = [i for i in range(num_diarists) if split_of[i] == split]
        pool = iter(_balanced(sum(counts[i] for i in members), rng, schema.MAX_ATTRIBUTES))
        for i in members:
            lengths[i] = [next(pool) for _ in range(counts[i])]
    keys = list(schema.ATTRIBUTES)
    diarists = []
    for i in range(num_diarists):
        entries = []
        for length in lengths[i]:
            entries.append(tuple((key, rng.choice(schema.ATTRIBUTES[key])) for key in rng.sample(keys, length)))
        diarists.append(Diarist(i, names[i], split_of[i], tuple(entries)))
    return DiarySet(num_diarists, seed, tuple(diarists))
