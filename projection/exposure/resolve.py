"""One entry point for every caller that is handed an exposure: tasks, report, CLI.

:func:`resolve_exposure` takes what a user can give (lm-eval ``--metadata`` keys or CLI
options) and returns an :class:`Exposure`, or says how to give one.
"""

from __future__ import annotations

from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

from .exposure import Exposure

#: the keys :func:`resolve_exposure` understands (lm-eval ``--metadata`` names)
METADATA_KEYS = ("shards_seen", "tokens_read", "exposure_from", "exposure_step", "checkpoint_corpus",
                 "base_checkpoint", "shards_downloaded", "chars_per_token")

HOW_TO = ("give the checkpoint's exposure: --metadata '{\"shards_seen\": N}' (shards shard_00000.. read), "
          "'{\"tokens_read\": T}', or '{\"exposure_from\": \"<nanochat checkpoint dir or exposure .json>\"}'")


def resolve_exposure(metadata: dict | None) -> Exposure:
    """The exposure described by ``metadata`` (keys :data:`METADATA_KEYS`); raises with :data:`HOW_TO` if none.

    ``exposure_from`` is a nanochat checkpoint folder (read with ``exposure_step``, default its
    latest step) or a JSON file written by ``nanoknow exposure --save-exposure``.
    ``checkpoint_corpus`` states the corpus the checkpoint read (default: inferred, else fineweb).
    """
    metadata = dict(metadata or {})
    given = [k for k in ("shards_seen", "tokens_read", "exposure_from") if metadata.get(k) is not None]
    if not given:
        raise NanoKnowInputError("this task needs the evaluated checkpoint's exposure; " + HOW_TO, field="metadata")
    if len(given) > 1:
        raise NanoKnowInputError(f"give only one of {given}", field=given[1])
    corpus = metadata.get("checkpoint_corpus")
    downloaded = _as_int(metadata, "shards_downloaded")
    if given[0] == "exposure_from":
        source = Path(str(metadata["exposure_from"])).expanduser()
        if source.is_file():
            exposure = Exposure.load(source)
            if corpus is not None and exposure.corpus != corpus:
                raise NanoKnowInputError(f"the exposure file says corpus {exposure.corpus!r}, metadata says "
                                         f"{corpus!r}", file=source, field="corpus")
            return exposure
        return Exposure.from_checkpoint(source, _as_int(metadata, "exposure_step"), corpus=corpus,
                                        base_checkpoint=metadata.get("base_checkpoint"),
                                        shards_downloaded=downloaded,
                                        chars_per_token=metadata.get("chars_per_token"))
    stated = dict(corpus=corpus or "fineweb", shards_downloaded=downloaded)
    if given[0] == "shards_seen":
        return Exposure.from_stated(shards_seen=_as_int(metadata, "shards_seen"), **stated)
    return Exposure.from_stated(tokens_read=_as_int(metadata, "tokens_read"),
                                chars_per_token=metadata.get("chars_per_token"), **stated)


def _as_int(metadata: dict, key: str) -> int | None:
    value = metadata.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():  # lm-eval passes CLI values through as JSON
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NanoKnowInputError(f"must be an integer, got {value!r}", field=key)
    return value
