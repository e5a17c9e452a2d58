"""Fill a settings dataclass from parsed command-line flags (one field per flag)."""

from __future__ import annotations

import argparse
import dataclasses


def settings_from_args(cls, args: argparse.Namespace, **overrides):
    """``cls(**fields)`` taking each dataclass field from the flag of the same name.

    Fields without a flag keep their default; ``overrides`` win over both.
    """
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    values.update(overrides)
    return cls(**values)
