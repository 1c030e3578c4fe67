"""A load spec in one string, for commands that run load alongside something else (the chaos CLI).

``records=200000,rate=2000,partitions=6,verify`` becomes the argument list of
``kafka-harness load``: each ``name=value`` is the option ``--name value`` and a
bare ``name`` is the flag ``--name``. The list is checked with the load command's
own parser, so a bad spec fails at once with the same message the command gives.
"""

from __future__ import annotations

import sys

from .cli import build_parser


class LoadSpecError(ValueError):
    """The spec names an unknown option or gives a bad value."""


def load_argv(spec: str, bootstrap_servers: str) -> list[str]:
    """``kafka-harness load`` arguments for ``spec`` against a running cluster at ``bootstrap_servers``."""
    args = ["--target", f"bootstrap:{bootstrap_servers}"]
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if name.strip() in ("target", "synthetic"):
            raise LoadSpecError(f"{name.strip()!r} is set by the caller, not by a load spec")
        args.append(f"--{name.strip()}")
        if sep:
            args.append(value.strip())
    parser = build_parser()
    parser.exit_on_error = False
    try:
        parsed, unknown = parser.parse_known_args(args)
    except Exception as exc:  # argparse.ArgumentError, or a type conversion error
        raise LoadSpecError(f"load spec {spec!r}: {exc}") from None
    if unknown:
        raise LoadSpecError(f"load spec {spec!r}: unknown {' '.join(unknown)}")
    del parsed
    return args


def load_command(spec: str, bootstrap_servers: str) -> list[str]:
    """The whole command line (this Python, ``-m kafka_harness load ...``) to start as a process."""
    return [sys.executable, "-m", "kafka_harness", "load", *load_argv(spec, bootstrap_servers)]
