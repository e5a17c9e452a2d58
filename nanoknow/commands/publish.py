"""``nanoknow publish``: command-line flags for :mod:`projection.datasets.publish`."""

from __future__ import annotations

from nanoknow_common.errors import NanoKnowInputError
from pathlib import Path
import argparse
from projection.datasets.publish import resolve_token, upload, write_hub_folder


EXAMPLE = "nanoknow publish --build-dir build/ --out hub/nanoknow --repo-id my-org/nanoknow --private"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``nanoknow publish``."""
    parser.add_argument("--build-dir", required=True, type=Path, help="output folder of `nanoknow build`")
    parser.add_argument("--out", required=True, type=Path, help="folder to write the Hub layout to")
    parser.add_argument("--repo-id", help="upload to this Hub dataset repository (ORG/NAME)")
    parser.add_argument("--private", action="store_true", help="create the Hub repository as private")
    parser.add_argument("--token", help="Hub token (default: $HF_TOKEN or the cached login)")
    parser.add_argument("--license", dest="license", action="append",
                        help="licence identifier(s) for the card (default: those of the sources)")
    parser.add_argument("--overwrite", action="store_true", help="replace --out if it holds an earlier publish")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``nanoknow publish``."""
    if args.repo_id is not None and (args.repo_id.count("/") != 1 or not all(args.repo_id.split("/"))):
        raise NanoKnowInputError(f"must be ORG/NAME, got {args.repo_id!r}", field="--repo-id")
    token = resolve_token(args.token) if args.repo_id else None
    configs = write_hub_folder(args.build_dir, args.out, licenses=args.license, repo_id=args.repo_id,
                               overwrite=args.overwrite)
    for c in configs:
        print(f"{c['config']}: " + ", ".join(f"{s} {v['num_examples']}" for s, v in c["splits"].items()))
    print(f"wrote {args.out}")
    if args.repo_id:
        try:
            url = upload(args.out, args.repo_id, token=token, private=args.private)
        except Exception as err:  # network or Hub refusal: the folder is written, say how to retry
            print(f"nanoknow publish: upload to {args.repo_id} failed ({type(err).__name__}: "
                  f"{str(err).splitlines()[0] if str(err) else ''}); the folder is complete, retry with "
                  f"`huggingface-cli upload --repo-type dataset {args.repo_id} {args.out}`")
            return 1
        print(f"uploaded to https://huggingface.co/datasets/{args.repo_id} ({url})")
    return 0
