"""The ``llm_judge`` metric at scale: judgements per second through its OpenAI backend.

N judgements (NQ questions with their reference answers and synthetic candidate answers, half
right, half another question's answer) go through the real metric code of
``nanoknow_tasks/judge.py``: one item per sample, the SQLite judge cache (a fresh file per
run), the OpenAI backend's concurrent requests with retries, parsing of the JSON verdicts,
aggregation. Printed: judgements/s, the accuracy the metric computed (it must equal the share
of right candidates, which proves every verdict was read) and, against the baseline of one
request at a time (concurrency 1, timed on a share of the items and scaled), the median ratio
``judge_speedup=`` (min-max) over ``--repeats`` interleaved runs.

Local mode (default, no GPU): a scripted OpenAI-compatible server on 127.0.0.1 (HTTP/1.1
with keep-alive, as vLLM's server; a deep listen queue) answers each request with the strict
JSON verdict a good judge would give, after ``--server-latency-ms`` (a stand-in for a model
server's time per request). This measures the client side: how many judgements the metric
keeps in flight and what it costs per judgement.

Server mode: ``--base-url`` and ``--model`` point at a running server. For the paper's judge at
full scale without downloading it, serve a Qwen3-14B-shaped model with random weights in vLLM
(a dummy model generates until ``max_tokens`` on every request: the worst case):

    python benchmarks/bench_judge.py --write-dummy-model /tmp/qwen3-14b-dummy [--tokenizer-from DIR]
    vllm serve /tmp/qwen3-14b-dummy --load-format dummy --dtype bfloat16 --max-model-len 4096 \\
        --served-model-name qwen3-14b-dummy --port 8000 &
    python benchmarks/bench_judge.py --base-url http://127.0.0.1:8000/v1 --model qwen3-14b-dummy \\
        --judgements 6000 --concurrency 256 --baseline-items 8 --repeats 3

``--write-dummy-model`` writes ``config.json`` from Qwen3-14B's published architecture (40
layers, width 5120, MLP 17408, 40 query / 8 key-value heads of 128, vocab 151,936, untied
embeddings) and a tokenizer: Qwen3's own tokenizer files from ``--tokenizer-from`` (11 MB, no
weights), else, offline, SmolLM2's 49k tokenizer exported from the bundled GGUF file, with the
vocabulary set to its 49,152 rows (about 4% less weight read per generated token than with
Qwen3's 151,936).

EXAMPLE (local, CPU):
    python benchmarks/bench_judge.py --judgements 2000 --concurrency 32 --server-latency-ms 20
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_ANSWERS_SHOWN = 10  # nanoknow_tasks.judge.prompt shows the judge at most this many references

#: Qwen3-14B's architecture as published in its config.json (Qwen/Qwen3-14B).
QWEN3_14B = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 5120,
    "intermediate_size": 17408, "num_hidden_layers": 40, "num_attention_heads": 40,
    "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-6, "rope_theta": 1000000, "rope_scaling": None, "attention_bias": False,
    "attention_dropout": 0.0, "tie_word_embeddings": False, "use_sliding_window": False,
    "sliding_window": None, "max_window_layers": 40, "initializer_range": 0.02, "use_cache": True,
    "torch_dtype": "bfloat16", "vocab_size": 151936, "bos_token_id": 151643, "eos_token_id": 151645,
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                   "special_tokens_map.json", "added_tokens.json")


def write_dummy_model(folder: Path, tokenizer_from: Path | None) -> Path:
    """A vLLM-servable folder (config + tokenizer, no weights) of Qwen3-14B's shape."""
    folder.mkdir(parents=True, exist_ok=True)
    config = dict(QWEN3_14B)
    if tokenizer_from is not None:
        copied = [name for name in TOKENIZER_FILES if (tokenizer_from / name).is_file()]
        if "tokenizer.json" not in copied and "vocab.json" not in copied:
            raise SystemExit(f"{tokenizer_from}: no tokenizer.json or vocab.json")
        for name in copied:
            shutil.copy2(tokenizer_from / name, folder / name)
    else:
        from transformers import AutoTokenizer

        from nanoknow_common.bundled_model import smollm2_gguf

        gguf_folder, gguf_file = smollm2_gguf()
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_folder), gguf_file=gguf_file)
        tokenizer.save_pretrained(str(folder))
        config.update(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                      eos_token_id=tokenizer.eos_token_id)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": config["bos_token_id"], "eos_token_id": config["eos_token_id"]}), encoding="utf-8")
    return folder


def judge_items_for(n: int, seed: int, data_dir: Path | None) -> tuple[list[tuple[str, list[str], str]], int]:
    """``n`` (question, answers, candidate) triples from the NQ answers; and how many are right."""
    rng = random.Random(seed)
    if data_dir is not None:
        from projection.data.files import load_questions

        questions = [(q.question, q.answers) for split in ("supported", "unsupported")
                     for q in load_questions(data_dir, "nq", "fineweb-edu", split)]
    else:
        questions = [(f"who is person number {i}", [f"person {i}"]) for i in range(1000)]
    triples, right = [], 0
    for i in range(n):
        question, answers = questions[i % len(questions)]
        answers = answers[:MAX_ANSWERS_SHOWN]  # what the judge is shown
        if i % 2 == 0:
            candidate, right = f"It is {rng.choice(answers)}.", right + 1
        else:  # another question's answer (rarely also right: counted by the same rule below)
            candidate = f"It is {rng.choice(rng.choice(questions)[1])}."
            right += _contains_reference(candidate, answers)
        triples.append((question, answers, candidate))
    return triples, right


def _contains_reference(candidate: str, answers: list[str]) -> bool:
    def norm(text: str) -> str:  # the judge prompt collapses whitespace (no-break spaces too)
        return " ".join(text.split()).lower()

    return any(norm(a) in norm(candidate) for a in answers)


def scripted_verdict(messages: list[dict]) -> str:
    """The JSON verdict a good judge would give to the metric's judge prompt."""
    text = messages[-1]["content"]
    answers = json.loads(text.split("Reference answers (matching any one of them is enough): ", 1)[1]
                         .split("\n", 1)[0])
    candidate = text.split("Candidate answer: ", 1)[1].split("\n", 1)[0]
    return json.dumps({"correct": _contains_reference(candidate, answers), "reason": "scripted verdict"})


class ScriptedJudgeServer:
    """OpenAI chat completions on 127.0.0.1 answering with :func:`scripted_verdict` after ``latency_s``."""

    def __init__(self, latency_s: float):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: one connection per client thread

            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                time.sleep(latency_s)
                reply = {"id": "x", "object": "chat.completion", "model": body.get("model"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": scripted_verdict(body["messages"])}}]}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def timed_judgements(triples, *, base_url: str, model: str, concurrency: int, max_new_tokens: int) -> tuple[float, list]:
    """Judge ``triples`` through the llm_judge metric; (seconds, judgements)."""
    from nanoknow_tasks.judge import metric as judge

    with tempfile.TemporaryDirectory() as tmp:
        config = judge.configure(judge_backend="openai", judge_model=model, judge_base_url=base_url,
                                 judge_cache=str(Path(tmp) / "judge.sqlite"), judge_max_new_tokens=max_new_tokens,
                                 judge_options=json.dumps({"concurrency": concurrency, "progress": False}))
        items = [judge.make_item(q, a, c, config) for q, a, c in triples]
        start = time.perf_counter()
        judgements = judge.judge_items(items)
        return time.perf_counter() - start, judgements


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__[__doc__.index("EXAMPLE"):],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgements", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight (judge_options)")
    parser.add_argument("--baseline-items", type=int, default=50,
                        help="items judged one request at a time per run (the baseline), scaled")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=256, help="judge_max_new_tokens (the metric's default)")
    parser.add_argument("--server-latency-ms", type=float, default=20.0,
                        help="local mode: the scripted server's time per request")
    parser.add_argument("--base-url", help="server mode: a running OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", default="scripted-judge", help="server mode: its served model name")
    parser.add_argument("--data-dir", default=None, help="released NanoKnow files (default $NANOKNOW_DATA_DIR)")
    parser.add_argument("--write-dummy-model", type=Path, metavar="DIR",
                        help="write a Qwen3-14B-shaped folder for `vllm serve --load-format dummy` and exit")
    parser.add_argument("--tokenizer-from", type=Path, help="with --write-dummy-model: Qwen3's tokenizer files")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.write_dummy_model:
        folder = write_dummy_model(args.write_dummy_model, args.tokenizer_from)
        print(f"wrote {folder}: config.json (Qwen3-14B shape, vocab {json.loads((folder / 'config.json').read_text())['vocab_size']}) "
              "and tokenizer; serve it with vllm serve ... --load-format dummy")
        return

    import os

    root = args.data_dir or os.environ.get("NANOKNOW_DATA_DIR")
    data_dir = Path(root) if root and (Path(root) / "nq").is_dir() else None
    triples, right = judge_items_for(args.judgements, args.seed, data_dir)
    baseline = triples[:max(1, min(args.baseline_items, len(triples)))]
    server = None
    if args.base_url is None:
        server = ScriptedJudgeServer(args.server_latency_ms / 1000)
        base_url, where = server.base_url, f"scripted local server, {args.server_latency_ms:g} ms a request"
    else:
        base_url, where = args.base_url, f"server {args.base_url} model {args.model}"
    print(f"{len(triples)} judgements of NQ answers ({right} right), {where}; concurrency {args.concurrency}, "
          f"max_new_tokens {args.max_new_tokens}; baseline: {len(baseline)} one at a time", flush=True)
    try:
        timed_judgements(triples[:4], base_url=base_url, model=args.model, concurrency=4,
                         max_new_tokens=args.max_new_tokens)  # warm-up: connections, imports
        ratios, rates = [], []
        for repeat in range(1, args.repeats + 1):
            took, judgements = timed_judgements(triples, base_url=base_url, model=args.model,
                                                concurrency=args.concurrency, max_new_tokens=args.max_new_tokens)
            one_by_one, _ = timed_judgements(baseline, base_url=base_url, model=args.model, concurrency=1,
                                             max_new_tokens=args.max_new_tokens)
            rate, base_rate = len(triples) / took, len(baseline) / one_by_one
            rates.append(rate)
            ratios.append(rate / base_rate)
            unparseable = sum(not j.parsed for j in judgements)
            accuracy = sum(j.correct is True for j in judgements) / len(judgements)
            print(f"run {repeat}/{args.repeats}: {len(triples)} judgements in {took:.2f} s ({rate:.1f} judgements/s; "
                  f"accuracy {accuracy:.4f}{' as expected' if server and accuracy == right / len(triples) else ''}, "
                  f"unparseable {unparseable}); one at a time {base_rate:.1f} judgements/s; "
                  f"{ratios[-1]:.1f}x", flush=True)
        print(f"judgements_per_s={statistics.median(rates):.1f} (min {min(rates):.1f}, max {max(rates):.1f}); "
              f"{args.judgements} judgements in {args.judgements / statistics.median(rates):.1f} s")
        print(f"judge_speedup={statistics.median(ratios):.1f} (min {min(ratios):.1f}, max {max(ratios):.1f}, "
              f"{len(ratios)} runs)")
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
