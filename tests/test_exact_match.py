"""Exact match must score exactly as pyserini's DPR ``has_answers`` (the NanoKnow paper's rule)."""

import random

import pytest
from pyserini.eval.evaluate_dpr_retrieval import SimpleTokenizer
from pyserini.eval.evaluate_dpr_retrieval import has_answers as pyserini_has_answers

from nanoknow_tasks.has_answer import answer_tokens, has_answer

PIECES = [
    "Paris", "paris,", "PARIS.", "Paris, Texas", "the", "The Beatles", "beatles'", "1972",
    "14 December 1972", "December 1972 UTC", "3.14", "3,000", "$5", "5%", "U.S.", "U.S.A",
    "Café", "cafe\u0301", "Zürich", "zurich", "naïve", "Ærø", "東京", "東京タワー", "Москва",
    "москва", "İstanbul", "istanbul", "ß", "SS", "don't", "dont", "rock-and-roll", "rock and roll",
    "e-mail", "email", "(1990)", "[note]", "C++", "C#", "A/B", "\u00a0", "\t", "\n", "—", "–",
    "O'Neill", "o’neill", "Mr.", "Dr", "IV", "4th", "fourth", "50 Cent", "2Pac", "9/11", "",
    " ", "...", "\u200b", "emoji 🙂", "🙂", "x²", "x2", "ﬁne", "fine", "Ⅻ", "½", "1/2",
]


def _random_text(rng: random.Random, max_pieces: int) -> str:
    return " ".join(rng.choice(PIECES) for _ in range(rng.randint(0, max_pieces)))


def _cases(count: int = 600, seed: int = 13):
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        answers = [_random_text(rng, 3) for _ in range(rng.randint(0, 3))]
        prediction = _random_text(rng, 8)
        if answers and rng.random() < 0.4:  # make a good share of positives
            prediction = f"{_random_text(rng, 3)} {rng.choice(answers).upper()} {_random_text(rng, 2)}"
        cases.append((prediction, answers))
    cases += [("", ["anything"]), ("", [""]), ("anything", []), ("Answer: none", [" "]),
              ("The capital is Paris.", ["Paris"]), ("Parisian food", ["Paris"]),
              ("cafe\u0301 au lait", ["Café"]), ("In 1972.", ["1972"]), ("19720", ["1972"])]
    return cases


def test_parity_with_pyserini_has_answers():
    tokenizer = SimpleTokenizer()
    cases = _cases()
    mismatches = [(p, a) for p, a in cases
                  if has_answer(p, a) != pyserini_has_answers(p, a, tokenizer, regex=False)]
    assert not mismatches, mismatches[:5]
    positives = sum(has_answer(p, a) for p, a in cases)
    # the generated set must exercise both outcomes in earnest
    assert 0.2 * len(cases) < positives < 0.8 * len(cases)


@pytest.mark.parametrize("prediction, answers, expected", [
    ("He was born in Paris, France.", ["paris"], True),
    ("Parisian", ["Paris"], False),           # whole tokens only
    ("the year 1972", ["December 1972"], False),
    ("", ["x"], False),
    ("anything", [""], True),                 # an answer without tokens matches (original rule)
])
def test_rule_examples(prediction, answers, expected):
    assert has_answer(prediction, answers) is expected


def test_tokens_are_nfd_lowercased():
    assert answer_tokens("Café, U.S.") == answer_tokens("cafe\u0301 , u . s .")
