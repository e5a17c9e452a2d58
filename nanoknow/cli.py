"""The ``nanoknow`` command: a thin dispatcher over sub-commands living in their own modules.

Each entry of :data:`COMMANDS` names a module that defines ``add_arguments(parser)`` and
``run(args) -> int``; it is imported only when that command runs (``--help`` of the top
level imports none of them), so a slow dependency of one command never slows another.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from nanoknow_common.errors import NanoKnowInputError
from nanoknow_common.interrupts import Interrupted, install_stop_handlers, restore_handlers

#: command name -> (module, one-line help). Nested commands use a space ("data fetch").
COMMANDS: dict[str, tuple[str, str]] = {
    "data fetch": ("nanoknow.commands.data_fetch", "download the NanoKnow question/answer/qrels files and check their sha256"),
    "data verify": ("nanoknow.commands.data_verify", "validate a NanoKnow data directory and print counts"),
    "make-sample-corpus": ("nanoknow.commands.make_sample_corpus", "write a small FineWeb-like corpus with planted answers"),
    "index": ("nanoknow.commands.index", "build a Lucene BM25 index over parquet shards"),
    "project": ("nanoknow.commands.project", "project a QA benchmark onto a corpus (BM25, matching, LLM verification)"),
    "build": ("nanoknow.commands.build", "build NanoKnow datasets with oracle and distractor passages"),
    "publish": ("nanoknow.commands.publish", "write (and upload) built datasets in the Hugging Face Hub layout"),
    "report": ("nanoknow.commands.report", "summarise lm-eval outputs into tables and plots"),
    "demo": ("nanoknow.commands.demo", "run the whole chain offline on an embedded sample"),
    "convert-nanochat": ("nanoknow.commands.convert_nanochat", "convert a nanochat checkpoint to a transformers folder"),
    "diary make": ("nanoknow.commands.diary_make", "generate the diary knowledge-extent benchmark"),
    "diary train": ("nanoknow.commands.diary_train", "train a tiny nanochat model on a diary set (CPU recipe)"),
    "exposure": ("nanoknow.commands.exposure", "split questions by what a checkpoint read (seen/unseen, frequency read)"),
    "serve-index": ("nanoknow.commands.serve_index", "serve a Lucene index over HTTP (for project --retriever rest)"),
    "diary finetune": ("nanoknow.commands.diary_finetune", "fine-tune a pretrained HF model on a diary set, stop at the plateau"),
    "diary sweep": ("nanoknow.commands.diary_sweep", "fine-tune and evaluate a grid of models x diary sizes x variants"),
    "diary report": ("nanoknow.commands.diary_report", "draw the diary figures (accuracy vs model size) from lm-eval outputs"),
    "count": ("nanoknow.commands.count", "count every question's answer documents over the whole corpus (both rules)"),
}

log = logging.getLogger("nanoknow")


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with a one-line reason (its default prints the whole usage)."""

    def error(self, message):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def _build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="nanoknow", description="NanoKnow: what did a model learn in pre-training?")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    groups: dict[str, argparse._SubParsersAction] = {}
    wanted = [a for a in argv if not a.startswith("-")][:2]
    for name, (module_name, help_text) in COMMANDS.items():
        words = name.split()
        target = subparsers
        if len(words) == 2:
            if words[0] not in groups:
                group_parser = subparsers.add_parser(words[0], help=f"{words[0]} commands")
                groups[words[0]] = group_parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", parser_class=_Parser)
            target = groups[words[0]]
        sub = target.add_parser(words[-1], help=help_text, description=help_text,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.set_defaults(_module=module_name, _name=name)
        if words == wanted[: len(words)]:
            module = importlib.import_module(module_name)
            module.add_arguments(sub)
            if getattr(module, "EXAMPLE", None):
                sub.epilog = "example:\n  " + module.EXAMPLE
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``nanoknow`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _build_parser(argv)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "_module", None):
        parser.print_help()
        return 2
    previous_handlers = install_stop_handlers()
    try:
        module = importlib.import_module(args._module)
        return int(module.run(args) or 0)
    except NanoKnowInputError as err:
        print(f"nanoknow {args._name}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # disk full, permissions...: one line naming the path
        log.debug("%s failed", args._name, exc_info=True)
        where = f"{err.filename}: " if err.filename else ""
        print(f"nanoknow {args._name}: error: {where}{err.strerror or err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:  # SIGINT, or SIGTERM/SIGHUP turned into Interrupted
        name = str(err) if isinstance(err, Interrupted) else "stopped by SIGINT"
        hint = getattr(sys.modules.get(args._module), "ON_INTERRUPT", "run the same command again to go on")
        print(f"nanoknow {args._name}: {name}; {hint}", file=sys.stderr)
        _exit_now(128 + getattr(err, "signum", 2))
    finally:  # main() may be called in-process (tests, scripts): leave their handlers as they were
        restore_handlers(previous_handlers)


def _exit_now(code: int) -> None:
    """Exit with ``code``. Once a JVM runs in this process, end it at once: a Java call may still
    run in an abandoned helper thread, and a normal interpreter shutdown could wait for it or
    crash the JVM under it."""
    if "jnius" not in sys.modules:
        raise SystemExit(code)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
