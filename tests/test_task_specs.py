"""The task table and the generated task files: grid positions, one task per condition, metric names."""

import pytest
import yaml

from nanoknow_tasks import make_task_files
from nanoknow_tasks.contexts import oracle_slot
from nanoknow_tasks.task_specs import (DISTRACTOR_COUNTS, MAX_DISTRACTORS, all_task_specs, exposure_task_specs,
                                       grid_conditions,
                                       parse_task_name, positions_for)

TASKS_DIR = make_task_files.TASKS_DIR


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def _task_configs() -> dict[str, dict]:
    """Every task YAML file on disk (groups excluded), with its ``include`` merged in, by task name."""
    configs = {}
    for path in sorted(TASKS_DIR.rglob("*.yaml")):
        config = yaml.load(path.read_text(), Loader=_Loader)
        if "task" not in config or "group" in config:
            continue
        include = config.pop("include", None)
        if include:
            config = {**yaml.load((path.parent / include).read_text(), Loader=_Loader), **config}
        configs[config["task"]] = config
    return configs


def test_grid_positions_differ_for_every_k():
    assert DISTRACTOR_COUNTS == (0, 1, 2, 4, 8) and MAX_DISTRACTORS == 8
    assert positions_for(0) == () and positions_for(1) == ("first", "last")
    assert all(positions_for(k) == ("first", "middle", "last") for k in (2, 4, 8))
    for k in DISTRACTOR_COUNTS[1:]:
        slots = [oracle_slot(k, p) for p in positions_for(k)]
        assert len(set(slots)) == len(slots), k  # no two positions of one k put the oracle in the same slot
    assert [oracle_slot(k, "middle") for k in (2, 4, 8)] == [1, 2, 4]
    with pytest.raises(ValueError, match="middle slot needs k >= 2"):
        oracle_slot(1, "middle")


def test_task_names_round_trip_and_k1_middle_is_gone():
    grid = [s.name for s in all_task_specs() if s.condition == "distractors" and s.dataset == "nq"]
    assert grid[0] == "nanoknow_nq_supported_distractors_k0"
    assert len(grid) == len(grid_conditions()) == 1 + 2 + 3 * 3
    for spec in all_task_specs():
        assert parse_task_name(spec.name) == spec
    for stale in ("nanoknow_nq_supported_distractors_k1_middle", "nanoknow_nq_supported_distractors_k0_first",
                  "nanoknow_nq_supported_distractors_k3_first", "nanoknow_nq_supported_distractors_k2"):
        assert parse_task_name(stale) is None, stale
    assert parse_task_name("nanoknow_squad_supported_distractors_k0").paper_condition.startswith("oracle alone")


def test_generated_files_are_the_task_table_without_duplicates():
    assert make_task_files.main(["--check"]) == 0
    configs = _task_configs()  # the QA tasks and the diary tasks
    assert {n for n in configs if parse_task_name(n)} == {s.name for s in [*all_task_specs(), *exposure_task_specs()]}
    assert not any("k1_middle" in p.name for p in TASKS_DIR.rglob("*.yaml"))
    # no two tasks ask the same thing: their loader arguments differ
    seen = {}
    for name, config in configs.items():
        key = (config["custom_dataset"], repr(sorted(config["dataset_kwargs"].items())))
        assert key not in seen, f"{name} duplicates {seen.get(key)}"
        seen[key] = name


def test_no_metric_of_ours_is_called_exact_match():
    """lm-eval's own exact_match is string equality; ours (the DPR rule) is has_answer."""
    configs = _task_configs()
    for name, config in configs.items():
        metrics = [m["metric"] for m in config["metric_list"]]
        assert "exact_match" not in metrics, name
        if parse_task_name(name):
            assert metrics[0] == "has_answer", name
    assert sum(bool(parse_task_name(n)) for n in configs) == len(all_task_specs()) + len(exposure_task_specs())
    from nanoknow_tasks import scoring

    scores = scoring.process_results({"question": "q", "answers": ["Paris"]}, ["It is Paris."])
    assert scores == {"has_answer": 1.0}
