"""`diary finetune / sweep / report` on real tiny transformers models built from configs.

A 2-layer GPT-2 (decoder-only) and a 2+2-layer T5 (encoder-decoder), each with a tokenizer
trained here on the default 1K diary set (tests/diary_tiny_models.py). Runs are a few dozen
steps on CPU with one thread: enough to see the loss fall, the validation run, the plateau
stop fire, the best checkpoint load in `lm_eval --model hf`, and the figures drawn from the
lm-eval outputs of two runs.
"""

from __future__ import annotations

import glob
import json
import math
from pathlib import Path

import pytest
import yaml
from diary_tiny_models import save_tiny_gpt2, save_tiny_t5

from nanoknow.cli import main
from nanoknow.diary.callbacks import PlateauStop
from nanoknow.diary.examples import Document, decoder_examples, seq2seq_examples
from nanoknow.diary.figures import _model_args, gap_rows, load_results, plot_accuracy_vs_size, plot_simplified_gap
from nanoknow.diary.sweep import load_grid
from projection.diary.generator import generate_diary_set
from projection.diary.files import write_diary_set
from nanoknow_tasks.diary.metrics import score_recall
from nanoknow_common.errors import NanoKnowInputError

GRID_EXAMPLE = Path(__file__).resolve().parents[1] / "nanoknow" / "diary" / "grid_example.yaml"
TINY_RUN = {"learning_rate": 3e-3, "warmup_steps": 2, "batch_size": 8, "logging_steps": 2, "val_questions": 2,
            "max_new_tokens": 24, "eval_batch_size": 2, "device": "cpu", "threads": 1}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    """The default-seed 1K diary folder (the data of nanoknow_diary_1k) and the two tiny models."""
    base = tmp_path_factory.mktemp("diary-finetune")
    diary = generate_diary_set(1000)
    write_diary_set(diary, base / "diary-1k")
    texts = [doc["text"] for doc in diary.documents("standard")]
    return {"base": base, "diary": diary, "diary_dir": base / "diary-1k",
            "gpt2": save_tiny_gpt2(base / "gpt2", texts), "t5": save_tiny_t5(base / "t5", texts)}


def _log(run: Path) -> list[dict]:
    return [json.loads(line) for line in open(run / "train_log.jsonl", encoding="utf-8")]


def test_plateau_rule_ties_break_on_loss_and_patience_counts_evaluations():
    saved = []
    stop = PlateauStop("exact_recall", patience=2, min_delta=0.0, save_best=lambda m, t, step, metrics: saved.append(step))

    class Control:
        should_training_stop = False

    class State:
        global_step = 0

    def evaluate(step, recall, loss):
        State.global_step = step
        stop.on_evaluate(None, State, Control, metrics={"eval_exact_recall": recall, "eval_loss": loss})

    evaluate(0, 0.0, 5.0)  # first: best
    evaluate(10, 0.0, 4.0)  # recall tied, loss lower: better
    evaluate(20, 0.0, 4.5)  # worse loss: 1 of 2
    evaluate(30, 0.1, 6.0)  # recall up: better despite the loss
    evaluate(40, 0.1, 6.5)  # 1 of 2
    assert not Control.should_training_stop
    evaluate(50, 0.05, 1.0)  # recall down: 2 of 2 -> stop
    assert saved == [0, 10, 30] and stop.best_step == 30 and Control.should_training_stop and stop.stopped_early
    nan_first = PlateauStop("entry_accuracy", 1, 0.0, lambda *a: None)
    nan_first.best_metrics = {"eval_entry_accuracy": math.nan, "eval_loss": 1.0}
    assert nan_first.improves({"eval_entry_accuracy": 0.0, "eval_loss": 9.0})
    by_loss = PlateauStop("loss", 1, 0.5, lambda *a: None)
    by_loss.best_metrics = {"eval_loss": 3.0, "eval_exact_recall": 0.0}
    assert not by_loss.improves({"eval_loss": 2.6, "eval_exact_recall": 1.0}) and by_loss.improves({"eval_loss": 2.4})


def test_examples_follow_the_paper_formats_and_the_task_prompt(tiny):
    from transformers import AutoTokenizer

    row = tiny["diary"].split("train")[0]
    entry, qa = Document("entry", row.entry_texts[0]), Document("qa", row.question + "\n" + row.answer)
    gpt2 = AutoTokenizer.from_pretrained(tiny["gpt2"])
    entry_ex, qa_ex = decoder_examples(gpt2, [entry, qa])
    eos = gpt2.eos_token_id
    assert entry_ex["input_ids"] == entry_ex["labels"] == gpt2(entry.text)["input_ids"] + [eos]
    # the prompt is tokenised on its own, exactly as lm-eval encodes the task's context
    prompt = gpt2(row.question + "\n")["input_ids"]
    assert qa_ex["input_ids"][:len(prompt)] == prompt and qa_ex["input_ids"][-1] == eos
    assert gpt2.decode(qa_ex["input_ids"][:-1]) == qa.text
    t5 = AutoTokenizer.from_pretrained(tiny["t5"])
    entry_s2s, qa_s2s = seq2seq_examples(t5, [entry, qa])
    assert t5.decode(entry_s2s["input_ids"], skip_special_tokens=True) == entry.text.split("\n")[0]
    assert entry_s2s["labels"][-1] == t5.eos_token_id and qa_s2s["labels"][-1] == t5.eos_token_id
    assert t5.decode(qa_s2s["input_ids"], skip_special_tokens=True) == row.question
    assert t5.decode(qa_s2s["labels"], skip_special_tokens=True) == " ".join(row.answer.split())  # T5-like: no newlines


def test_grid_files_are_checked_and_the_example_loads(tmp_path):
    grid = load_grid(GRID_EXAMPLE)
    assert len(grid.runs()) == len(grid.models) * 4 * 2 and grid.finetune["learning_rate"] == 1e-4
    bad = tmp_path / "grid.yaml"
    for body, field in ((
            {"models": ["m"], "sizes": ["3k"], "variants": ["standard"]}, "sizes"),
            ({"models": ["m"], "sizes": ["1k"], "finetune": {"lr": 1}}, "finetune.lr"),
            ({"models": [{"model": "m", "finetune": {"patience": "many"}}], "sizes": ["1k"]}, "models[0].finetune.patience"),
            ({"models": ["a/m", "b/m"], "sizes": ["1k"]}, "models")):
        bad.write_text(yaml.safe_dump(body))
        with pytest.raises(NanoKnowInputError, match=field.replace("[", r"\[").replace("]", r"\]")):
            load_grid(bad)
    bad.write_text("models: [m]\nsizes: [1k]\nfinetune: {learning_rate: 1e-4}\n")  # YAML 1.1 reads 1e-4 as a string
    assert load_grid(bad).finetune == {"learning_rate": 1e-4}


def test_sweep_trains_evaluates_resumes_and_report_draws_both_figures(tiny, capsys):
    out = tiny["base"] / "sweep"
    grid = tiny["base"] / "grid.yaml"
    grid.write_text(yaml.safe_dump({
        "models": [{"model": str(tiny["gpt2"]), "label": "tiny-gpt2"}], "sizes": ["1k"],
        "variants": ["standard", "simplified"], "diary_dirs": {"1k": str(tiny["diary_dir"])},
        "finetune": {**TINY_RUN, "max_steps": 16, "eval_steps": 8},
        "eval": {"batch_size": 1, "device": "cpu", "limit": 2, "gen_kwargs": "max_gen_toks=24"}}))
    assert main(["diary", "sweep", "--config", str(grid), "--out", str(out)]) == 0
    for variant in ("standard", "simplified"):
        run = out / "runs" / f"tiny-gpt2-1k-{variant}"
        log = _log(run)
        losses = [r["loss"] for r in log if "loss" in r]
        assert len(losses) >= 8 and sum(losses[-3:]) / 3 < 0.8 * losses[0]  # the loss falls
        evals = [r for r in log if "eval_loss" in r]
        assert [r["step"] for r in evals] == [0, 8, 16]  # validation at the start and every 8 steps
        assert all(set(r) >= {"eval_exact_recall", "eval_count_accuracy", "eval_count_error"} for r in evals)
        assert evals[-1]["eval_loss"] < evals[0]["eval_loss"]
        result = json.loads((run / "result.json").read_text())
        assert result["stop_reason"] == "max_steps" and result["steps"] == 16
        info = json.loads((run / "best" / "diary_run.json").read_text())
        assert info["variant"] == variant and info["model_type"] == "gpt2" and info["best_step"] == result["best_step"]
        assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in (run / "best").iterdir()}
        validation = [json.loads(line) for line in open(run / "validation_best.jsonl")]
        assert len(validation) == 2 and all(v["step"] == result["best_step"] for v in validation)
    # the lm-eval output folders (the Python API writes the CLI's layout) name the best checkpoint
    results_file, = glob.glob(str(out / "eval" / "tiny-gpt2-1k-standard" / "**" / "results_*.json"), recursive=True)
    lm_eval_out = json.loads(Path(results_file).read_text())
    assert _model_args(lm_eval_out["config"])["pretrained"] == str((out / "runs" / "tiny-gpt2-1k-standard" / "best").resolve())
    assert lm_eval_out["n-samples"]["nanoknow_diary_1k"]["effective"] == 2
    assert info["parameters"] == lm_eval_out["config"]["model_num_parameters"]
    # run again: every run is finished and evaluated, nothing is repeated
    before = (out / "runs" / "tiny-gpt2-1k-standard" / "train_log.jsonl").read_text()
    capsys.readouterr()
    assert main(["diary", "sweep", "--config", str(grid), "--out", str(out)]) == 0
    assert (out / "runs" / "tiny-gpt2-1k-standard" / "train_log.jsonl").read_text() == before
    assert len(glob.glob(str(out / "eval" / "*" / "*" / "results_*.json"))) == 2
    assert len((out / "sweep.jsonl").read_text().splitlines()) == 2
    # the report reads the real lm-eval folders
    figures = out / "figures"
    assert main(["diary", "report", str(out / "eval"), "--out", str(figures)]) == 0
    import csv

    import matplotlib.image

    rows = list(csv.DictReader(open(figures / "diary_results.csv")))
    assert sorted(r["variant"] for r in rows) == ["simplified", "standard"]
    for row in rows:
        folder = out / "eval" / f"tiny-gpt2-1k-{row['variant']}"
        task_results = json.loads(next(folder.rglob("results_*.json")).read_text())["results"]["nanoknow_diary_1k"]
        assert float(row["value"]) == task_results["exact_recall,none"] and row["n"] == "2"
        assert int(row["parameters"]) == info["parameters"] and row["size"] == "1k"
    for name in ("diary_accuracy_vs_size.png", "diary_simplified_gap.png"):
        image = matplotlib.image.imread(figures / name)
        assert image.shape[0] > 300 and image.shape[1] > 300 and image.std() > 0.01
    # what the figures plot: standard solid, simplified dashed, at the recorded parameter count; the gap
    loaded = load_results([out / "eval"])
    lines = [line for line in plot_accuracy_vs_size(loaded).axes[0].get_lines() if not line.get_label().startswith("_")]
    styles = {line.get_label(): (line.get_linestyle(), list(line.get_xdata()), list(line.get_ydata())) for line in lines}
    by_variant = {r["variant"]: 100 * r["value"] for r in loaded}
    assert styles == {"1k standard": ("-", [info["parameters"]], [by_variant["standard"]]),
                      "1k simplified": ("--", [info["parameters"]], [by_variant["simplified"]])}
    gap, = gap_rows(loaded)
    assert gap["gap_pp"] == pytest.approx(by_variant["simplified"] - by_variant["standard"])
    gap_line, = [line for line in plot_simplified_gap(loaded).axes[0].get_lines() if line.get_label() == "1k"]
    assert list(gap_line.get_ydata()) == [gap["gap_pp"]]


def test_seq2seq_plateau_stop_and_lm_eval_cli_loads_the_best_checkpoint(tiny, run):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from nanoknow.diary.recall import greedy_recall

    out = tiny["base"] / "t5-run"
    argv = ["diary", "finetune", "--model", str(tiny["t5"]), "--diary-dir", str(tiny["diary_dir"]), "--out", str(out),
            "--eval-steps", "4", "--max-steps", "60", "--patience", "1", "--min-delta", "1.0",
            "--learning-rate", "1e-2", "--warmup-steps", "0"]
    for key, value in TINY_RUN.items():
        if key not in ("learning_rate", "warmup_steps"):
            argv += [f"--{key.replace('_', '-')}", str(value)]
    assert main(argv) == 0
    result = json.loads((out / "result.json").read_text())
    evals = [r for r in _log(out) if "eval_loss" in r]
    # recall stays 0, so the loss decides; it must fall by more than 1.0 between validations to count
    assert result["stop_reason"] == "plateau" and result["steps"] < 60 and result["best_step"] > 0
    assert evals[-1]["step"] == result["steps"] == result["best_step"] + 4
    assert evals[-1]["eval_loss"] > evals[-2]["eval_loss"] - 1.0
    info = json.loads((out / "best" / "diary_run.json").read_text())
    assert info["is_encoder_decoder"] and "added_token=\\n" in info["tokenizer_changes"]
    tokenizer = AutoTokenizer.from_pretrained(out / "best")
    assert tokenizer.decode(tokenizer("a\nb", add_special_tokens=False)["input_ids"]).count("\n") == 1
    # a finished run is skipped; other settings in the same folder are refused
    assert main(argv) == 0
    assert main(argv + ["--warmup-steps", "3"]) == 2
    # plain lm_eval with the seq2seq backend evaluates the best checkpoint on the task
    eval_out = tiny["base"] / "t5-eval"
    run(["lm_eval", "--model", "hf", "--model_args", f"pretrained={out / 'best'},backend=seq2seq", "--device", "cpu",
         "--tasks", "nanoknow_diary_1k", "--limit", "2", "--gen_kwargs", "max_gen_toks=24", "--batch_size", "1",
         "--metadata", json.dumps({"diary_dir": str(tiny["diary_dir"])}), "--log_samples", "--output_path", str(eval_out)])
    samples_file, = glob.glob(str(eval_out / "**" / "samples_nanoknow_diary_1k_*.jsonl"), recursive=True)
    samples = [json.loads(line) for line in open(samples_file)]
    test_rows = [d.qa_row() for d in tiny["diary"].split("test")[:2]]
    assert [s["doc"]["qid"] for s in samples] == [r["qid"] for r in test_rows]
    # validation recall is generated and scored as lm-eval does: same responses, same metrics
    model = AutoModelForSeq2SeqLM.from_pretrained(out / "best")
    _, ours = greedy_recall(model, tokenizer, test_rows, max_new_tokens=24, batch_size=1)
    for sample, mine in zip(samples, ours):
        assert sample["filtered_resps"][0] == mine["response"]
        assert {k: sample[k] for k in ("exact_recall", "count_accuracy", "count_error", "entry_accuracy")} == \
            score_recall(mine["response"], sample["doc"]["answer"])


def test_bad_input_exits_2_naming_the_option_or_file(tiny, tmp_path, capsys):
    foreign = tmp_path / "not-a-run"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    base = ["diary", "finetune", "--model", str(tiny["gpt2"]), "--diary-dir", str(tiny["diary_dir"])]
    assert main(base + ["--out", str(foreign)]) == 2
    assert "settings.json" in capsys.readouterr().err and (foreign / "notes.txt").read_text() == "keep me"
    assert main(base + ["--out", str(tmp_path / "r"), "--patience", "0"]) == 2
    assert "--patience" in capsys.readouterr().err
    assert main(["diary", "finetune", "--model", str(tmp_path / "missing"), "--diary-dir", str(tiny["diary_dir"]),
                 "--out", str(tmp_path / "r2")]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["diary", "report", str(tmp_path), "--out", str(tmp_path / "fig")]) == 2
    assert "results_*.json" in capsys.readouterr().err
