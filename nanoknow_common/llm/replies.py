"""What a model's reply says, without its thinking: shared by the stage-2 verifier and the answer judge."""

from __future__ import annotations

import re

_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_CLOSE_THINK = re.compile(r"</think(?:ing)?>", re.I)
_OPEN_THINK = re.compile(r"<think(?:ing)?>", re.I)


def visible_text(raw: str) -> str | None:
    """A model's output without thinking blocks; None when a thinking block never closed."""
    text = _THINK.sub(" ", raw)
    if _CLOSE_THINK.search(text):  # a server that strips the opening tag
        text = _CLOSE_THINK.split(text)[-1]
    if _OPEN_THINK.search(text):  # thinking never closed: no answer was given
        return None
    return text.strip()
