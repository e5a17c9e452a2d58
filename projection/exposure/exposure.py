"""A checkpoint's exposure: which prefix of the corpus its pre-training read.

:class:`Exposure` holds a band of shards (``shards_surely_read`` <= ``shards_possibly_read``;
equal when stated or exactly known), the corpus, and where the numbers came from. A question is
*seen* when one of its qrels documents lies in a surely-read shard, *unseen* when none lies in
a possibly-read shard, *uncertain* in between (only with a band).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Iterable

from nanoknow_common.errors import NanoKnowInputError

from . import corpora
from .band import band_from_chars

METHODS = ("stated", "loader_state", "tokens")
SEEN, UNSEEN, UNCERTAIN, UNSUPPORTED = "seen", "unseen", "uncertain", "unsupported"


@dataclass(frozen=True)
class Exposure:
    """Shards ``0..shards_surely_read-1`` surely read, ``0..shards_possibly_read-1`` possibly read."""

    shards_surely_read: int
    shards_possibly_read: int
    corpus: str = "fineweb"
    #: one line saying where the numbers came from (files and fields, or "stated")
    source: str = "stated"
    method: str = "stated"
    #: how the corpus was decided: "stated", or the file facts it was inferred from
    corpus_source: str = "stated"
    #: best single guess of the shards touched (nanochat's own arithmetic); = possibly when stated
    shards_nominal: int | None = None
    checkpoint: str | None = None
    step: int | None = None
    tokens_read: int | None = None
    loader_state: dict | None = None
    chars_per_token: tuple[float, float, float] | None = None
    chars_per_shard: tuple[float, float] | None = None
    #: ranks of the run (number of ``optim_<step>_rank<r>.pt`` files), where the files say it
    world_size: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self):
        for name in ("shards_surely_read", "shards_possibly_read"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise NanoKnowInputError(f"must be a non-negative integer, got {value!r}", field=name)
        if self.shards_surely_read > self.shards_possibly_read:
            raise NanoKnowInputError(
                f"shards_surely_read ({self.shards_surely_read}) exceeds shards_possibly_read "
                f"({self.shards_possibly_read})", field="shards_surely_read")
        if self.method not in METHODS:
            raise NanoKnowInputError(f"unknown method {self.method!r}; one of {METHODS}", field="method")
        object.__setattr__(self, "corpus", corpora.corpus_name(self.corpus))
        if self.shards_nominal is None:
            object.__setattr__(self, "shards_nominal", self.shards_possibly_read)
        for name in ("chars_per_token", "chars_per_shard"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "notes", tuple(self.notes))

    # -- questions ----------------------------------------------------------------------
    @property
    def exact(self) -> bool:
        """True when there is no band (stated, or known to the shard)."""
        return self.shards_surely_read == self.shards_possibly_read

    def status(self, shards: Iterable[int]) -> str:
        """``seen`` / ``uncertain`` / ``unseen`` for a question whose qrels documents lie in ``shards``;
        ``unsupported`` when it has none."""
        shards = list(shards)
        if not shards:
            return UNSUPPORTED
        first = min(shards)
        if first < self.shards_surely_read:
            return SEEN
        if first < self.shards_possibly_read:
            return UNCERTAIN
        return UNSEEN

    def frequency_read(self, shards: Iterable[int]) -> tuple[int, int]:
        """(surely, possibly) read documents among those in ``shards`` (one entry per document)."""
        shards = list(shards)
        return (sum(1 for s in shards if s < self.shards_surely_read),
                sum(1 for s in shards if s < self.shards_possibly_read))

    def describe(self) -> str:
        """One line: the band and where it came from."""
        if self.exact:
            band = f"{self.shards_surely_read} shards read"
        else:
            band = (f"{self.shards_surely_read} shards surely read, {self.shards_possibly_read} possibly "
                    f"(best guess {self.shards_nominal})")
        return f"{band} of {self.corpus} ({self.method}: {self.source})"

    def corpus_mismatch(self, task_corpus: str) -> str | None:
        """A loud warning when questions of ``task_corpus`` are split by an exposure of another corpus."""
        task = corpora.corpus_name(task_corpus)
        if task == self.corpus:
            return None
        return (f"WARNING: the questions are projected on {task!r} but this checkpoint read {self.corpus!r} "
                f"({self.corpus_source}); its shard numbers say nothing about {task!r} documents, so the "
                "seen/unseen split and frequency read are meaningless for these questions")

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_stated(cls, shards_seen: int | None = None, tokens_read: int | None = None, *,
                    corpus: str = "fineweb", chars_per_token: float | tuple | None = None,
                    vocab_size: int = 65536, shards_downloaded: int | None = None) -> "Exposure":
        """An exposure the user states: a shard count (exact) or tokens read (a band).

        ``tokens_read`` counts tokens the loader took from the corpus; for nanochat's original
        flat loader (every FineWeb-era run without a loader position in its meta) that is
        ``step x total_batch_size``. chars/token: ``chars_per_token`` (one number, or
        low/nominal/high), else the documented band of the corpus for a ``vocab_size`` tokenizer.
        """
        corpus = corpora.corpus_name(corpus)
        if (shards_seen is None) == (tokens_read is None):
            raise NanoKnowInputError("state exactly one of shards_seen or tokens_read", field="shards_seen")
        facts = corpora.corpus_facts(corpus)
        train_shards = train_shards_of(facts, shards_downloaded)
        if shards_seen is not None:
            if isinstance(shards_seen, bool) or not isinstance(shards_seen, int) or shards_seen < 0:
                raise NanoKnowInputError(f"must be a non-negative integer, got {shards_seen!r}", field="shards_seen")
            notes = []
            if facts is not None and shards_seen > facts.num_shards:
                raise NanoKnowInputError(f"{shards_seen} exceeds the {facts.num_shards} shards of {corpus}",
                                         field="shards_seen")
            if train_shards is not None and shards_seen > train_shards:
                notes.append(f"shards_seen {shards_seen} includes shard {train_shards}, which nanochat keeps "
                             "for validation and never trains on")
            return cls(shards_seen, shards_seen, corpus=corpus, source=f"stated shards_seen={shards_seen}",
                       method="stated", corpus_source="stated", notes=tuple(notes))
        if isinstance(tokens_read, bool) or not isinstance(tokens_read, int) or tokens_read < 0:
            raise NanoKnowInputError(f"must be a non-negative integer, got {tokens_read!r}", field="tokens_read")
        facts = corpora.require_read_order(corpus, what="turning tokens into shards")
        cpt = chars_per_token_band(facts, vocab_size, chars_per_token, where=dict(field="chars_per_token"))
        return exposure_from_tokens(tokens_read, facts, cpt, train_shards=train_shards,
                                    source=f"stated tokens_read={tokens_read:,}", method="stated",
                                    corpus_source="stated")

    @classmethod
    def from_checkpoint(cls, folder: str | Path, step: int | None = None, **kwargs) -> "Exposure":
        """The exposure a nanochat checkpoint's own files record (see :mod:`.checkpoint_exposure`)."""
        from .checkpoint_exposure import exposure_from_checkpoint

        return exposure_from_checkpoint(folder, step, **kwargs)

    # -- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        data = asdict(self)
        data["notes"] = list(self.notes)
        for name in ("chars_per_token", "chars_per_shard"):
            if data[name] is not None:
                data[name] = list(data[name])
        return data

    @classmethod
    def from_dict(cls, data: dict, *, file: str | Path | None = None) -> "Exposure":
        if not isinstance(data, dict):
            raise NanoKnowInputError("an exposure must be a JSON object", file=file)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise NanoKnowInputError(f"unknown exposure fields {unknown}", file=file, field=unknown[0])
        for name in ("shards_surely_read", "shards_possibly_read"):
            if name not in data:
                raise NanoKnowInputError("missing", file=file, field=name)
        try:
            return cls(**{k: (tuple(v) if k == "notes" else v) for k, v in data.items()})
        except NanoKnowInputError as err:
            raise NanoKnowInputError(err.reason, file=file, field=err.field) from err
        except TypeError as err:
            raise NanoKnowInputError(f"bad exposure fields: {err}", file=file) from err

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, *, file: str | Path | None = None) -> "Exposure":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise NanoKnowInputError(f"not valid JSON ({err.msg})", file=file, line=err.lineno) from err
        return cls.from_dict(data, file=file)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Exposure":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise NanoKnowInputError(f"cannot read exposure file: {err.strerror}", file=path) from err
        return cls.from_json(text, file=path)


def train_shards_of(facts: corpora.CorpusFacts | None, shards_downloaded: int | None) -> int | None:
    """Shards nanochat trains on: all files present but the last (its validation split)."""
    if shards_downloaded is not None:
        if isinstance(shards_downloaded, bool) or not isinstance(shards_downloaded, int) or shards_downloaded < 2:
            raise NanoKnowInputError(f"must be an integer >= 2 (train shards + 1 validation shard), got "
                                     f"{shards_downloaded!r}", field="shards_downloaded")
        return shards_downloaded - 1
    return facts.num_shards - 1 if facts is not None else None


def chars_per_token_band(facts: corpora.CorpusFacts, vocab_size: int | None, stated, *, where: dict):
    """(low, nominal, high) chars/token: stated (one number or three), else the corpus default for the vocab."""
    if stated is not None:
        values = (stated, stated, stated) if isinstance(stated, (int, float)) else tuple(stated)
        if len(values) != 3 or not all(isinstance(v, (int, float)) and v > 0 for v in values) \
                or not values[0] <= values[1] <= values[2]:
            raise NanoKnowInputError(f"chars_per_token must be a positive number or low <= nominal <= high, "
                                     f"got {stated!r}", field="chars_per_token")
        return tuple(float(v) for v in values)
    if vocab_size in facts.chars_per_token:
        return facts.chars_per_token[vocab_size]
    documented = ", ".join(f"{v:,}" for v in facts.chars_per_token) or "none"
    raise NanoKnowInputError(
        f"no documented chars/token for a {vocab_size}-token tokenizer on {facts.name} (documented: "
        f"{documented}); measure it on the corpus (--corpus) or state it (--chars-per-token)", **where)


def exposure_from_tokens(tokens: int, facts: corpora.CorpusFacts, cpt: tuple[float, float, float], *,
                         train_shards: int | None, source: str, method: str, corpus_source: str,
                         shard_chars: list[int] | None = None, **extra) -> Exposure:
    """The band for ``tokens`` read: characters = tokens x chars/token, then shards."""
    from .band import band_from_shard_sizes

    chars = tuple(tokens * c for c in cpt)
    if shard_chars is not None:
        band = band_from_shard_sizes(chars, shard_chars)
        cps = (float(min(shard_chars)), float(max(shard_chars)))
    else:
        band = band_from_chars(chars, facts.chars_per_shard, nominal_chars_per_shard=facts.nominal_chars_per_shard)
        cps = facts.chars_per_shard
    notes = list(extra.pop("notes", ()))
    if train_shards is not None:
        if band.possibly > train_shards:
            notes.append(f"the estimate reaches past the {train_shards} train shards: the run may have looped "
                         "over them (nanochat starts another epoch)")
        band = band.capped(train_shards)
    return Exposure(band.surely, band.possibly, corpus=facts.name, source=source, method=method,
                    corpus_source=corpus_source, shards_nominal=band.nominal, tokens_read=tokens,
                    chars_per_token=cpt, chars_per_shard=cps, notes=tuple(notes), **extra)
