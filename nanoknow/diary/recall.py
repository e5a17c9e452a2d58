"""Greedy recall of diary questions, generated and scored exactly as the lm-eval tasks do.

The prompt is the task's (``loaders.recall_prompt``: the question and a newline), tokenised
with the tokenizer's defaults and left padding like lm-eval's ``hf`` model; generation is
greedy, stops at the tasks' stop sequence (``Recall all of``) or the end-of-sequence token
(lm-eval's own stopping criteria and post-processing are used), and each response is scored
with the task's metrics (``nanoknow_tasks.diary.metrics``). So a validation score here is
what ``lm_eval --model hf`` reports for the same checkpoint and questions.
"""

from __future__ import annotations

import math

from projection.diary import schema
from nanoknow_tasks.diary.loaders import recall_prompt
from nanoknow_tasks.diary.metrics import pooled_share, score_recall

#: ``max_gen_toks`` of the diary tasks (``_diary_base_yaml``).
TASK_MAX_GEN_TOKS = 512
#: ``until`` of the diary tasks (``_diary_base_yaml``); lm-eval adds the EOS text.
TASK_UNTIL = (schema.QUESTION_PREFIX,)
METRICS = ("exact_recall", "count_accuracy", "entry_accuracy", "count_error")


def summarize(results: list[dict]) -> dict:
    """Task-level metrics of scored responses: means, and the pooled ``entry_accuracy`` (NaN if none compared)."""
    if not results:
        return {metric: math.nan for metric in METRICS}
    summary = {key: sum(r[key] for r in results) / len(results) for key in ("exact_recall", "count_accuracy", "count_error")}
    summary["entry_accuracy"] = pooled_share([r["entry_accuracy"] for r in results])
    return summary


def greedy_recall(model, tokenizer, rows: list[dict], *, max_new_tokens: int = TASK_MAX_GEN_TOKS,
                  batch_size: int = 16, autocast_dtype=None) -> tuple[dict, list[dict]]:
    """Generate a recall for each Q/A record of ``rows`` and score it; ``(summary, per-question results)``."""
    import torch
    from lm_eval.models.utils import handle_stop_sequences, postprocess_generated_text
    from lm_eval.models.utils_hf import stop_sequences_criteria
    from tqdm import tqdm

    encoder_decoder = bool(getattr(model.config, "is_encoder_decoder", False))
    eos_text = tokenizer.decode(tokenizer.eos_token_id, skip_special_tokens=False)
    until = handle_stop_sequences(list(TASK_UNTIL), eos=eos_text)
    prompts = [recall_prompt(row) for row in rows]
    # longest prompts first, as lm-eval batches them
    order = sorted(range(len(rows)), key=lambda i: -len(tokenizer(prompts[i])["input_ids"]))
    responses: dict[int, str] = {}
    was_training = model.training
    model.eval()
    try:
        for start in tqdm(range(0, len(order), batch_size), desc="greedy recall", leave=False):
            batch = order[start:start + batch_size]
            encoded = tokenizer([prompts[i] for i in batch], padding="longest", padding_side="left",
                                return_tensors="pt")
            input_ids = encoded["input_ids"].to(model.device)
            attention_mask = encoded["attention_mask"].to(model.device)
            criteria = stop_sequences_criteria(tokenizer, until, input_ids.shape[1], input_ids.shape[0])
            with torch.no_grad(), torch.autocast(device_type=model.device.type, dtype=autocast_dtype,
                                                 enabled=autocast_dtype is not None):
                output = model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                        max_length=input_ids.shape[1] + max_new_tokens, stopping_criteria=criteria,
                                        pad_token_id=tokenizer.pad_token_id, use_cache=True, do_sample=False)
            for i, tokens in zip(batch, output.tolist()):
                if not encoder_decoder:
                    tokens = tokens[input_ids.shape[1]:]
                text = tokenizer.decode(tokens, skip_special_tokens=True)
                responses[i] = postprocess_generated_text(text, until, None)
    finally:
        model.train(was_training)
    results = [{"qid": row["qid"], "num_entries": row["num_entries"], "response": responses[i],
                **score_recall(responses[i], row["answer"])} for i, row in enumerate(rows)]
    return summarize(results), results
