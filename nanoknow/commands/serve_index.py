"""``nanoknow serve-index``: serve a local Lucene index over HTTP for ``project --retriever rest``.

Texts come from the index when it stores raw documents (the released FineWeb-Edu index does),
else from ``--corpus``. Listens on loopback unless ``--host`` says otherwise; beyond loopback a
token is required, read from the environment (``NANOKNOW_INDEX_TOKEN`` or ``--token-env``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from projection.index.service import DEFAULT_PORT, DEFAULT_TOKEN_ENV, ServiceSettings, serve

EXAMPLE = ("NANOKNOW_INDEX_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe(32))') "
           "nanoknow serve-index --index sample-index --name sample --corpus sample-corpus --host 0.0.0.0 --port 8081")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", required=True, type=Path,
                        help="Lucene index folder (nanoknow index, or the released one)")
    parser.add_argument("--name", default=None,
                        help="index name in the URLs, /v1/NAME/search (default: the index folder's name)")
    parser.add_argument("--corpus", default=None,
                        help="parquet corpus to read texts from (default: the index's stored raw documents)")
    parser.add_argument("--text-column", default="text", help="parquet column holding the text (default text)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; anything else needs a token)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--token-env", default=DEFAULT_TOKEN_ENV,
                        help=f"environment variable holding the bearer token (default {DEFAULT_TOKEN_ENV}); "
                             "when set, every request must carry it")
    parser.add_argument("--max-hits", type=int, default=1000, help="largest hits= a request may ask (default 1000)")
    parser.add_argument("--max-query-chars", type=int, default=2000,
                        help="longest query in characters (default 2000)")
    parser.add_argument("--threads", type=int, default=8,
                        help="Java threads searching each batch of concurrent requests (default 8)")


def run(args: argparse.Namespace) -> int:
    serve(ServiceSettings(index=args.index, name=args.name, corpus=args.corpus, text_column=args.text_column,
                          host=args.host, port=args.port, token_env=args.token_env, max_hits=args.max_hits,
                          max_query_chars=args.max_query_chars, threads=args.threads))
    return 0
