"""``lm_eval --model nanochat`` through lm-eval's real CLI on a tiny checkpoint (CPU)."""

from __future__ import annotations

import json

import pytest
import torch

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


def _nanochat_run(run, data_dir, model_args, tmp_path, *extra, check=True):
    args = ["lm_eval", "--model", "nanochat", "--model_args", model_args,
            "--tasks", "nanoknow_nq_supported_closedbook", "--limit", "4", "--batch_size", "4",
            "--output_path", str(tmp_path), "--log_samples", *extra]
    return run(args, env={"NANOKNOW_DATA_DIR": str(data_dir)}, timeout=600, check=check)


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
def test_lm_eval_cli_without_device_runs_on_cpu_and_reports_truncation(run, nanoknow_data_dir, tiny_checkpoints,
                                                                        tmp_path):
    from nanochat_adapter.tokenizer import NanoChatTokenizer

    folder = tiny_checkpoints["2025-10"]
    # the tasks generate up to 64 tokens: with max_length 80 a prompt keeps at most 16 tokens
    proc = _nanochat_run(run, nanoknow_data_dir, f"pretrained={folder},max_length=80", tmp_path)
    assert "CUDA is not available; using cpu instead of lm-eval's default device cuda:0" in proc.stderr
    tok = NanoChatTokenizer.from_file(folder / "tokenizer.pkl")
    lengths = [1 + len(tok.encode(s["arguments"]["gen_args_0"]["arg_0"])) for s in _samples(tmp_path)]
    over = [n for n in lengths if n > 16]
    assert over, lengths
    assert proc.stderr.count("generate_until prompts were longer than the context budget") == 1
    assert (f"{len(over)} of 4 generate_until prompts were longer than the context budget and lost their "
            f"beginning (left truncation): longest prompt {max(over)} tokens, budget 16 tokens "
            "(max_length 80 - max_gen_toks 64)") in proc.stderr

    proc = _nanochat_run(run, nanoknow_data_dir, f"pretrained={folder},max_length=80,truncation=error",
                         tmp_path / "strict", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert (f"lm_eval: error: model_args truncation: {len(over)} of 4 generate_until prompts do not fit the "
            f"context: the longest has {max(over)} tokens, the budget is 16 (max_length 80 - max_gen_toks 64)"
            ) in proc.stderr


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
@pytest.mark.parametrize("model_args, extra, message", [
    ("", ["--device", "cuda"], "lm_eval: error: device: 'cuda' requested but CUDA is not available"),
    (",step=abc", ["--device", "cpu"], "lm_eval: error: model_args step: must be a whole number, got 'abc'"),
], ids=["explicit_cuda", "step_abc"])
def test_lm_eval_cli_bad_device_or_model_args_is_one_clear_line(run, nanoknow_data_dir, tiny_checkpoints,
                                                                tmp_path, model_args, extra, message):
    proc = _nanochat_run(run, nanoknow_data_dir, f"pretrained={tiny_checkpoints['2025-10']}{model_args}",
                         tmp_path, *extra, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
