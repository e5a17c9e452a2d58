"""How far into the corpus a run got, as a band of shards: surely read, possibly read.

A band ``(surely, possibly)`` means shards ``0 .. surely-1`` were read by every rank and shards
``possibly ..`` by none; shards in between may or may not have been. ``nominal`` is the single
best guess (the number of shards the run touched by nanochat's own arithmetic).

Two sources:

* a loader position (``dataloader_state_dict`` in newer metas): rank 0 was in train file
  ``pq_idx``; the other ranks read the same file's row groups strided by rank (row group
  ``rank``, ``rank + world``, ...), so they are in the same file too, give or take their drift:
  every rank consumes the same tokens per step, but row groups differ in length, so a rank can
  run a few of its own row groups ahead of or behind rank 0. :data:`RANK_DRIFT_SHARDS` covers it.
* a token count (older metas: ``step x total_batch_size``): characters read = tokens x
  chars/token, shards = characters / chars per shard, each constant a (low, high) band, plus
  the same drift margin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from nanoknow_common.errors import NanoKnowInputError

#: Shards of slack on each side for ranks that drift apart (a few row groups of their own,
#: i.e. a few times the world size of 1,024-document row groups, below one ~53-row-group shard
#: for the runs of this size).
RANK_DRIFT_SHARDS = 1


@dataclass(frozen=True)
class ShardBand:
    """Shards ``0..surely-1`` surely read, ``0..possibly-1`` possibly read; ``nominal`` best guess."""

    surely: int
    possibly: int
    nominal: int

    def __post_init__(self):
        if not 0 <= self.surely <= self.nominal <= self.possibly:
            raise ValueError(f"inconsistent band {self}")

    def capped(self, train_shards: int) -> "ShardBand":
        """The band with no bound past ``train_shards`` (the validation shard is never trained on)."""
        return ShardBand(min(self.surely, train_shards), min(self.possibly, train_shards),
                         min(self.nominal, train_shards))


def band_from_loader_state(pq_idx: int, *, epoch: int = 1, drift: int = RANK_DRIFT_SHARDS) -> ShardBand:
    """Band for rank 0 reading train file ``pq_idx`` (0-based) in its ``epoch``-th pass.

    In a second or later pass every train file was read in the first one, and ``pq_idx`` is a
    position in a later pass: shards ``0..pq_idx`` surely read, how many more exist is not in
    the meta (the caller caps ``possibly`` with the number of train shards when it knows it).
    """
    if epoch > 1:
        return ShardBand(pq_idx + 1, pq_idx + 1, pq_idx + 1)
    return ShardBand(max(0, pq_idx - drift), pq_idx + 1 + drift, pq_idx + 1)


def band_from_chars(chars: tuple[float, float, float], chars_per_shard: tuple[float, float], *,
                    nominal_chars_per_shard: float, drift: int = RANK_DRIFT_SHARDS) -> ShardBand:
    """Band for ``(low, nominal, high)`` characters read, with a constant chars-per-shard band."""
    low, nominal, high = chars
    shard_low, shard_high = chars_per_shard
    surely = max(0, math.floor(low / shard_high) - drift)
    possibly = math.ceil(high / shard_low) + drift
    nominal_shards = math.ceil(nominal / nominal_chars_per_shard)
    return ShardBand(surely, possibly, min(max(nominal_shards, surely), possibly))


def band_from_shard_sizes(chars: tuple[float, float, float], shard_chars: Sequence[int], *,
                          drift: int = RANK_DRIFT_SHARDS) -> ShardBand:
    """Band for characters read against measured characters of shards ``0, 1, ...`` in order.

    ``shard_chars`` must reach past ``chars[2]`` (the high bound), else the count of possibly
    read shards would be a guess.
    """
    low, nominal, high = chars
    cumulative, total = [], 0
    for size in shard_chars:
        total += size
        cumulative.append(total)
    if not cumulative or cumulative[-1] < high:
        raise NanoKnowInputError(
            f"the measured shards hold {total:,} characters, fewer than the {high:,.0f} the run may "
            "have read; measure more shards", field="corpus")

    def shards_reached(c: float) -> int:  # shards touched after reading c characters
        return next(i + 1 for i, end in enumerate(cumulative) if end >= c) if c > 0 else 0

    def shards_done(c: float) -> int:  # shards fully read after c characters
        return sum(1 for end in cumulative if end <= c)

    surely = max(0, shards_done(low) - drift)
    possibly = shards_reached(high) + drift
    return ShardBand(surely, possibly, min(max(shards_reached(nominal), surely), possibly))
