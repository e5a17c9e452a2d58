"""``nanoknow data verify``: command-line flags for :mod:`projection.data.check_files`."""

from __future__ import annotations

from nanoknow_common.errors import NanoKnowInputError
from pathlib import Path
import json
from projection.data.data_root import resolve_data_dir
from projection.data.check_files import MAX_ERRORS_SHOWN, verify_data_dir


EXAMPLE = "nanoknow data verify --data-dir ../shared/nanoknow-data --json"


def add_arguments(parser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="data root (default: $NANOKNOW_DATA_DIR, then the fetch cache)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args) -> int:
    result = verify_data_dir(resolve_data_dir(args.data_dir))
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        _print_text(result)
    if not result["ok"]:
        first = next(e for d in result["datasets"].values()
                     for e in d["answer_errors"] + [x for c in d["corpora"].values() for x in c["errors"]])
        raise NanoKnowInputError(f"invalid NanoKnow data; first problem: {first}")
    return 0


def _print_text(result: dict) -> None:
    print(f"NanoKnow data in {result['data_dir']}")
    for dataset, info in result["datasets"].items():
        for corpus_dir, report in info["corpora"].items():
            qrels = "missing" if report["qrels_lines"] is None else f"{report['qrels_lines']} lines"
            print(f"  {dataset}/{corpus_dir}: supported={report['supported']} "
                  f"unsupported={report['unsupported']} qrels={qrels}")
            for name in report["missing"]:
                print(f"    missing: {name}")
        errors = info["answer_errors"] + [e for r in info["corpora"].values() for e in r["errors"]]
        for error in errors[:MAX_ERRORS_SHOWN]:
            print(f"    error: {error}")
        if len(errors) > MAX_ERRORS_SHOWN:
            print(f"    ... and {len(errors) - MAX_ERRORS_SHOWN} more errors")
    print("OK" if result["ok"] else "INVALID")
