"""Stage 2: an LLM judge decides whether a matched passage truly answers the question.

The judge sees the question, up to 5 gold answers and the ~200-word window around the match,
and answers ``TRUE: <reason>`` or ``COINCIDENTAL: <reason>`` (DESIGN.md). Parsing is robust to
thinking blocks, markdown, case and extra text; an answer with no verdict is ``UNPARSED`` (the
caller counts and reports it, it is never taken as a silent "false").

Public: :func:`verifier_messages`, :func:`parse_verdict`, :class:`Verdict`, :func:`judge`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nanoknow_common.llm.base import TextGenerator
from nanoknow_common.llm.replies import visible_text

MAX_ANSWERS_SHOWN = 5
TRUE, COINCIDENTAL, UNPARSED = "TRUE", "COINCIDENTAL", "UNPARSED"

SYSTEM_PROMPT = (
    "You check whether a passage from a pre-training corpus really contains the answer to a "
    "quiz question. Be strict: reply TRUE only when the passage itself directly answers the "
    "question; if the expected answer only appears by chance or in another sense, reply "
    "COINCIDENTAL."
)

USER_TEMPLATE = (
    "QUESTION: {question}\n"
    "EXPECTED ANSWERS: {answers}\n\n"
    "PASSAGE:\n{passage}\n\n"
    "Does this passage directly answer the question?\n"
    "Reply with TRUE: <reason> or COINCIDENTAL: <reason>"
)


def verifier_messages(question: str, answers: list[str], passage: str) -> list[dict]:
    """The chat sent to the judge for one candidate."""
    shown = ", ".join(f'"{a}"' for a in answers[:MAX_ANSWERS_SHOWN])
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": USER_TEMPLATE.format(question=question, answers=shown, passage=passage)}]


@dataclass(frozen=True)
class Verdict:
    """The judge's decision on one candidate."""

    label: str    # TRUE, COINCIDENTAL or UNPARSED
    reason: str   # the judge's reason (text after the label), or the raw output when unparsed

    @property
    def supported(self) -> bool | None:
        """True / False, or None when the output could not be parsed."""
        return None if self.label == UNPARSED else self.label == TRUE


_LEAD = re.compile(r"^[\s*_#>`\"'\[\(]*(?:(?:answer|verdict|reply|response|judgement|judgment|label)\s*[:\-]\s*)?"
                   r"[\s*_#>`\"'\[\(]*", re.I)
_START = re.compile(r"^(TRUE|COINCIDENTAL|FALSE|YES|NO)\b", re.I)
_ANYWHERE = re.compile(r"\b(NOT\s+TRUE|TRUE|COINCIDENTAL(?:LY)?|FALSE)\b", re.I)
_NEGATIVE = {"COINCIDENTAL", "COINCIDENTALLY", "FALSE", "NO"}


def _reason(text: str, end: int) -> str:
    return text[end:].lstrip(" \t*_:-.,)]\"'`").strip()


def parse_verdict(output: str) -> Verdict:
    """Parse a judge output: the label at the start wins, else the first TRUE/COINCIDENTAL in it."""
    raw = output or ""
    text = visible_text(raw)
    if text is None:
        return Verdict(UNPARSED, raw.strip())
    lead = _LEAD.match(text)
    body = text[lead.end():] if lead else text
    start = _START.match(body)
    if start:
        word = start.group(1).upper()
        label = COINCIDENTAL if word in _NEGATIVE else TRUE
        return Verdict(label, _reason(body, start.end()))
    found = _ANYWHERE.search(text)
    if found:
        word = re.sub(r"\s+", " ", found.group(1).upper())
        label = TRUE if word == "TRUE" else COINCIDENTAL
        return Verdict(label, _reason(text, found.end()))
    return Verdict(UNPARSED, raw.strip())


def judge(backend: TextGenerator, items: list[tuple[str, list[str], str]], *,
          max_new_tokens: int = 64, mode: str = "generate") -> list[tuple[Verdict, str]]:
    """``(verdict, raw output)`` for each ``(question, answers, passage)``, in order.

    ``mode="generate"``: the judge writes its answer, which is parsed. ``mode="choose"``
    (backends with a ``choose`` method, i.e. ``hf``): the label is the more likely of TRUE and
    COINCIDENTAL as the reply's first token, for models too small to follow the reply format;
    the raw output then records the two probabilities.
    """
    if not items:
        return []
    if mode == "choose":
        if not hasattr(backend, "choose"):
            raise ValueError(f"the {backend.name} backend cannot score choices; use --judge-mode generate")
        picked = backend.choose([verifier_messages(q, a, p) for q, a, p in items], [TRUE, COINCIDENTAL])
        return [(Verdict(label, ""), f"{label} (constrained choice: P(TRUE)={probs[0]:.4f}, "
                                      f"P(COINCIDENTAL)={probs[1]:.4f})") for label, probs in picked]
    if mode != "generate":
        raise ValueError(f"unknown judge mode {mode!r}")
    outputs = backend.generate([verifier_messages(q, a, p) for q, a, p in items], max_new_tokens=max_new_tokens)
    return [(parse_verdict(out), out) for out in outputs]
