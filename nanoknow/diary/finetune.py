"""Fine-tune a pretrained model on a diary set as Prato et al. do, with transformers' ``Trainer``.

The training set mixes every entry (or merged "simplified" document) with the training Q/A
documents in one shuffled set (training them one after the other made the paper's models
forget). Every ``eval_steps`` steps the model is validated: the loss on the validation Q/A
documents and greedy recall of validation questions scored with the task's metrics
(:mod:`.recall`). The best validation so far is saved in the Hugging Face layout (model,
tokenizer, ``diary_run.json``) under ``RUN/best``; training stops after ``patience``
evaluations without improvement (:class:`.callbacks.PlateauStop`), at ``max_steps``, after
``max_minutes`` or after ``epochs``. ``RUN/train_log.jsonl`` holds the training and validation
curve, ``RUN/result.json`` marks a finished run (run again: it is skipped).

Evaluate the best checkpoint with ``lm_eval --model hf --model_args pretrained=RUN/best``
(``,backend=seq2seq`` for encoder-decoder models) on the ``nanoknow_diary_*`` task of the set's
size with ``--metadata '{"diary_dir": ...}'`` (:func:`.run_info.lm_eval_argv`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

from .run_info import RUN_INFO, default_label, describe_model, lm_eval_argv, task_for

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"
RESULT_FILE = "result.json"
TRAIN_LOG = "train_log.jsonl"
VALIDATION_SAMPLES = "validation_best.jsonl"
BEST = "best"
VARIANTS = ("standard", "simplified")
#: Settings that do not change what a run computes (a finished run is skipped even if they differ).
_NOT_IDENTITY = ("out", "threads", "eval_batch_size")


@dataclass
class FinetuneSettings:
    """Everything ``diary finetune`` needs; the CLI fills it from its options."""

    model: str  #: a Hugging Face model id or folder
    diary_dir: str  #: a ``nanoknow diary make`` folder
    out: str  #: the run folder
    variant: str = "standard"  #: standard (one document per entry) or simplified (one per diarist)
    gguf_file: str | None = None  #: a GGUF file inside ``model`` (transformers' ``gguf_file=``)
    label: str | None = None  #: the model's name in tables and figures (default: from ``model``)
    learning_rate: float = 1e-4
    lr_scheduler: str = "constant_with_warmup"  #: no fixed horizon: the plateau decides when to stop
    warmup_steps: int = 100
    weight_decay: float = 0.0
    batch_size: int = 8
    gradient_accumulation: int = 1
    epochs: float = 100.0  #: an upper bound; the plateau normally stops earlier
    max_steps: int = -1  #: stop after this many optimizer steps (-1: no limit)
    max_minutes: float | None = None  #: stop after this much wall time (evaluating the last step)
    eval_steps: int = 500
    eval_on_start: bool = True  #: validate the model before training too (the curve's first point)
    patience: int = 5  #: evaluations without improvement before stopping
    min_delta: float = 0.0
    select: str = "exact_recall"  #: validation metric that picks the best checkpoint (or ``loss``)
    val_questions: int = 200  #: validation questions recalled at each evaluation (0: all)
    eval_batch_size: int = 16
    max_new_tokens: int = 512  #: the tasks' ``max_gen_toks``
    logging_steps: int = 50
    group_by_length: bool = True  #: batches of similar lengths (less padding), in random order
    bf16: bool = False  #: bfloat16 mixed precision
    device: str = "auto"  #: auto (a GPU when there is one), cpu or cuda
    seed: int = 0
    threads: int = 0  #: torch CPU threads (0: torch's default)


@dataclass
class FinetuneResult:
    """What a finished run reached; ``RUN/result.json`` holds the same."""

    run_dir: str
    best_dir: str
    best_step: int | None
    best_validation: dict
    stop_reason: str
    steps: int
    epochs: float
    seconds: float
    info: dict
    lm_eval_command: str
    skipped: bool = False
    extra: dict = field(default_factory=dict)


def check_settings(s: FinetuneSettings) -> None:
    """Input errors naming the option, before anything is loaded."""
    from .callbacks import SELECTABLE

    if s.variant not in VARIANTS:
        raise NanoKnowInputError(f"must be one of {VARIANTS}, got {s.variant!r}", field="--variant")
    if s.select not in SELECTABLE:
        raise NanoKnowInputError(f"must be one of {tuple(SELECTABLE)}, got {s.select!r}", field="--select")
    if s.device not in ("auto", "cpu", "cuda"):
        raise NanoKnowInputError(f"must be auto, cpu or cuda, got {s.device!r}", field="--device")
    for name in ("batch_size", "gradient_accumulation", "eval_steps", "patience", "eval_batch_size",
                 "max_new_tokens", "logging_steps"):
        if getattr(s, name) <= 0:
            raise NanoKnowInputError(f"must be positive, got {getattr(s, name)}", field="--" + name.replace("_", "-"))
    for name in ("val_questions", "warmup_steps", "threads"):
        if getattr(s, name) < 0:
            raise NanoKnowInputError(f"must not be negative, got {getattr(s, name)}", field="--" + name.replace("_", "-"))
    if not s.learning_rate > 0:
        raise NanoKnowInputError(f"must be positive, got {s.learning_rate}", field="--learning-rate")
    if not s.epochs > 0:
        raise NanoKnowInputError(f"must be positive, got {s.epochs}", field="--epochs")
    if s.max_steps == 0 or s.max_steps < -1:
        raise NanoKnowInputError(f"must be positive or -1 (no limit), got {s.max_steps}", field="--max-steps")
    if s.max_minutes is not None and not s.max_minutes > 0:
        raise NanoKnowInputError(f"must be positive, got {s.max_minutes}", field="--max-minutes")
    if s.min_delta < 0:
        raise NanoKnowInputError(f"must not be negative, got {s.min_delta}", field="--min-delta")


def _identity(settings: FinetuneSettings) -> dict:
    return {k: v for k, v in dataclasses.asdict(settings).items() if k not in _NOT_IDENTITY}


def _clean(metrics: dict) -> dict:
    """JSON-safe metrics (NaN/inf -> None)."""
    return {k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in metrics.items()}


def _finished_run(run: Path, settings: FinetuneSettings) -> FinetuneResult | None:
    """The result of a finished run in ``run`` with the same settings, else None; refuses folders not ours."""
    settings_path = run / SETTINGS_FILE
    if run.exists() and not run.is_dir():
        raise NanoKnowInputError("exists and is not a folder", file=run)
    if run.is_dir() and any(run.iterdir()) and not settings_path.is_file():
        raise NanoKnowInputError(f"not empty and has no {SETTINGS_FILE}: not a `diary finetune` run folder; "
                                 "pick a new --out", file=run)
    result_path = run / RESULT_FILE
    if not result_path.is_file():
        return None
    current = _identity(settings)
    # a setting added after the run was made counts as its default
    defaults = {f.name: f.default for f in dataclasses.fields(FinetuneSettings) if f.name in current}
    previous = {**defaults, **json.loads(settings_path.read_text(encoding="utf-8"))}
    if previous != current:
        changed = sorted(k for k in set(previous) | set(current) if previous.get(k) != current.get(k))
        raise NanoKnowInputError(f"finished with other settings ({', '.join(changed)}); pick a new --out",
                                 file=settings_path)
    result = FinetuneResult(**json.loads(result_path.read_text(encoding="utf-8")))
    result.skipped = True
    log.info("%s is finished (best step %s); skipped", run, result.best_step)
    return result


def _start_run_dir(run: Path, settings: FinetuneSettings) -> None:
    """Clear what an unfinished run of ours left in ``run`` and record the settings."""
    if (run / SETTINGS_FILE).is_file():
        log.info("%s holds an unfinished run; starting it again", run)
        for name in (BEST, BEST + ".partial", "trainer"):
            if (run / name).is_dir():
                shutil.rmtree(run / name)
        for name in (TRAIN_LOG, VALIDATION_SAMPLES):
            (run / name).unlink(missing_ok=True)
    run.mkdir(parents=True, exist_ok=True)
    (run / SETTINGS_FILE).write_text(json.dumps(_identity(settings), indent=2) + "\n", encoding="utf-8")


def load_model_and_tokenizer(model: str, gguf_file: str | None = None):
    """``(model, tokenizer)`` in float32, as ``AutoModelForSeq2SeqLM`` or ``AutoModelForCausalLM`` per config."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    kwargs = {"trust_remote_code": False, **({"gguf_file": gguf_file} if gguf_file else {})}
    try:
        config = AutoConfig.from_pretrained(model, **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(model, **kwargs)
        auto = AutoModelForSeq2SeqLM if getattr(config, "is_encoder_decoder", False) else AutoModelForCausalLM
        if gguf_file:  # unpack every GGUF block into a plain dense float32 model, which can be trained
            from transformers import GgufConfig

            kwargs["quantization_config"] = GgufConfig(gguf_file=gguf_file, dequantize=True)
        loaded = auto.from_pretrained(model, dtype=torch.float32, **kwargs)
    except (OSError, ValueError) as err:
        raise NanoKnowInputError(f"cannot load {model!r}: {str(err).splitlines()[0]}", field="--model") from None
    if gguf_file and getattr(loaded, "hf_quantizer", None) is not None:
        packed = [name for name, module in loaded.named_modules() if "gguf" in type(module).__name__.lower()]
        if packed or any(not p.is_floating_point() for p in loaded.parameters()):
            raise NanoKnowInputError(f"{gguf_file} loaded with packed GGUF layers ({packed[:2]}); cannot be trained",
                                     field="--gguf-file")
        # the weights are dense now: drop the quantizer so the Trainer trains it and save_pretrained writes it
        loaded.hf_quantizer.remove_quantization_config(loaded)
    return loaded, tokenizer


def _keeps_newlines(tokenizer) -> bool:
    from nanoknow_tasks.diary.metrics import normalized_lines

    sample = "Ada Abbott's Diary Entry 1\nLocation: City\nMood: Happy"
    decoded = tokenizer.decode(tokenizer(sample, add_special_tokens=False)["input_ids"], skip_special_tokens=True)
    return normalized_lines(decoded) == normalized_lines(sample) and decoded.count("\n") >= 2


def prepare_tokenizer(tokenizer, model) -> list[str]:
    """Make ``tokenizer`` fit the diary texts; return what was changed (recorded in the run).

    A pad token is set to EOS when missing (lm-eval does the same). A tokenizer that drops
    newlines (T5's SentencePiece) gets ``"\\n"`` as an added token, the embeddings grown to
    match: the task's metrics parse entries by lines, so without it every recall scores 0.
    """
    changes = []
    if tokenizer.eos_token_id is None:
        raise NanoKnowInputError("the tokenizer has no end-of-sequence token; answers could not end", field="--model")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
        changes.append("pad_token=eos_token")
    if not _keeps_newlines(tokenizer):
        from tokenizers import AddedToken

        tokenizer.add_tokens([AddedToken("\n", normalized=False, special=False)])
        if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
            model.resize_token_embeddings(len(tokenizer))
        if not _keeps_newlines(tokenizer):
            raise NanoKnowInputError("the tokenizer loses the newlines that separate diary lines, even with "
                                     "'\\n' added as a token", field="--model")
        log.warning("the tokenizer drops newlines: added '\\n' as a token (id %d)", tokenizer.convert_tokens_to_ids("\n"))
        changes.append("added_token=\\n")
    tokenizer.padding_side = "right"  # training batches; recall and lm-eval pad prompts on the left
    generation = model.generation_config
    generation.pad_token_id = tokenizer.pad_token_id
    eos = generation.eos_token_id
    eos_ids = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    if tokenizer.eos_token_id not in eos_ids:
        generation.eos_token_id = eos_ids + [tokenizer.eos_token_id] if eos_ids else tokenizer.eos_token_id
        changes.append("generation_eos+=tokenizer_eos")
    return changes


def _max_positions(config) -> int | None:
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _make_trainer_class():
    from transformers import Trainer

    from .recall import greedy_recall

    class RecallTrainer(Trainer):
        """A ``Trainer`` whose evaluation adds greedy recall of validation questions to the loss."""

        def __init__(self, *args, recall_rows: list[dict], max_new_tokens: int, recall_batch_size: int, **kwargs):
            super().__init__(*args, **kwargs)
            self.recall_rows, self.max_new_tokens, self.recall_batch_size = recall_rows, max_new_tokens, recall_batch_size
            self.last_recall: list[dict] = []

        def evaluation_loop(self, dataloader, description, prediction_loss_only=None, ignore_keys=None,
                            metric_key_prefix="eval"):
            import torch

            output = super().evaluation_loop(dataloader, description, prediction_loss_only, ignore_keys,
                                             metric_key_prefix)
            summary, self.last_recall = greedy_recall(
                self.model, self.processing_class, self.recall_rows, max_new_tokens=self.max_new_tokens,
                batch_size=self.recall_batch_size, autocast_dtype=torch.bfloat16 if self.args.bf16 else None)
            output.metrics.update({f"{metric_key_prefix}_{key}": value for key, value in summary.items()})
            return output

    return RecallTrainer


def finetune(settings: FinetuneSettings) -> FinetuneResult:
    """Fine-tune ``settings.model`` on the diary set; a finished run folder is skipped (see module doc)."""
    import torch
    from transformers import DataCollatorForSeq2Seq, TrainingArguments

    from projection.diary.files import read_manifest, read_qa_split

    from .callbacks import JsonlLog, PlateauStop, TimeLimit
    from .examples import build_dataset, qa_documents, read_documents

    check_settings(settings)
    manifest = read_manifest(settings.diary_dir)
    documents = read_documents(settings.diary_dir, settings.variant)
    validation = read_qa_split(settings.diary_dir, "validation")
    if settings.val_questions:
        validation = validation[:settings.val_questions]
    if not validation:
        raise NanoKnowInputError("no validation questions", file=Path(settings.diary_dir) / "qa" / "validation.jsonl")
    run = Path(settings.out)
    finished = _finished_run(run, settings)
    if finished is not None:
        return finished
    if settings.threads:
        torch.set_num_threads(settings.threads)

    model, tokenizer = load_model_and_tokenizer(settings.model, settings.gguf_file)
    _start_run_dir(run, settings)
    changes = prepare_tokenizer(tokenizer, model)
    encoder_decoder = bool(getattr(model.config, "is_encoder_decoder", False))
    train_set = build_dataset(tokenizer, documents, encoder_decoder=encoder_decoder)
    eval_set = build_dataset(tokenizer, qa_documents(validation), encoder_decoder=encoder_decoder)
    limit = _max_positions(model.config)
    longest = max(train_set["length"])
    if limit and not encoder_decoder and longest > limit:
        raise NanoKnowInputError(f"the longest training document has {longest} tokens but the model's context "
                                 f"is {limit}", field="--model")
    info = {"label": settings.label or default_label(settings.model, settings.gguf_file), "model": settings.model,
            "gguf_file": settings.gguf_file, **describe_model(model), "variant": settings.variant,
            "diary_dir": str(Path(settings.diary_dir).resolve()), "diarists": manifest["diarists"],
            "diary_seed": manifest["seed"], "tokenizer_changes": changes}
    log.info("%s (%s, %.1fM parameters, %s): %d training documents (%d tokens), %d validation questions",
             info["label"], info["model_type"], info["parameters"] / 1e6,
             "encoder-decoder" if encoder_decoder else "decoder-only", len(train_set), sum(train_set["length"]),
             len(validation))

    trainer_holder: dict = {}

    def save_best(model_, tokenizer_, step: int, metrics: dict) -> None:
        partial = run / (BEST + ".partial")
        if partial.exists():
            shutil.rmtree(partial)
        model_.save_pretrained(partial)
        tokenizer_.save_pretrained(partial)
        (partial / RUN_INFO).write_text(json.dumps({**info, "best_step": step, "validation": _clean(metrics)},
                                                   indent=2) + "\n", encoding="utf-8")
        if (run / BEST).exists():
            shutil.rmtree(run / BEST)
        partial.rename(run / BEST)
        with open(run / VALIDATION_SAMPLES, "w", encoding="utf-8") as f:
            for record in trainer_holder["trainer"].last_recall:
                f.write(json.dumps({"step": step, **record}) + "\n")

    plateau = PlateauStop(settings.select, settings.patience, settings.min_delta, save_best)
    time_limit = TimeLimit(settings.max_minutes * 60 if settings.max_minutes else None)
    args = TrainingArguments(
        output_dir=str(run / "trainer"), eval_strategy="steps", eval_steps=settings.eval_steps,
        eval_on_start=settings.eval_on_start,
        save_strategy="no", logging_strategy="steps", logging_steps=settings.logging_steps, logging_first_step=True,
        per_device_train_batch_size=settings.batch_size, per_device_eval_batch_size=settings.eval_batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation, learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler, warmup_steps=settings.warmup_steps,
        weight_decay=settings.weight_decay, num_train_epochs=settings.epochs, max_steps=settings.max_steps,
        seed=settings.seed, bf16=settings.bf16, use_cpu=settings.device == "cpu", report_to="none",
        train_sampling_strategy="group_by_length" if settings.group_by_length else "random",
        remove_unused_columns=False, dataloader_num_workers=0)
    if settings.device == "cuda" and args.device.type != "cuda":
        raise NanoKnowInputError("no CUDA device is available", field="--device")
    padder = DataCollatorForSeq2Seq(tokenizer, model=model if encoder_decoder else None, label_pad_token_id=-100,
                                    padding="longest")

    def collate(features: list[dict]):
        return padder([{k: v for k, v in f.items() if k != "length"} for f in features])

    trainer = _make_trainer_class()(
        model=model, args=args, train_dataset=train_set, eval_dataset=eval_set, data_collator=collate,
        processing_class=tokenizer, callbacks=[JsonlLog(run / TRAIN_LOG), time_limit, plateau],
        recall_rows=validation, max_new_tokens=settings.max_new_tokens, recall_batch_size=settings.eval_batch_size)
    trainer_holder["trainer"] = trainer
    start = time.monotonic()
    trainer.train()
    if plateau.last_evaluated_step != trainer.state.global_step:
        trainer.evaluate()  # the last step counts too
    seconds = round(time.monotonic() - start, 1)
    if (run / "trainer").is_dir() and not any((run / "trainer").iterdir()):
        (run / "trainer").rmdir()

    state = trainer.state
    if plateau.stopped_early:
        reason = "plateau"
    elif time_limit.reached:
        reason = "max_minutes"
    elif settings.max_steps > 0 and state.global_step >= settings.max_steps:
        reason = "max_steps"
    else:
        reason = "epochs"
    best_info = json.loads((run / BEST / RUN_INFO).read_text(encoding="utf-8"))
    argv = ["lm_eval"] + lm_eval_argv(run / BEST, best_info, diary_dir=settings.diary_dir,
                                      output_path=str(run) + "-eval") if task_for(info["diarists"]) else []
    result = FinetuneResult(run_dir=str(run), best_dir=str(run / BEST), best_step=plateau.best_step,
                            best_validation=_clean(plateau.best_metrics or {}), stop_reason=reason,
                            steps=state.global_step, epochs=round(state.epoch or 0.0, 3), seconds=seconds,
                            info=best_info, lm_eval_command=shlex.join(argv))
    (run / RESULT_FILE).write_text(json.dumps(dataclasses.asdict(result), indent=2) + "\n", encoding="utf-8")
    log.info("finished after %d steps (%s): best step %s, validation %s", result.steps, reason, result.best_step,
             {k: v for k, v in result.best_validation.items() if k.startswith("eval_") and "per_second" not in k})
    if argv:
        log.info("evaluate on the test split with: %s", result.lm_eval_command)
    return result
