"""Where the NanoKnow question/answer/qrels files are: one resolution order for every caller.

explicit argument (or lm-eval ``--metadata '{"data_dir": ...}'``) -> ``$NANOKNOW_DATA_DIR``
-> the user cache that ``nanoknow data fetch`` fills -> a clear error saying how to get them.
"""

from __future__ import annotations

import os
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.paths import user_cache_dir

ENV_VAR = "NANOKNOW_DATA_DIR"


def default_fetch_dir() -> Path:
    """Where ``nanoknow data fetch`` writes when no ``--dest`` is given."""
    return user_cache_dir() / "questions-and-qrels"


def resolve_data_dir(explicit: str | Path | None = None) -> Path:
    """Return the NanoKnow data root by the resolution order above, or raise with a remedy."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_dir():
            raise NanoKnowInputError(f"NanoKnow data directory {path} does not exist", field="data_dir")
        return path
    if os.environ.get(ENV_VAR):
        path = Path(os.environ[ENV_VAR]).expanduser()
        if not path.is_dir():
            raise NanoKnowInputError(f"${ENV_VAR} points to {path}, which does not exist")
        return path
    cached = default_fetch_dir()
    if any(cached.glob("*/answers.nanoknow-*.jsonl")):
        return cached
    raise NanoKnowInputError(
        "NanoKnow questions/answers/qrels not found. Run `nanoknow data fetch` (downloads them to "
        f"{cached}), or set ${ENV_VAR}, or pass --metadata '{{\"data_dir\": \"/path\"}}' to lm_eval."
    )
