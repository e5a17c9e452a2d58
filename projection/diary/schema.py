"""The texts of the diary benchmark: attributes, entries, questions, answers, documents."""

from __future__ import annotations

#: Attribute name -> its two possible values (Prato et al., Table 1), in a fixed order.
ATTRIBUTES: dict[str, tuple[str, str]] = {
    "Location": ("City", "Countryside"),
    "Time": ("Morning", "Evening"),
    "Weather": ("Sunny", "Rain"),
    "Mood": ("Happy", "Sad"),
    "Restfulness": ("Tired", "Rested"),
    "Stress Level": ("Stressed", "Relaxed"),
    "Physical Activity": ("Running", "Weight Training"),
    "Meditated": ("Yes", "No"),
}

MAX_ENTRIES = 8  # entries per diarist: 1..8
MAX_ATTRIBUTES = len(ATTRIBUTES)  # attributes per entry: 1..8

#: Entries of one answer (and of a merged "simplified" document) are separated by a blank line.
ENTRY_SEPARATOR = "\n\n"
#: Between the question and the answer in a training Q/A document (and after the prompt).
QUESTION_ANSWER_SEPARATOR = "\n"


#: How every question starts; the tasks stop generating there (``until`` in ``_diary_base_yaml``).
QUESTION_PREFIX = "Recall all of"


def entry_title(name: str, index: int) -> str:
    """``{name}'s Diary Entry {index}`` (index counts from 1)."""
    return f"{name}'s Diary Entry {index}"


def format_entry(name: str, index: int, attributes: list[tuple[str, str]]) -> str:
    """One diary entry: its title line then ``Attribute: Value`` lines, no trailing newline."""
    return "\n".join([entry_title(name, index)] + [f"{key}: {value}" for key, value in attributes])


def question_for(name: str) -> str:
    """The recall question asked about one diarist."""
    return f"{QUESTION_PREFIX} {name}'s diary entries, in order."


def answer_for(entries: list[str]) -> str:
    """The target answer: the diarist's entries in entry order, separated by blank lines."""
    return ENTRY_SEPARATOR.join(entries)


def qa_document(question: str, answer: str) -> str:
    """A training Q/A document: the question, a newline, the answer."""
    return question + QUESTION_ANSWER_SEPARATOR + answer
