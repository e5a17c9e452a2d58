"""``nanoknow diary train``: train a tiny nanochat model from scratch on a diary set (CPU recipe).

As in the paper, the training data is all diary entries mixed with the training Q/A
documents (or the "simplified" variant). Documents are tokenised with a BPE trained on them,
each followed by ``<|bos|>`` (nanochat's document separator, so the model learns to stop),
and packed whole into rows that start with ``<|bos|>``. The run ends after ``--steps``
steps or ``--max-minutes``, whichever comes first; the learning-rate schedule (warm-up,
then cosine decay) follows whichever budget is further along, so a run cut by time still
ends with a decayed rate. The result is a nanochat checkpoint folder for
``lm_eval --model nanochat``; a quick greedy recall check on training and test questions is
written to ``recall_check.jsonl`` and logged.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from pathlib import Path

from nanoknow_common.errors import NanoKnowInputError

from projection.diary import schema
from projection.diary.generator import DEFAULT_SEED, SIZES, generate_diary_set
from projection.diary.files import read_manifest, read_qa_split
from nanoknow_tasks.diary.metrics import pooled_share, score_recall

log = logging.getLogger(__name__)

#: ``max_gen_toks`` of the diary tasks (``_diary_base_yaml``).
TASK_MAX_GEN_TOKS = 512





def load_training_data(diary_dir: str | None, diarists: int, seed: int, variant: str) -> tuple[list[str], dict, int]:
    """Training document texts, the Q/A rows per split and the number of diarists."""
    if diary_dir:
        import pyarrow.parquet as pq

        manifest = read_manifest(diary_dir)
        shards = manifest["files"].get(variant) or []
        if not shards:
            raise NanoKnowInputError(f"no {variant} shards listed", file=Path(diary_dir) / "manifest.json",
                                     field=f"files.{variant}")
        texts = []
        for shard in shards:
            path = Path(diary_dir) / shard
            if not path.is_file():
                raise NanoKnowInputError("missing shard", file=path)
            texts += pq.read_table(path, columns=["text"]).column("text").to_pylist()
        rows = {split: read_qa_split(diary_dir, split) for split in ("train", "test")}
        return texts, rows, manifest["diarists"]
    diary = generate_diary_set(diarists, seed)
    texts = [doc["text"] for doc in diary.documents(variant)]
    return texts, {split: [d.qa_row() for d in diary.split(split)] for split in ("train", "test")}, diarists


def pack_rows(docs: list[list[int]], row_len: int, bos: int, rng: random.Random) -> list[list[int]]:
    """Shuffle tokenised documents and pack them whole into rows ``[bos] + doc + [bos] + ...``.

    Each row holds at most ``row_len + 1`` tokens (inputs and shifted targets). A document
    longer than a row is cut (never the case with the default settings).
    """
    order = list(range(len(docs)))
    rng.shuffle(order)
    rows, row = [], [bos]
    for i in order:
        piece = docs[i][:row_len] + [bos]
        if len(row) + len(piece) > row_len + 1:
            rows.append(row)
            row = [bos]
        row += piece
    if len(row) > 1:
        rows.append(row)
    return rows


def _batch(rows: list[list[int]]):
    import torch

    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    targets = torch.full((len(rows), width), -1, dtype=torch.long)
    for i, row in enumerate(rows):
        t = torch.tensor(row)
        ids[i, :len(row)] = t
        targets[i, :len(row) - 1] = t[1:]
    return ids[:, :-1], targets[:, :-1]


def lr_factor(progress: float, step: int, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to 10% as progress goes 0 -> 1."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def train_model(model, docs: list[list[int]], bos: int, *, steps: int, max_seconds: float, batch_rows: int,
                row_len: int, lr: float, warmup: int, seed: int, log_path: Path | None = None) -> dict:
    """Train ``model`` in place on packed documents; return a summary (steps, epochs, loss, seconds)."""
    import torch
    import torch.nn.functional as F
    from tqdm import tqdm

    rng = random.Random(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    model.train()
    start = time.monotonic()
    rows, cursor, epoch, step, loss_value = pack_rows(docs, row_len, bos, rng), 0, 0, 0, float("nan")
    log.info("%d documents packed into %d rows of <= %d tokens per epoch", len(docs), len(rows), row_len)
    log_file = open(log_path, "w", encoding="utf-8") if log_path else None
    bar = tqdm(total=steps, desc="diary train")
    try:
        while True:
            elapsed = time.monotonic() - start
            progress = max(step / steps, elapsed / max_seconds)
            if progress >= 1.0:
                break
            if cursor + batch_rows > len(rows):
                rows, cursor, epoch = pack_rows(docs, row_len, bos, rng), 0, epoch + 1
            ids, targets = _batch(rows[cursor:cursor + batch_rows])
            cursor += batch_rows
            for group in optimizer.param_groups:
                group["lr"] = lr * lr_factor(progress, step, warmup)
            logits = model(ids)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            loss_value = loss.item()
            bar.update(1)
            if step % 25 == 0 or step == 1:
                bar.set_postfix(loss=f"{loss_value:.3f}", epoch=epoch)
                if log_file:
                    log_file.write(json.dumps({"step": step, "epoch": epoch + cursor / len(rows), "loss": loss_value,
                                               "lr": optimizer.param_groups[0]["lr"],
                                               "seconds": round(time.monotonic() - start, 1)}) + "\n")
                    log_file.flush()
    finally:
        bar.close()
        if log_file:
            log_file.close()
    model.eval()
    return {"steps": step, "epochs": round(epoch + cursor / max(len(rows), 1), 2), "final_loss": loss_value,
            "seconds": round(time.monotonic() - start, 1)}


def recall_check(model, tokenizer, rows: list[dict], *, max_new_tokens: int = 512) -> tuple[dict, list[dict]]:
    """Greedy recall of ``rows`` (Q/A records) with the task's prompt and stop rules; metrics and results."""
    from nanochat_adapter.decoding import generate_greedy

    prompts = [[tokenizer.bos_id] + tokenizer.encode(r["question"] + schema.QUESTION_ANSWER_SEPARATOR) for r in rows]
    results = []
    for start in range(0, len(rows), 16):
        outputs = generate_greedy(model, prompts[start:start + 16], max_new_tokens,
                                  stop_token_ids=(tokenizer.bos_id, tokenizer.assistant_end_id))
        for row, tokens in zip(rows[start:start + 16], outputs):
            text = tokenizer.decode([t for t in tokens if t not in (tokenizer.bos_id, tokenizer.assistant_end_id)])
            text = text.split(schema.QUESTION_PREFIX)[0]  # the tasks' stop sequence
            results.append({"qid": row["qid"], "split": row["split"], "response": text, **score_recall(text, row["answer"])})
    summary = {key: sum(r[key] for r in results) / len(results) for key in ("exact_recall", "count_accuracy", "count_error")}
    summary["entry_accuracy"] = pooled_share([r["entry_accuracy"] for r in results])
    return summary, results


def eval_command(checkpoint: Path, num_diarists: int, diary_dir: str | None, seed: int) -> str:
    """The lm_eval command line that evaluates ``checkpoint`` on the matching diary task."""
    suffix = next((k for k, v in SIZES.items() if v == num_diarists), None)
    task = f"nanoknow_diary_{suffix}" if suffix else "<no diary task has %d diarists>" % num_diarists
    metadata = {"diary_dir": str(diary_dir)} if diary_dir else ({"diary_seed": seed} if seed != DEFAULT_SEED else {})
    return (f"lm_eval --model nanochat --model_args pretrained={checkpoint} --device cpu --tasks {task}"
            + (f" --metadata '{json.dumps(metadata)}'" if metadata else ""))


