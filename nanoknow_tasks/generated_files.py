"""Keep generated task files in step with their generator (write them, or ``--check`` them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def sync_generated_files(base_dir: Path, files: dict[str, str], *, check: bool, header: str) -> list[str]:
    """Make ``base_dir`` hold exactly ``files`` among the files that start with ``header``.

    Writes files that are missing or differ and deletes generated files no longer produced
    (only those whose first line is ``header``). With ``check`` nothing is changed. Returns
    the relative paths that were (or, with ``check``, would be) written or deleted.
    """
    stale = []
    for relative, text in files.items():
        path = base_dir / relative
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(relative)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in sorted(base_dir.rglob("*.yaml")):
        relative = str(path.relative_to(base_dir))
        if relative not in files and path.read_text(encoding="utf-8").startswith(header):
            stale.append(relative)
            if not check:
                path.unlink()
    return stale


def generator_main(description: str, base_dir: Path, files: dict[str, str], header: str,
                   argv: list[str] | None = None) -> int:
    """Command line of a task-file generator: rewrite the files, or exit 1 if ``--check`` finds drift."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="only report files that are out of date")
    args = parser.parse_args(argv)
    stale = sync_generated_files(base_dir, files, check=args.check, header=header)
    if args.check and stale:
        sys.stderr.write("out of date: " + ", ".join(stale) + "\n")
        return 1
    return 0
