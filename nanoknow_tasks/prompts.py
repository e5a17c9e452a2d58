"""Prompt texts of the NanoKnow tasks (DESIGN.md defaults, as in the NanoKnow paper)."""

from __future__ import annotations

CLOSED_BOOK = "Question: {question}\n\nAnswer:"
WITH_CONTEXT = "Context: {context}\n\nQuestion: {question}\n\nAnswer:"


def closedbook_prompt(doc: dict) -> str:
    """``Question: {q}\\n\\nAnswer:``."""
    return CLOSED_BOOK.format(question=doc["question"])


def context_prompt(doc: dict) -> str:
    """``Context: {c}\\n\\nQuestion: {q}\\n\\nAnswer:`` with the doc's composed ``context``."""
    return WITH_CONTEXT.format(context=doc["context"], question=doc["question"])
