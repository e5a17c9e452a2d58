"""``nanoknow project``: command-line flags for :func:`projection.pipeline.project`."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from nanoknow.commands.settings import settings_from_args
from projection.pipeline import EXAMPLE, ProjectSettings, project
from projection.stage1.retrievers import RETRIEVERS
from projection.stage1.rest_search import DEFAULT_TOKEN_ENV

__all__ = ["EXAMPLE", "add_arguments", "run"]

#: What the CLI says when a stop signal ends the run.
ON_INTERRUPT = "finished chunks are kept: run the same command with --resume to continue"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_argument_group("questions")
    src.add_argument("--questions", type=Path, help='JSONL of {"qid", "question", "answer": [...]} per line')
    src.add_argument("--data-dir", type=Path, help="or a NanoKnow data directory (both splits of --questions-from)")
    src.add_argument("--questions-from", default="fineweb-edu",
                     help="corpus folder of --data-dir whose topics list the questions (default fineweb-edu)")
    src.add_argument("--dataset", required=True, help="dataset name used in output names (nq, squad, ...)")
    src.add_argument("--limit", type=int, default=None, help="only the first N questions")
    cor = parser.add_argument_group("corpus and index")
    cor.add_argument("--index", type=Path, help="Lucene index (nanoknow index, or the released one)")
    cor.add_argument("--corpus", default=None,
                     help="parquet corpus (dir, hf://, s3://, https://) to read texts from; default: the index's raw docs")
    cor.add_argument("--corpus-name", default="fineweb-edu",
                     help="corpus folder name in the outputs (default fineweb-edu)")
    cor.add_argument("--text-column", default="text")
    cor.add_argument("--top-k", type=int, default=100, help="BM25 hits per question (default 100)")
    cor.add_argument("--threads", type=int, default=max(1, min(8, os.cpu_count() or 1)), help="search threads")
    cor.add_argument("--window-words", type=int, default=200, help="words in the passage window (default 200)")
    _add_retriever_arguments(cor)
    ver = parser.add_argument_group("verification")
    ver.add_argument("--verifier", choices=["hf", "openai", "vllm", "none"], default="hf",
                     help="LLM judge backend; none = answer matching only (default hf)")
    ver.add_argument("--model", default=None, help="judge model (hf: folder or Hub id; default the bundled SmolLM2)")
    ver.add_argument("--gguf-file", default=None, help="GGUF file inside --model's folder (hf)")
    ver.add_argument("--base-url", default=None, help="OpenAI-compatible server (default env OPENAI_BASE_URL)")
    ver.add_argument("--concurrency", type=int, default=8, help="concurrent requests (openai judge, rest retriever)")
    ver.add_argument("--device", default="cpu", help="torch device (hf)")
    ver.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                     help="weights' dtype (hf; bfloat16 is several times faster on CPUs with AVX512-BF16)")
    ver.add_argument("--batch-size", type=int, default=8, help="generation batch size (hf)")
    ver.add_argument("--max-new-tokens", type=int, default=64)
    ver.add_argument("--judge-mode", choices=["generate", "choose"], default="generate",
                     help="generate: parse the judge's written TRUE/COINCIDENTAL reply (default); choose (hf): "
                          "take the likelier of the two as first token, for models too small to follow the format")
    ver.add_argument("--verify", choices=["all", "first-true"], default="all",
                     help="judge every candidate (default, as the released qrels) or stop at the first TRUE")
    run_ = parser.add_argument_group("run")
    run_.add_argument("--out", required=True, type=Path, help="output root (upstream layout)")
    run_.add_argument("--chunk-size", type=int, default=500,
                      help="questions per resumable chunk (default 500; larger chunks read the corpus more efficiently)")
    run_.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    ray_ = parser.add_argument_group("Ray (optional extra: pip install 'nanoknow[ray]')")
    ray_.add_argument("--ray", dest="ray_address", nargs="?", const="local", default=None, metavar="ADDRESS",
                      help="run the stages on Ray: alone or 'local' starts a local Ray; 'auto', HOST:6379 or "
                           "ray://HOST:10001 joins a cluster (every node needs nanoknow, the corpus and the --index "
                           "path, or use --retriever rest). Same files as without --ray; --resume works across both")
    ray_.add_argument("--ray-cpus", type=int, default=None, help="CPUs of a local Ray (default all)")
    ray_.add_argument("--ray-verifiers", type=int, default=None,
                      help="stage-2 verifier actors, each loading the model once (default: as many as fit; "
                           "one GPU each with --device cuda or --verifier vllm, else --threads CPUs each)")


def run(args: argparse.Namespace) -> int:
    summary = project(settings_from_args(ProjectSettings, args))
    print(json.dumps(summary))
    return 0


def _add_retriever_arguments(group) -> None:
    """``--retriever`` and the ``--rest-*`` options (``--concurrency`` is the project's own)."""
    group.add_argument("--retriever", choices=RETRIEVERS, default="lucene",
                       help="lucene: search --index here (default); rest: ask a BM25 service (nanoknow serve-index, "
                            "or a Pyserini REST API) at --rest-url, no local index needed")
    group.add_argument("--rest-url", default=None, help="BM25 service base URL, e.g. http://index-host:8081 (rest)")
    group.add_argument("--rest-index", default=None, help="index name on the service, as in /v1/NAME/search (rest)")
    group.add_argument("--rest-token-env", default=DEFAULT_TOKEN_ENV,
                       help=f"environment variable holding the service's bearer token (default {DEFAULT_TOKEN_ENV}); "
                            "the token itself is never taken from the command line")
    group.add_argument("--rest-timeout", type=float, default=60.0, help="seconds per request (rest; default 60)")
    group.add_argument("--rest-retries", type=int, default=5,
                       help="retries per request on 429/5xx, timeouts and dropped connections (rest; default 5)")
