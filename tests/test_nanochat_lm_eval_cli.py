"""``lm_eval --model nanochat`` through lm-eval's real CLI on a tiny checkpoint (CPU)."""

from __future__ import annotations

import json

import pytest

from nanochat_fixtures import tiny_checkpoints  # noqa: F401


def _samples(output_dir):
    files = list(output_dir.rglob("samples_nanoknow_nq_supported_closedbook_*.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("chat", [False, True], ids=["raw", "chat_template"])
def test_lm_eval_cli_runs_nanochat_on_nanoknow_nq(run, nanoknow_data_dir, tiny_checkpoints, tmp_path, chat):
    generation = "2026-03-14" if chat else "2025-10"
    args = ["lm_eval", "--model", "nanochat",
            "--model_args", f"pretrained={tiny_checkpoints[generation]},max_gen_toks=16",
            "--tasks", "nanoknow_nq_supported_closedbook", "--limit", "8", "--device", "cpu",
            "--batch_size", "4", "--output_path", str(tmp_path), "--log_samples"]
    if chat:
        args.append("--apply_chat_template")
    proc = run(args, env={"NANOKNOW_DATA_DIR": str(nanoknow_data_dir)}, timeout=600)
    assert "nanoknow_nq_supported_closedbook" in proc.stdout and "has_answer" in proc.stdout
    samples = _samples(tmp_path)
    assert len(samples) == 8
    prompt = samples[0]["arguments"]["gen_args_0"]["arg_0"]
    if chat:
        assert prompt.startswith("<|bos|><|user_start|>") and prompt.endswith("<|user_end|><|assistant_start|>")
    else:
        assert "<|" not in prompt
    assert all(isinstance(s["resps"][0][0], str) for s in samples)
    results = json.loads(next(tmp_path.rglob("results_*.json")).read_text())
    assert results["config"]["model"] == "nanochat"
    assert "has_answer,none" in results["results"]["nanoknow_nq_supported_closedbook"]
