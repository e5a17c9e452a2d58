"""Exposure-aware NanoKnow: which part of the corpus a nanochat checkpoint read (issue 12).

nanochat reads its pre-training shards ``shard_00000``, ``shard_00001``, ... in order (the last
file is validation), so a checkpoint's exposure is a prefix of shards, and a question's qrels
doc ids (``shard_<shard>_<row>``) say whether its evidence was in that prefix.

API:

* :class:`Exposure` -- the band ``shards_surely_read`` <= ``shards_possibly_read``, the corpus,
  and where it came from; ``Exposure.from_checkpoint(dir, step=None)``,
  ``Exposure.from_stated(shards_seen=None, tokens_read=None)``, ``to_json`` / ``from_json`` /
  ``save`` / ``load``, ``status(shards)``, ``frequency_read(shards)``, ``corpus_mismatch(name)``.
* :func:`resolve_exposure` -- an exposure from lm-eval ``--metadata`` keys (``shards_seen``,
  ``tokens_read``, ``exposure_from``, ...), or an error that says how to give one.
* :func:`question_exposures` -- per-question :class:`QuestionExposure` records (status
  seen / uncertain / unseen / unsupported, frequency read, frequency in corpus, first shard);
  :func:`seen_qids` / :func:`unseen_qids` -- the qid sets the seen/unseen tasks score;
  :func:`summarize` / :func:`format_summary` -- counts, shares and medians.
* ``nanoknow exposure`` -- the command (:mod:`.cli`).
"""

from .checkpoint_exposure import exposure_from_checkpoint
from .exposure import SEEN, UNCERTAIN, UNSEEN, UNSUPPORTED, Exposure
from .question_exposure import (ExposureSummary, QuestionExposure, format_summary, question_exposures,
                                records_from_qrels, seen_qids, summarize, unseen_qids)
from .resolve import HOW_TO, METADATA_KEYS, resolve_exposure

__all__ = ["Exposure", "ExposureSummary", "QuestionExposure", "SEEN", "UNCERTAIN", "UNSEEN", "UNSUPPORTED",
           "HOW_TO", "METADATA_KEYS", "exposure_from_checkpoint", "format_summary", "question_exposures",
           "records_from_qrels", "resolve_exposure", "seen_qids", "summarize", "unseen_qids"]
