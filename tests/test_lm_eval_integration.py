"""The NanoKnow tasks through lm-eval's own CLI: discovery, validation and a real model run."""

import glob
import json
import os
import subprocess
import sys

import pytest
from pathlib import Path

from nanoknow_tasks import make_task_files
from nanoknow_tasks.has_answer import has_answer
from projection.data.files import read_qrels
from projection.data import layout

CLOSEDBOOK = [f"nanoknow_{d}_{s}_closedbook" for d in ("nq", "squad", "hotpotqa")
              for s in ("supported", "unsupported")]
GROUPS = ["nanoknow", "nanoknow_nq", "nanoknow_squad", "nanoknow_hotpotqa"]


def test_generated_task_files_are_up_to_date():
    assert make_task_files.main(["--check"]) == 0


def test_hook_costs_nothing_until_lm_eval_is_imported():
    code = ("import sys; import nanoknow_tasks.lm_eval_hook as h; "
            "print(any(isinstance(f, h._LmEvalFinder) for f in sys.meta_path), "
            "sorted(m for m in sys.modules if m.startswith(('lm_eval', 'torch', 'projection', 'datasets'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True []"  # installed by the .pth file, nothing heavy imported
    code = ("from lm_eval.api.registry import get_model, model_registry; get_model('hf'); "
            "print('nanochat' in model_registry, 'hf' in model_registry)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True True"
    off = subprocess.run([sys.executable, "-c", code.replace("get_model('hf'); ", "import lm_eval.models; ")],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "NANOKNOW_LM_EVAL_HOOK": "0"}).stdout
    assert off.strip() == "False True"


def test_lm_eval_lists_and_validates_the_tasks(run):
    listing = run(["lm_eval", "ls", "tasks"]).stdout
    for name in CLOSEDBOOK + GROUPS:
        assert f"|{name} " in listing, name
    proc = run(["lm_eval", "validate", "--tasks", "nanoknow"])
    assert "All tasks found and valid" in proc.stdout + proc.stderr


def test_include_path_works_without_the_hook(run):
    # With the hook switched off, plain lm_eval does not know the tasks ...
    off = {"NANOKNOW_LM_EVAL_HOOK": "0"}
    proc = run(["lm_eval", "validate", "--tasks", "nanoknow_nq"], env=off, check=False)
    assert proc.returncode != 0
    # ... and --include_path nanoknow_tasks finds them; with the hook on, the same include
    # path is deduplicated instead of registering every task twice.
    for env in (off, {}):
        proc = run(["lm_eval", "validate", "--tasks", "nanoknow_nq", "--include_path", "nanoknow_tasks"], env=env)
        assert "All tasks found and valid" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_smollm2_closedbook_run_scores_as_the_paper(run, tmp_path, nanoknow_data_dir, smollm2_model_args):
    env = {"NANOKNOW_DATA_DIR": ""}  # the data dir arrives through --metadata only
    run(["lm_eval", "--model", "hf", "--model_args", smollm2_model_args, "--device", "cpu",
         "--tasks", "nanoknow_nq_supported_closedbook", "--limit", "20", "--batch_size", "10",
         "--log_samples", "--output_path", str(tmp_path),
         "--metadata", json.dumps({"data_dir": str(nanoknow_data_dir)})], env=env)
    results_file, = glob.glob(str(tmp_path / "*" / "results_*.json"))
    samples_file, = glob.glob(str(tmp_path / "*" / "samples_nanoknow_nq_supported_closedbook_*.jsonl"))
    reported = json.load(open(results_file))["results"]["nanoknow_nq_supported_closedbook"]["has_answer,none"]
    samples = [json.loads(line) for line in open(samples_file)]
    assert len(samples) == 20
    qrels = read_qrels(layout.qrels_path(nanoknow_data_dir, "nq", "fineweb-edu"))
    for sample in samples:
        doc = sample["doc"]
        assert doc["answer_frequency"] == len(qrels[doc["qid"]])
        assert sample["arguments"]["gen_args_0"]["arg_0"] == f"Question: {doc['question']}\n\nAnswer:"
    recomputed = sum(has_answer(s["resps"][0][0], s["doc"]["answers"]) for s in samples) / len(samples)
    assert reported == pytest.approx(recomputed)
    assert [s["has_answer"] for s in samples] == [float(has_answer(s["resps"][0][0], s["doc"]["answers"]))
                                                   for s in samples]


def test_entry_points_for_newer_lm_eval_resolve_to_the_model_and_the_task_folder():
    from importlib.metadata import entry_points

    from nanochat_adapter.lm_eval_model import NanoChatLM
    from nanoknow_tasks import lm_eval_hook

    models = {ep.name: ep for ep in entry_points(group="lm_eval.models")}
    tasks = {ep.name: ep for ep in entry_points(group="lm_eval.tasks")}
    assert models["nanochat"].load() is NanoChatLM
    folder = Path(tasks["nanoknow"].load())
    assert folder == Path(lm_eval_hook.TASKS_DIR)
    assert (folder / "oracle" / "nanoknow_nq_supported_oracle.yaml").is_file()


def test_import_hook_acts_only_for_lm_eval_0_4():
    from nanoknow_tasks.lm_eval_hook import hook_applies

    assert hook_applies("0.4.13") and hook_applies("0.4.9.1")
    assert not hook_applies("0.5.0") and not hook_applies("1.0.0")
    import lm_eval

    assert hook_applies() == lm_eval.__version__.startswith("0.4.")
