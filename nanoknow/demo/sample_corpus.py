"""``nanoknow make-sample-corpus``: a small FineWeb-like corpus with planted answers.

For each question it writes, with a fixed seed:

* 0-3 *supporting* documents that state the answer in plain English (the question's ``fact``
  sentence for the embedded questions, a sentence built from question and answer otherwise);
* 0-2 *coincidental* documents that contain the answer string in an unrelated sense (a café
  dish, a crossword clue, a spelling list...) together with words of the question, so BM25
  retrieves them (the "Paris, Texas" case);
* plus filler documents of ordinary prose.

Documents are shuffled into ``shard_XXXXX.parquet`` files (column ``text``). Next to them:
``questions.jsonl`` (``qid``, ``question``, ``answer``: the input of ``nanoknow project``)
and ``ground_truth.jsonl`` (``qid``, ``doc_id``, ``kind`` = supporting|coincidental).

Questions come from a NanoKnow data directory (``--data-dir`` / env ``NANOKNOW_DATA_DIR``),
else from the 100 questions embedded in ``projection/sample_data/questions.jsonl``.
"""

from __future__ import annotations

import json
import logging
import random
import re
from dataclasses import dataclass
from pathlib import Path

from projection.corpus.shards import format_doc_id, shard_file_name
from nanoknow_common.errors import NanoKnowInputError

log = logging.getLogger(__name__)

EMBEDDED_QUESTIONS = Path(__file__).with_name("sample_data") / "questions.jsonl"

_STOPWORDS = set("""a an the of in on at to for from by with and or is are was were be been who what
which when where why how many much does do did is it its this that these those there their his her
name called known usually famously first main most largest longest smallest""".split())

FILLER = [
    "The garden looked tidy after a long afternoon of weeding and watering.",
    "Most people find that a short walk after lunch helps them stay alert.",
    "The recipe calls for butter, flour and a little milk, stirred slowly over low heat.",
    "Rain fell softly on the roof while the children finished their homework.",
    "Good study habits include regular breaks, enough sleep and a quiet place to work.",
    "The old bridge over the river was repaired last spring by the town council.",
    "Many readers enjoy keeping a notebook of new words they come across.",
    "A well planned budget can make the end of the month far less stressful.",
    "The museum opens its doors early on weekends for families with young children.",
    "Fresh bread from the bakery on the corner sells out before noon most days.",
    "Cyclists are asked to use lights and bright clothing when riding after dark.",
    "The teacher reminded everyone to bring a packed lunch for the school trip.",
    "Painting a room is easier when the furniture is moved to the middle and covered.",
    "Volunteers cleaned the beach and collected several bags of plastic litter.",
    "The library has started lending tools as well as books to its members.",
    "A cup of tea and a good book make a quiet evening at home feel complete.",
    "Farmers in the valley hope for a dry week so they can bring in the harvest.",
    "The choir practised every Thursday evening in the hall behind the church.",
    "Learning to cook a few simple meals saves money and is good for health.",
    "Her neighbour grows tomatoes, beans and herbs in a row of wooden boxes.",
    "The train was delayed by a fallen tree, so passengers waited on the platform.",
    "Writing a letter by hand has become rare, but many people still treasure them.",
    "The park keeper feeds the ducks each morning before the gates open.",
    "Regular stretching can help prevent stiffness after sitting at a desk all day.",
    "A small kitchen can feel larger with open shelves and light colours.",
    "The market square fills with stalls selling cheese, fruit and flowers.",
    "Some students prefer to revise with friends, while others like to work alone.",
    "The coastal path offers wide views of the cliffs and the grey sea below.",
    "Old photographs remind families of holidays, weddings and birthdays long past.",
    "The bakery owner wakes before dawn to light the ovens and shape the loaves.",
    "Planting trees along busy roads can make the air cleaner and the streets cooler.",
    "A friendly dog greeted visitors at the gate of the little farmhouse.",
    "The new swimming pool has lanes for training and a shallow end for beginners.",
    "Keeping a diary helps some people notice patterns in their mood and sleep.",
    "The town band plays in the park on summer evenings when the weather is fine.",
    "Homemade soup is a simple way to use up vegetables left at the end of the week.",
    "The path through the woods is muddy after rain, so walkers should wear boots.",
    "Children in the village learn to swim in the lake during the warm months.",
    "A tidy desk makes it easier to find papers and to start work in the morning.",
    "The craft fair showed knitted scarves, wooden toys and painted pottery.",
    "Birdwatchers gather at the marsh in autumn to watch flocks heading south.",
    "Saving a little every week adds up to a useful sum by the end of the year.",
    "The hotel staff were praised for their kindness and their excellent breakfasts.",
    "A good map and a charged phone are wise companions on any long hike.",
    "The reading group chose a mystery novel for its next monthly meeting.",
    "Street lights flickered on one by one as the evening grew darker.",
    "The carpenter measured twice and cut once, as his teacher had taught him.",
    "Fresh snow covered the hills, and the roads were quiet for a whole day.",
    "The students built a small weather station on the roof of their school.",
    "Sharing a meal with neighbours is a simple way to build a friendly street.",
]

SUPPORT_INTROS = [
    "", "Here is a fact worth remembering. ", "Our teacher explained it clearly in class. ",
    "Reference books agree on this point. ", "This is a common question in school quizzes. ",
]

SUPPORT_TEMPLATES = [  # for questions without a written fact sentence
    "A common quiz question asks {q}. The correct answer is {a}.",
    "Students are often asked {q}. Teachers explain that the answer is {a}.",
    "If you wonder {q}, the answer is {a}, as most reference books state.",
]

COINCIDENTAL_TEMPLATES = [
    "Our {k1} club met again this week. Someone brought a handmade poster with the words "
    "\"{a}\" painted on it in big letters, though nobody remembered why, and the talk soon "
    "moved on to {k2}.",
    "The crossword in the Sunday paper had a {k1} theme. One clue had the answer {a}, which "
    "puzzled several readers, and another clue was about {k2}.",
    "A new cafe opened downtown, and the owner named the house special \"{a}\" after a family "
    "joke. The menu mentions {k1} and {k2}, but only as decoration.",
    "In the spelling contest the word list included {k1}, {k2} and {a}. The children practised "
    "each word for weeks before the final round.",
    "The racing pigeon that won the {k1} trophy this year is called {a}. Its owner, a retired "
    "postman, says the bird also likes {k2}.",
]


@dataclass
class SampleQuestion:
    qid: str
    question: str
    answers: list[str]
    fact: str | None = None


def load_embedded_questions() -> list[SampleQuestion]:
    """The 100 questions written for this project (``projection/sample_data/questions.jsonl``)."""
    out = []
    with open(EMBEDDED_QUESTIONS, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out.append(SampleQuestion(row["qid"], row["question"], list(row["answer"]), row.get("fact")))
    return out


def load_data_dir_questions(data_dir: Path, dataset: str, corpus_dir: str, limit: int,
                            seed: int) -> list[SampleQuestion]:
    """``limit`` questions drawn (seeded) from a NanoKnow data directory (both splits)."""
    from projection.data.files import load_questions

    questions = []
    for split in ("supported", "unsupported"):
        questions += load_questions(data_dir, dataset, corpus_dir, split)
    questions.sort(key=lambda q: (len(q.qid), q.qid))
    rng = random.Random(seed)
    chosen = rng.sample(questions, min(limit, len(questions)))
    chosen.sort(key=lambda q: (len(q.qid), q.qid))
    return [SampleQuestion(q.qid, q.question, list(q.answers)) for q in chosen]


def _keywords(question: str) -> list[str]:
    words = [w for w in re.findall(r"[a-z][a-z'-]+", question.lower()) if w not in _STOPWORDS and len(w) > 2]
    return words or ["local"]


def _filler(rng: random.Random, n_min: int, n_max: int) -> str:
    return " ".join(rng.sample(FILLER, rng.randint(n_min, n_max)))


def _supporting_text(rng: random.Random, q: SampleQuestion) -> str:
    answer = q.answers[0]
    if q.fact:
        key = rng.choice(SUPPORT_INTROS) + q.fact
    else:
        key = rng.choice(SUPPORT_TEMPLATES).format(q=q.question.rstrip("?"), a=answer)
    return f"{_filler(rng, 2, 5)} {key} {_filler(rng, 2, 5)}"


def _coincidental_text(rng: random.Random, q: SampleQuestion) -> str:
    kws = _keywords(q.question)
    k1, k2 = rng.choice(kws), rng.choice(kws)
    key = rng.choice(COINCIDENTAL_TEMPLATES).format(a=q.answers[0], k1=k1, k2=k2)
    return f"{_filler(rng, 2, 5)} {key} {_filler(rng, 2, 5)}"


def make_sample_corpus(out: Path, questions: list[SampleQuestion], *, shards: int = 2,
                       filler_docs: int = 3000, seed: int = 0, p_supported: float = 0.7,
                       p_coincidental: float = 0.6) -> dict:
    """Write shards, ``questions.jsonl`` and ``ground_truth.jsonl`` into ``out``; return counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if shards < 1:
        raise NanoKnowInputError("need at least one shard", field="--shards")
    rng = random.Random(seed)
    docs: list[tuple[str, str | None, str | None]] = []  # (text, qid, kind)
    for q in questions:
        if rng.random() < p_supported:
            for _ in range(rng.randint(1, 3)):
                docs.append((_supporting_text(rng, q), q.qid, "supporting"))
        if rng.random() < p_coincidental:
            for _ in range(rng.randint(1, 2)):
                docs.append((_coincidental_text(rng, q), q.qid, "coincidental"))
    docs += [(_filler(rng, 4, 10), None, None) for _ in range(filler_docs)]
    rng.shuffle(docs)

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    per_shard = -(-len(docs) // shards)
    truth = []
    for shard in range(shards):
        chunk = docs[shard * per_shard:(shard + 1) * per_shard]
        pq.write_table(pa.table({"text": [t for t, _, _ in chunk]}), out / shard_file_name(shard),
                       row_group_size=1024)
        for row, (_, qid, kind) in enumerate(chunk):
            if qid is not None:
                truth.append({"qid": qid, "doc_id": format_doc_id(shard, row), "kind": kind})
    order = {q.qid: i for i, q in enumerate(questions)}
    truth.sort(key=lambda r: (order[r["qid"]], r["kind"], r["doc_id"]))
    with open(out / "questions.jsonl", "w", encoding="utf-8") as handle:
        for q in questions:
            handle.write(json.dumps({"qid": q.qid, "question": q.question, "answer": q.answers},
                                    ensure_ascii=False) + "\n")
    with open(out / "ground_truth.jsonl", "w", encoding="utf-8") as handle:
        for row in truth:
            handle.write(json.dumps(row) + "\n")
    counts = {"documents": len(docs), "questions": len(questions), "shards": shards,
              "supporting": sum(r["kind"] == "supporting" for r in truth),
              "coincidental": sum(r["kind"] == "coincidental" for r in truth)}
    log.info("wrote sample corpus to %s: %s", out, counts)
    return counts


def read_ground_truth(path: Path) -> list[dict]:
    """Rows of a ``ground_truth.jsonl`` written by :func:`make_sample_corpus`."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]




