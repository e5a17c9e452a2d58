"""What the LLM judge is asked and how its answer is read.

The judge sees the question, the reference answers and the candidate answer (DESIGN.md) and
must reply with one strict JSON object ``{"correct": true|false, "reason": "..."}``. Parsing
removes thinking blocks (the same rules as the projection verifier) and markdown code fences,
then takes the first JSON object that has a boolean ``correct``. Anything else is
*unparseable*: :attr:`Judgement.correct` is ``None`` and the metric counts it separately.

Public: :func:`answer_judge_messages`, :func:`parse_judgement`, :class:`Judgement`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# The verifier's thinking-block patterns (one definition for both LLM parsers).
from nanoknow_common.llm.replies import visible_text

MAX_ANSWERS_SHOWN = 10
MAX_CANDIDATE_CHARS = 2000

SYSTEM_PROMPT = (
    "You grade answers to quiz questions. You compare a candidate answer with the reference "
    "answers of the question and decide whether the candidate is right. You reply with one "
    "strict JSON object and nothing else."
)

USER_TEMPLATE = (
    "Question: {question}\n"
    "Reference answers (matching any one of them is enough): {answers}\n"
    "Candidate answer: {candidate}\n\n"
    "The candidate is correct when it gives the same answer as one of the references; other "
    "wording, spelling, abbreviations or extra correct detail are fine. It is incorrect when it "
    "gives another answer, contradicts the references, hedges between several answers or does "
    "not answer the question.\n\n"
    "Reply with exactly this JSON and nothing else:\n"
    '{{"correct": true or false, "reason": "<one short sentence>"}}'
)


def answer_judge_messages(question: str, answers: list[str], candidate: str) -> list[dict]:
    """The chat (system + user turn) that asks the judge about one candidate answer."""
    shown = json.dumps([str(a) for a in answers[:MAX_ANSWERS_SHOWN]], ensure_ascii=False)
    candidate = " ".join((candidate or "").split())[:MAX_CANDIDATE_CHARS] or "(no answer)"
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": USER_TEMPLATE.format(question=question.strip(), answers=shown,
                                                             candidate=candidate)}]


@dataclass(frozen=True)
class Judgement:
    """One verdict of the judge."""

    correct: bool | None  # None: the output held no JSON object with a boolean "correct"
    reason: str           # the judge's "reason" (or "explanation"), "" when absent
    raw: str              # the judge's output as received

    @property
    def parsed(self) -> bool:
        """Whether the output could be read."""
        return self.correct is not None


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_DECODER = json.JSONDecoder()


def _json_objects(text: str):
    """Every JSON object found in ``text``: fenced blocks first, then the text itself."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for chunk in candidates:
        start = chunk.find("{")
        while start != -1:
            try:
                value, end = _DECODER.raw_decode(chunk, start)
            except json.JSONDecodeError:
                start = chunk.find("{", start + 1)
                continue
            if isinstance(value, dict):
                yield value
            start = chunk.find("{", end)


def parse_judgement(output: str | None) -> Judgement:
    """Read one judge output; unparseable outputs give ``correct=None`` (never a silent False)."""
    raw = output or ""
    text = visible_text(raw)
    if text:
        for obj in _json_objects(text):
            correct = obj.get("correct")
            if isinstance(correct, bool):
                reason = obj.get("reason", obj.get("explanation", ""))
                return Judgement(correct, str(reason) if reason is not None else "", raw)
    return Judgement(None, "", raw)
