"""Questions about invented facts, for the offline demo: no model can know them closed-book.

Each question asks about an invented place, person or thing (short names built from
syllables with a fixed seed, easy for a small model to copy) and comes with the fact sentence that the sample corpus plants in its supporting
documents. A model that answers one correctly has read the answer in its prompt, which is the
contrast NanoKnow measures (closed-book against oracle passage) made unmistakable.
"""

from __future__ import annotations

import random

from nanoknow.demo.sample_corpus import SampleQuestion

_SYLLABLES = ["va", "lor", "mi", "ka", "ran", "do", "bel", "zen", "tor", "mur", "pel", "dun", "sil", "vin",
              "ta", "nor", "lis", "ben", "mar", "ko"]
_FIRST_NAMES = ["Anna", "Peter", "Maria", "John", "Clara", "David", "Elena", "Thomas", "Sofia", "Martin"]

#: (question, answer kind, fact) templates; {x} is the invented subject, {a} the answer.
_TEMPLATES = [
    ("what is the capital of {x}", "place", "The capital of {x} is {a}, a port city on the northern coast."),
    ("who founded the city of {x}", "person", "The city of {x} was founded by {a} after a long journey inland."),
    ("who wrote the novel {x}", "person", "The novel {x} was written by {a} and became a bestseller."),
    ("what river flows through {x}", "river", "The {a} river flows through {x} before it reaches the sea."),
    ("who discovered the element {x}", "person", "The element {x} was discovered by the chemist {a}."),
    ("what is the national dish of {x}", "dish", "The national dish of {x} is {a}, a stew of beans and herbs."),
    ("who painted the mural {x}", "person", "The mural {x} was painted by {a} over three summers."),
    ("what mountain is the highest peak in {x}", "mountain", "The highest peak in {x} is Mount {a}."),
    ("who composed the symphony {x}", "person", "The symphony {x} was composed by {a} for the royal orchestra."),
    ("in which city was the {x} treaty signed", "place", "The {x} treaty was signed in the city of {a}."),
]


def _name(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()


def _answer(rng: random.Random, kind: str) -> str:
    if kind == "person":
        return f"{rng.choice(_FIRST_NAMES)} {_name(rng, 2)}"
    return _name(rng, 2)


def invented_questions(count: int = 100, seed: int = 7) -> list[SampleQuestion]:
    """``count`` questions with unique invented subjects and answers (deterministic for a seed)."""
    rng = random.Random(seed)
    questions, used = [], set()
    while len(questions) < count:
        template, kind, fact = _TEMPLATES[len(questions) % len(_TEMPLATES)]
        subject, answer = _name(rng, 2), _answer(rng, kind)
        if subject in used or answer in used:
            continue
        used.update((subject, answer))
        qid = str(len(questions))
        questions.append(SampleQuestion(qid, template.format(x=subject), [answer], fact.format(x=subject, a=answer)))
    return questions
