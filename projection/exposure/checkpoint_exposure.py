"""Read a nanochat checkpoint's exposure from its own files (``meta_<step>.json``, ``optim_*``).

What nanochat's ``scripts/base_train.py`` writes into ``meta_<step:06d>.json``, by date:

* 2025-10-13 (initial commit 3a5e0bc) to 2025-11-13: ``step``, ``val_bpb``, ``model_config``,
  ``user_config`` (every setting: ``depth``, ``total_batch_size``, ``device_batch_size``,
  ``max_seq_len``, ``num_iterations``, ...), ``device_batch_size``, ``max_seq_len``. The loader
  was the flat one (every token trained on), so tokens read = ``step x total_batch_size``.
* 2025-11-13 (c6abcdf, resumable training) on: also ``dataloader_state_dict`` =
  ``{"pq_idx", "rg_idx"}`` (rank 0's train file index and row group) and ``loop_state``;
  2026-01-13 (43c29dd) adds ``"epoch"``; 2026-02-16 (788dade) adds top-level ``total_batch_size``.
* 2026-03-04 (324e69c): same fields, corpus ClimbMix; 2026-03-09 (6ed7d1d) replaces
  ``user_config.warmup_ratio`` by ``warmup_steps``.

Mid-training and SFT metas hold ``user_config`` with ``model_tag`` / ``model_step`` (the base
checkpoint they loaded; ``step`` in the October mid_train) but no data position; the October
``chat_sft`` and every ``chat_rl`` meta hold neither. nanochat lays checkpoints out as
``<base_dir>/{base,mid,chatsft,chatrl}_checkpoints/<model_tag>/``, which is how a fine-tuned
checkpoint's base run is found.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

from . import corpora
from .band import band_from_loader_state
from .exposure import Exposure, train_shards_of, chars_per_token_band, exposure_from_tokens

log = logging.getLogger(__name__)

_META_FILE = re.compile(r"^meta_(\d+)\.json$")
_MODEL_FILE = re.compile(r"^model_(\d+)\.pt$")
#: user_config.eval_tokens defaults of base_train.py: before and at the ClimbMix switch (324e69c)
_FINEWEB_EVAL_TOKENS = (20 * 524288, 40 * 524288)
_CLIMBMIX_EVAL_TOKENS = 80 * 524288
_CLIMBMIX_FALLBACK_NOTE = ("nanochat falls back to the old FineWeb-Edu shards when the ClimbMix folder is "
                           "missing (nanochat/dataset.py list_parquet_files); state the corpus if this run did")


def meta_steps(folder: Path) -> list[int]:
    """Steps that have a ``meta_<step>.json`` in ``folder``, ascending."""
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _META_FILE.match(p.name)))


def read_meta_file(folder: Path, step: int | None) -> tuple[int, Path, dict]:
    """(step, path, meta) of ``step`` (default: the latest) in a checkpoint folder."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise NanoKnowInputError("no such checkpoint folder", file=folder, field="checkpoint")
    steps = meta_steps(folder)
    if not steps:
        raise NanoKnowInputError("no meta_<step>.json: not a nanochat checkpoint folder", file=folder,
                                 field="checkpoint")
    if step is None:
        step = steps[-1]
    elif step not in steps:
        raise NanoKnowInputError(f"no meta for step {step}; steps with a meta: {steps}", file=folder, field="step")
    path = folder / f"meta_{step:06d}.json"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise NanoKnowInputError(f"unreadable meta json: {err}", file=path) from err
    if not isinstance(meta, dict):
        raise NanoKnowInputError("meta must be a JSON object", file=path)
    return step, path, meta


def _int_field(value, path: Path, name: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        got = "missing" if value is None else repr(value)
        raise NanoKnowInputError(f"expected an integer >= {minimum}, got {got}", file=path, field=name)
    return value


def is_base_meta(meta: dict, folder: Path) -> bool:
    """A pre-training checkpoint: loader state, base_train's ``user_config.depth``, or nanochat's base folder."""
    user_config = meta.get("user_config")
    return ("dataloader_state_dict" in meta or (isinstance(user_config, dict) and "depth" in user_config)
            or folder.parent.name == "base_checkpoints")


def infer_corpus(meta: dict) -> tuple[str, str] | None:
    """(corpus, reason) from the facts of a base meta that date it before or after the switch, else None."""
    if "dataloader_state_dict" not in meta:
        return "fineweb", ("no dataloader_state_dict: written by base_train.py before 2025-11-13 (nanochat "
                           "c6abcdf), the FineWeb-Edu era")
    user_config = meta.get("user_config") if isinstance(meta.get("user_config"), dict) else {}
    if "warmup_steps" in user_config:
        return "climbmix", ("user_config.warmup_steps: base_train.py from 2026-03-09 (nanochat 6ed7d1d), after the "
                            f"{corpora.CLIMBMIX_SWITCH_DATE} switch to ClimbMix")
    if user_config.get("eval_tokens") == _CLIMBMIX_EVAL_TOKENS:
        return "climbmix", (f"user_config.eval_tokens={_CLIMBMIX_EVAL_TOKENS:,}: the default set by the switch to "
                            "ClimbMix (nanochat 324e69c)")
    if "warmup_ratio" in user_config or user_config.get("eval_tokens") in _FINEWEB_EVAL_TOKENS:
        which = "warmup_ratio" if "warmup_ratio" in user_config else f"eval_tokens={user_config['eval_tokens']:,}"
        return "fineweb", (f"user_config.{which}: base_train.py arguments before the "
                           f"{corpora.CLIMBMIX_SWITCH_DATE} switch to ClimbMix")
    return None


def _decide_corpus(meta: dict, stated: str | None, notes: list[str]) -> tuple[str, str]:
    inferred = infer_corpus(meta)
    if stated is not None:
        stated = corpora.corpus_name(stated)
        if inferred is not None and inferred[0] != stated:
            notes.append(f"stated corpus {stated!r} overrides {inferred[0]!r} inferred from the meta ({inferred[1]})")
        return stated, "stated"
    if inferred is None:
        notes.append("the meta does not date the run; assumed fineweb (state the corpus to be sure)")
        return "fineweb", "assumed (no dating fact in the meta)"
    if inferred[0] == "climbmix":
        notes.append(_CLIMBMIX_FALLBACK_NOTE)
    return inferred


def world_size_from_optim_files(folder: Path, step: int) -> int | None:
    """Ranks of the run: ``optim_<step>_rank<r>.pt`` files (one per rank since nanochat c6abcdf)."""
    ranks = list(folder.glob(f"optim_{step:06d}_rank*.pt"))
    return len(ranks) or None


def find_tokenizer(folder: Path) -> Path | None:
    """``tokenizer.pkl`` next to the checkpoint, in ``tokenizer/``, or in nanochat's ``<base_dir>/tokenizer/``."""
    for candidate in (folder / "tokenizer.pkl", folder / "tokenizer" / "tokenizer.pkl",
                      folder.parent / "tokenizer" / "tokenizer.pkl",
                      folder.parent.parent / "tokenizer" / "tokenizer.pkl"):
        if candidate.is_file():
            return candidate
    return None


def exposure_from_checkpoint(folder: str | Path, step: int | None = None, *, corpus: str | None = None,
                             base_checkpoint: str | Path | None = None, shards_downloaded: int | None = None,
                             chars_per_token=None, measure_corpus: str | Path | None = None,
                             measure_docs: int = 2000, _depth: int = 0) -> Exposure:
    """The exposure of checkpoint ``folder`` at ``step`` (default: its latest meta).

    Base checkpoints: from the loader position in the meta, else from ``step x total_batch_size``
    (a band). Mid/SFT checkpoints: the exposure of the base checkpoint their ``user_config``
    names (``base_checkpoint`` overrides or supplies it). ``corpus`` states the corpus (default:
    inferred from the meta). ``shards_downloaded`` is the number of shard files the run had (its
    last one is validation). ``measure_corpus`` (local shards) measures chars per shard and, with
    the checkpoint's tokenizer, chars/token for token-count estimates.
    """
    folder = Path(folder).expanduser()
    step, meta_path, meta = read_meta_file(folder, step)
    if not is_base_meta(meta, folder):
        return _derived_exposure(folder, step, meta_path, meta, corpus=corpus, base_checkpoint=base_checkpoint,
                                 shards_downloaded=shards_downloaded, chars_per_token=chars_per_token,
                                 measure_corpus=measure_corpus, measure_docs=measure_docs, depth=_depth)
    notes: list[str] = []
    name, corpus_source = _decide_corpus(meta, corpus, notes)
    facts = corpora.require_read_order(name, what=f"the exposure of {meta_path}")
    train_shards = train_shards_of(facts, shards_downloaded)
    common = dict(checkpoint=str(folder), step=step, world_size=world_size_from_optim_files(folder, step))
    if "dataloader_state_dict" in meta:
        return _loader_state_exposure(meta, meta_path, facts, train_shards, shards_downloaded is not None,
                                      corpus_source, notes, common)
    return _token_exposure(meta, meta_path, step, facts, train_shards, corpus_source, notes, common,
                           chars_per_token=chars_per_token, measure_corpus=measure_corpus,
                           measure_docs=measure_docs, folder=folder)


def _loader_state_exposure(meta, meta_path, facts, train_shards, downloads_known, corpus_source, notes, common):
    state = meta["dataloader_state_dict"]
    if not isinstance(state, dict):
        raise NanoKnowInputError("expected an object {pq_idx, rg_idx[, epoch]}", file=meta_path,
                                 field="dataloader_state_dict")
    pq_idx = _int_field(state.get("pq_idx"), meta_path, "dataloader_state_dict.pq_idx")
    rg_idx = _int_field(state.get("rg_idx"), meta_path, "dataloader_state_dict.rg_idx")
    epoch = _int_field(state.get("epoch", 1), meta_path, "dataloader_state_dict.epoch", minimum=1)
    if pq_idx >= train_shards:
        raise NanoKnowInputError(f"train file {pq_idx} does not exist: {facts.name} has {train_shards} train shards"
                                 + (" as downloaded" if downloads_known else ""),
                                 file=meta_path, field="dataloader_state_dict.pq_idx")
    band = band_from_loader_state(pq_idx, epoch=epoch)
    if epoch > 1:
        if downloads_known:
            band = dataclasses.replace(band, surely=train_shards, possibly=train_shards, nominal=train_shards)
        else:
            band = dataclasses.replace(band, possibly=train_shards, nominal=train_shards)
            notes.append(f"epoch {epoch}: the run went through all its train shards, but the meta does not say how "
                         "many it had; state shards_downloaded to make the band exact")
    band = band.capped(train_shards)
    notes.append(f"train file index pq_idx is taken as the shard number: nanochat downloads shards "
                 f"0..N-1 and lists them in order")
    source = (f"{meta_path.name} dataloader_state_dict pq_idx={pq_idx} rg_idx={rg_idx} epoch={epoch} "
              f"(rank 0 in shard_{pq_idx:05d})")
    return Exposure(band.surely, band.possibly, corpus=facts.name, source=source, method="loader_state",
                    corpus_source=corpus_source, shards_nominal=band.nominal,
                    loader_state={"pq_idx": pq_idx, "rg_idx": rg_idx, "epoch": epoch}, notes=tuple(notes),
                    **common)


def _token_exposure(meta, meta_path, step, facts, train_shards, corpus_source, notes, common, *,
                    chars_per_token, measure_corpus, measure_docs, folder):
    meta_step = _int_field(meta.get("step"), meta_path, "step")
    if meta_step != step:
        raise NanoKnowInputError(f"step {meta_step} differs from the file name's step {step}", file=meta_path,
                                 field="step")
    user_config = meta.get("user_config") if isinstance(meta.get("user_config"), dict) else {}
    if "total_batch_size" in meta:
        batch, where = meta["total_batch_size"], "total_batch_size"
    else:
        batch, where = user_config.get("total_batch_size"), "user_config.total_batch_size"
    if batch == -1:
        raise NanoKnowInputError("-1 (computed automatically by base_train.py) and no top-level total_batch_size "
                                 "in the meta; state the exposure", file=meta_path, field=where)
    batch = _int_field(batch, meta_path, where, minimum=1)
    rows, seq = meta.get("device_batch_size"), meta.get("max_seq_len")
    if isinstance(rows, int) and isinstance(seq, int) and rows > 0 and seq > 0 and batch % (rows * seq):
        raise NanoKnowInputError(f"{batch:,} is not a multiple of device_batch_size x max_seq_len = {rows * seq:,} "
                                 "(base_train.py asserts it)", file=meta_path, field=where)
    tokens = meta_step * batch
    model_config = meta.get("model_config") if isinstance(meta.get("model_config"), dict) else {}
    vocab = model_config.get("vocab_size")
    shard_chars = None
    if measure_corpus is not None:
        from .measure import measure_chars_per_token, measure_shard_chars

        if chars_per_token is None:
            tokenizer = find_tokenizer(folder)
            if tokenizer is None:
                raise NanoKnowInputError("no tokenizer.pkl next to the checkpoint to measure chars/token with",
                                         file=folder, field="tokenizer")
            chars_per_token = measure_chars_per_token(measure_corpus, tokenizer, max_docs=measure_docs)
            notes.append(f"chars/token measured with {tokenizer} on {measure_corpus}: "
                         + "/".join(f"{v:.3f}" for v in chars_per_token))
        cpt = chars_per_token_band(facts, vocab, chars_per_token, where={})
        shard_chars = measure_shard_chars(measure_corpus, tokens * cpt[2], limit=train_shards)
        notes.append(f"characters per shard measured on {measure_corpus} for shards 0..{len(shard_chars) - 1}")
    else:
        cpt = chars_per_token_band(facts, vocab, chars_per_token,
                                   where=dict(file=meta_path, field="model_config.vocab_size"))
    source = f"{meta_path.name} step={meta_step:,} x {where}={batch:,} = {tokens:,} tokens"
    return exposure_from_tokens(tokens, facts, cpt, train_shards=train_shards, source=source, method="tokens",
                                corpus_source=corpus_source, shard_chars=shard_chars, notes=notes, **common)


def _largest_model_tag(base_root: Path) -> str | None:
    """nanochat's ``find_largest_model``: the largest ``d<N>`` tag, else the newest folder."""
    tags = [p for p in base_root.iterdir() if p.is_dir()] if base_root.is_dir() else []
    depths = [(int(m.group(1)), p.name) for p in tags if (m := re.match(r"d(\d+)", p.name))]
    if depths:
        return max(depths)[1]
    return max(tags, key=lambda p: p.stat().st_mtime).name if tags else None


def _derived_exposure(folder, step, meta_path, meta, *, corpus, base_checkpoint, shards_downloaded,
                      chars_per_token, measure_corpus, measure_docs, depth) -> Exposure:
    """A mid/SFT checkpoint: the exposure of the base checkpoint it was fine-tuned from."""
    if depth >= 3:
        raise NanoKnowInputError("base checkpoint chain longer than 3", file=meta_path, field="user_config.model_tag")
    user_config = meta.get("user_config") if isinstance(meta.get("user_config"), dict) else None
    base_step = None
    if user_config is not None:
        # model_step since 2026-01-13 (7312ec9); the October mid_train called it "step"
        base_step = user_config.get("model_step", user_config.get("step") if "model_tag" in user_config else None)
        if base_step is not None:
            base_step = _int_field(base_step, meta_path, "user_config.model_step")
    if base_checkpoint is not None:
        base_folder = Path(base_checkpoint).expanduser()
        how = f"base checkpoint stated ({base_folder})"
    elif user_config is not None and "model_tag" in user_config:
        tag = user_config["model_tag"]
        base_root = folder.parent.parent / "base_checkpoints"
        if tag is None:  # nanochat then loads the largest d<N> model of base_checkpoints
            tag = folder.name if (base_root / folder.name).is_dir() else _largest_model_tag(base_root)
            how = f"user_config.model_tag=None -> {tag!r} as nanochat picks it"
        else:
            how = f"user_config.model_tag={tag!r}"
        if tag is None or not (base_root / str(tag)).is_dir():
            raise NanoKnowInputError(
                f"this fine-tuned checkpoint names its base run ({how}), but {base_root / str(tag or '<tag>')} "
                "does not exist; give the base checkpoint folder (--base-checkpoint) or state the exposure "
                "(--shards-seen / --tokens-read)", file=meta_path, field="user_config.model_tag")
        base_folder = base_root / str(tag)
    else:
        raise NanoKnowInputError(
            "not a base checkpoint (no dataloader_state_dict, no user_config.depth) and its files do not name the "
            "base run it was fine-tuned from (the October chat_sft and every chat_rl meta lack user_config); "
            "give the base checkpoint folder (--base-checkpoint) or state the exposure (--shards-seen / "
            "--tokens-read)", file=meta_path, field="user_config.model_tag")
    if base_step is None:
        models = sorted(int(m.group(1)) for p in base_folder.iterdir() if (m := _MODEL_FILE.match(p.name))) \
            if base_folder.is_dir() else []
        base_step = models[-1] if models else None  # else the latest meta
    base = exposure_from_checkpoint(base_folder, base_step, corpus=corpus, shards_downloaded=shards_downloaded,
                                    chars_per_token=chars_per_token, measure_corpus=measure_corpus,
                                    measure_docs=measure_docs, _depth=depth + 1)
    source = f"{meta_path} fine-tuned from {base.checkpoint} step {base.step} [{how}]: {base.source}"
    notes = base.notes + ("fine-tuning data (mid-training, SFT) is not counted: only the base run's pre-training "
                          "corpus is",)
    return dataclasses.replace(base, source=source, checkpoint=str(folder), step=step, notes=notes)
