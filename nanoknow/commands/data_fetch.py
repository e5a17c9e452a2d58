"""``nanoknow data fetch``: command-line flags for :mod:`projection.data.fetch`."""

from __future__ import annotations

from nanoknow_common.errors import NanoKnowInputError
from pathlib import Path
from projection.data.data_root import default_fetch_dir
from projection.data.fetch import fetch


EXAMPLE = "nanoknow data fetch --dest ~/nanoknow-data --datasets nq,hotpotqa --corpora fineweb-edu"


def add_arguments(parser) -> None:
    parser.add_argument("--dest", type=Path, default=None,
                        help=f"target directory (default: {default_fetch_dir()}, where tasks look)")
    parser.add_argument("--datasets", help="comma-separated subset of nq,squad,hotpotqa (default: all)")
    parser.add_argument("--corpora", help="comma-separated subset of fineweb-edu,climbmix (default: all)")
    parser.add_argument("--base-url", help="mirror of the upstream questions-and-qrels/ folder "
                        "(default: the pinned upstream commit)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")


def run(args) -> int:
    dest = args.dest or default_fetch_dir()
    outcomes = fetch(dest, base_url=args.base_url, datasets=_split(args.datasets),
                     corpora=_split(args.corpora), timeout=args.timeout)
    failed = [o for o in outcomes if o.status == "failed"]
    done = len(outcomes) - len(failed)
    print(f"{done} of {len(outcomes)} files in place under {dest}")
    if failed:
        raise NanoKnowInputError(f"{len(failed)} file(s) failed, first: {failed[0].reason}")
    return 0


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None
