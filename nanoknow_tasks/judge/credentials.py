"""Keep credentials out of lm-eval metadata: lm-eval copies ``--metadata`` (and ``--model_args``)
into every task's config, which ``results_*.json`` stores and ``--hf_hub_log_args`` publishes.

:func:`refuse_credentials` rejects any setting whose name looks like a credential; the judge
reads its key from the environment only (``NANOKNOW_JUDGE_API_KEY``, ``OPENAI_API_KEY``).
"""

from __future__ import annotations

import re

from nanoknow_common.errors import NanoKnowInputError

#: Name parts that always mean a credential.
_SECRET_PARTS = {"secret", "secrets", "password", "passwd", "passphrase", "credential", "credentials",
                 "apikey", "bearer"}
#: Words before ``token`` or ``key`` that name a credential (``hf_token``, ``api_key``...).
_KEY_OWNERS = {"api", "access", "auth", "private", "secret", "openai", "hf", "hub", "bearer"}
#: Words before ``token`` that name a special token of a tokenizer, not a credential
#: (``add_bos_token`` and ``prefix_token_id`` are ordinary model arguments).
_SPECIAL_TOKENS = {"bos", "eos", "pad", "unk", "sep", "cls", "mask", "stop", "prefix", "special"}
ENV_HINT = "NANOKNOW_JUDGE_API_KEY or OPENAI_API_KEY"


def looks_like_credential(name: str) -> bool:
    """Whether a setting called ``name`` probably holds a secret (``judge_api_key``, ``hf_token``...)."""
    parts = [p for p in re.split(r"[^a-z0-9]+", str(name).lower()) if p]
    if any(p in _SECRET_PARTS for p in parts):
        return True
    for i, part in enumerate(parts):
        before = parts[i - 1] if i else ""
        if part == "token" and before not in _SPECIAL_TOKENS:
            return True
        if part == "key" and (before in _KEY_OWNERS or len(parts) == 1):
            return True
    return False


def refuse_credentials(settings: dict | None, *, within: str | None = None) -> None:
    """Raise :class:`NanoKnowInputError` naming the first key-like setting (never its value);
    ``within`` names the setting that holds ``settings`` (e.g. ``judge_options``)."""
    for name in (settings or {}):
        if isinstance(name, str) and looks_like_credential(name):
            raise NanoKnowInputError(
                "looks like a credential, and lm-eval writes --metadata (and --model_args) into "
                f"results_*.json: set it in the environment instead (the judge reads {ENV_HINT})",
                field=f"{within}.{name}" if within else name)
