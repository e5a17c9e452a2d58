"""What is known about the pre-training corpora nanochat read, as far as exposure needs it.

Both corpora are karpathy's repackagings (``dev/repackage_data_reference.py`` in nanochat):
documents shuffled once, then cut into ``shard_XXXXX.parquet`` files of at least 250,000,000
characters each, closed at the first multiple of 1,024 documents past that mark, row groups of
1,024 documents. nanochat's loader reads the shards in file order; the last file present is its
validation split. NanoKnow's doc ids ``shard_<shard>_<row>`` index these same files, so a
document's shard says when a run reaches it.

The upper bound of characters per shard is 250M plus one row group of documents: FineWeb-Edu
shards hold 53,248-54,272 documents (largest row ids in the released NQ and HotpotQA qrels),
about 4,650 characters each, so 1,023 more documents add at most ~4.8M characters; ClimbMix
shards hold ~86,000 (row ids up to ~85,400 in the upstream ClimbMix NQ qrels), ~2,900
characters each, at most ~3M more.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nanoknow_common.errors import NanoKnowInputError

#: Date of nanochat commit 324e69c, which moved pre-training from FineWeb-Edu to ClimbMix.
CLIMBMIX_SWITCH_DATE = "2026-03-04"


@dataclass(frozen=True)
class CorpusFacts:
    """One corpus: its names, shard count and the constants that turn tokens into shards."""

    name: str  # the slug used in NanoKnow file names and task names
    corpus_dir: str  # the folder of the NanoKnow data dir
    hf_dataset: str
    num_shards: int  # shard_00000 .. shard_<num_shards - 1>; the last one is nanochat's validation shard
    #: (low, high) characters per shard, see the module docstring
    chars_per_shard: tuple[float, float]
    #: documented chars/token of nanochat tokenizers on this corpus: vocab size -> (low, nominal, high)
    chars_per_token: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    #: True when doc ids ``shard_<n>_<row>`` name the files nanochat reads, in its read order
    ids_follow_read_order: bool = True
    #: nominal characters per shard nanochat's own comments use (speedrun.sh, run1000.sh)
    nominal_chars_per_shard: float = 250_000_000


#: FineWeb-Edu (karpathy/fineweb-edu-100b-shuffle). chars/token of the 65,536-token tokenizer that
#: every FineWeb-era speedrun trained (tok_train --vocab_size=65536): nanochat's comments assume
#: ~4.8 (speedrun.sh at 3a5e0bc: "Assume our tokenizer is 4.8 chars/token"; run1000.sh: "tok_eval.py
#: reports about ~4.8 chars/token"); a published tok_eval report of that tokenizer gives 4.91 and
#: 4.86 bytes/token on FineWeb-Edu train/val text, and a character is at least one byte, so 4.95
#: bounds it from above; 4.70 leaves room for non-ASCII text and tokenizer-to-tokenizer variation.
FINEWEB = CorpusFacts(
    name="fineweb", corpus_dir="fineweb-edu", hf_dataset="karpathy/fineweb-edu-100b-shuffle",
    num_shards=1823, chars_per_shard=(250_000_000, 255_000_000),
    chars_per_token={65536: (4.70, 4.80, 4.95)})

#: ClimbMix (karpathy/climbmix-400b-shuffle, MAX_SHARD = 6542 in nanochat/dataset.py since 324e69c).
#: nanochat documents no chars/token for its ClimbMix tokenizers; every ClimbMix-era checkpoint
#: records its loader position, so none is needed there (a stated token count needs a measured
#: or stated chars/token).
CLIMBMIX = CorpusFacts(
    name="climbmix", corpus_dir="climbmix", hf_dataset="karpathy/climbmix-400b-shuffle",
    num_shards=6543, chars_per_shard=(250_000_000, 253_000_000))

CORPORA: dict[str, CorpusFacts] = {c.name: c for c in (FINEWEB, CLIMBMIX)}
_ALIASES = {"fineweb-edu": "fineweb", "fineweb_edu": "fineweb", "climbmix-400b": "climbmix"}


def corpus_name(name: str) -> str:
    """The slug of a corpus name or folder name (``fineweb-edu`` -> ``fineweb``); others unchanged."""
    return _ALIASES.get(name, name)


def corpus_facts(name: str) -> CorpusFacts | None:
    """Facts of a known corpus (``fineweb``, ``climbmix`` or their folder names), else None."""
    return CORPORA.get(corpus_name(name))


def corpus_dir_for(name: str) -> str:
    """The NanoKnow data-dir folder of a corpus name (``fineweb`` -> ``fineweb-edu``)."""
    facts = corpus_facts(name)
    return facts.corpus_dir if facts else name


def require_read_order(name: str, *, what: str) -> CorpusFacts:
    """Facts of ``name``, or an error saying only a stated ``shards_seen`` works for it."""
    facts = corpus_facts(name)
    if facts is None or not facts.ids_follow_read_order:
        known = ", ".join(sorted(CORPORA))
        raise NanoKnowInputError(
            f"{what} needs to know how corpus {name!r} maps to nanochat's read order, which is known "
            f"only for {known}; state the exposure as a shard count instead (shards_seen)",
            field="corpus")
    return facts
