"""The one table of NanoKnow tasks: dataset, split, condition, distractor count k and position.

The YAML generator (:mod:`nanoknow_tasks.make_task_files`), the report and the demo all read
it, so a task name is spelled in one place (:attr:`TaskSpec.name`) and parsed back in one
place (:func:`parse_task_name`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DATASETS = ("nq", "squad", "hotpotqa")
SPLITS = ("supported", "unsupported")
#: Datasets with the distractor grid, and its distractor counts (k = 0: the grid passage alone).
DISTRACTOR_DATASETS = ("nq", "squad")
DISTRACTOR_COUNTS = (0, 1, 2, 4, 8)
#: Every grid condition runs on the questions that have at least this many distractors.
MAX_DISTRACTORS = max(DISTRACTOR_COUNTS)
POSITIONS = ("first", "middle", "last")
#: Conditions in report order.
CONDITIONS = ("closedbook", "oracle", "original", "distractors")
#: Exposure subsets of the supported split (need the evaluated checkpoint's exposure) and their conditions.
EXPOSURES = ("seen", "unseen")
EXPOSURE_CONDITIONS = ("closedbook", "oracle")

_PAPER_NAMES = {"closedbook": "closed-book", "oracle": "oracle", "original": "original context"}


def positions_for(k: int) -> tuple[str, ...]:
    """Where the oracle can sit among ``k`` distractors: none for k = 0 (it is alone), first and
    last for k = 1 (a middle slot would be the first), all three from k = 2 (middle = slot k // 2)."""
    if k == 0:
        return ()
    return ("first", "last") if k == 1 else POSITIONS


@dataclass(frozen=True)
class TaskSpec:
    """One NanoKnow task: what it asks (``condition``) of which questions (``dataset``, ``split``)."""

    dataset: str
    split: str
    condition: str  # closedbook | oracle | original | distractors
    k: int | None = None
    position: str | None = None
    #: ``seen`` / ``unseen``: the supported questions whose evidence the checkpoint did / did not read
    exposure: str | None = None

    @property
    def name(self) -> str:
        """The lm-eval task name, e.g. ``nanoknow_nq_supported_distractors_k2_middle`` (``..._k0``),
        ``nanoknow_nq_seen_oracle``."""
        base = f"nanoknow_{self.dataset}_{self.exposure or self.split}_{self.condition}"
        if self.condition != "distractors":
            return base
        return f"{base}_k{self.k}_{self.position}" if self.position else f"{base}_k{self.k}"

    @property
    def paper_condition(self) -> str:
        """The paper's name for the condition."""
        if self.condition == "distractors" and self.k == 0:
            return "oracle alone, grid passage (k=0)"
        if self.condition == "distractors":
            return f"oracle + {self.k} distractor{'s' if self.k != 1 else ''} ({self.position})"
        return _PAPER_NAMES[self.condition]

    @property
    def group(self) -> str:
        """What the task's rows are: ``supported``, ``unsupported``, ``seen`` or ``unseen``."""
        return self.exposure or self.split

    @property
    def sort_key(self) -> tuple:
        """Dataset, supported then unsupported then seen/unseen, condition order, k, position order."""
        order = ("supported", "unsupported", *EXPOSURES).index(self.group)
        return (self.dataset, order, CONDITIONS.index(self.condition), self.k or 0,
                POSITIONS.index(self.position) if self.position else 0)


def all_task_specs() -> list[TaskSpec]:
    """Every NanoKnow QA task, in the order the task folder lists them."""
    specs = [TaskSpec(d, s, "closedbook") for d in DATASETS for s in SPLITS]
    specs += [TaskSpec(d, "supported", "oracle") for d in DATASETS]
    specs += [TaskSpec("squad", s, "original") for s in SPLITS]
    specs += [TaskSpec(d, "supported", "distractors", k, p)
              for d in DISTRACTOR_DATASETS for k, p in grid_conditions()]
    return specs


def exposure_task_specs() -> list[TaskSpec]:
    """The exposure tasks: seen/unseen supported questions, closed-book and with the oracle."""
    return [TaskSpec(d, "supported", c, exposure=e) for d in DATASETS for e in EXPOSURES for c in EXPOSURE_CONDITIONS]


def grid_conditions() -> list[tuple[int, str | None]]:
    """Every ``(k, position)`` of the distractor grid, k = 0 (position None) first."""
    return [(k, p) for k in DISTRACTOR_COUNTS for p in (positions_for(k) or (None,))]


_NAME = re.compile(r"^nanoknow_(?P<dataset>[a-z0-9]+)_(?P<split>supported|unsupported|seen|unseen)_"
                   r"(?:(?P<plain>closedbook|oracle|original)|distractors_k(?P<k>\d+)(?:_(?P<position>[a-z]+))?)$")


def parse_task_name(name: str) -> TaskSpec | None:
    """The spec a NanoKnow task name stands for; None for any other name."""
    match = _NAME.match(name)
    if not match:
        return None
    if match["split"] in EXPOSURES:
        if match["plain"] not in EXPOSURE_CONDITIONS:
            return None
        return TaskSpec(match["dataset"], "supported", match["plain"], exposure=match["split"])
    if match["plain"]:
        return TaskSpec(match["dataset"], match["split"], match["plain"])
    k, position = int(match["k"]), match["position"]
    if (k, position) not in grid_conditions():
        return None
    return TaskSpec(match["dataset"], match["split"], "distractors", k, position)
