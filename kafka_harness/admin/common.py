"""What the admin commands share: finding the cluster, printing tables or JSON, reporting errors."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from fixtures.targets import add_security_options, security_from_args
from fixtures.wire import WireClient, WireError
from fixtures.wire.security import ClientSecurity

TIMEOUT_S = 30.0
_limit = {"timeout_s": TIMEOUT_S}
"""This command's ``--timeout`` (one command per process)."""


class AdminError(Exception):
    """A broker refused or failed an admin operation; the message names the Kafka error."""


def add_connection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", "-b", help="HOST:PORT[,HOST:PORT...] of the cluster")
    parser.add_argument("--target", help="bootstrap:HOST:PORT[,...] (same as --bootstrap)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per request (default 30)")
    add_security_options(parser)


def connect_wire(bootstrap: str, security: ClientSecurity, timeout_s: float) -> WireClient:
    """A raw connection to the first bootstrap broker that answers (and authenticates us)."""
    errors = []
    for address in bootstrap.split(",")[:16]:
        try:
            return WireClient(address.strip(), security=security, timeout_s=timeout_s)
        except (OSError, WireError) as exc:
            errors.append(f"{address}: {exc}")
    raise WireError("; ".join(errors) or "no bootstrap address")


def run_wire(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    prog: str,
    act: Callable[[argparse.Namespace, WireClient], int],
) -> int:
    """A raw-protocol admin command: ``--timeout`` and ``--command-config`` checked, ``act`` run over
    a connection to the first bootstrap broker that answers; 1 when none does, 2 for bad properties."""
    bootstrap = bootstrap_of(args, parser)
    if not 0 < args.timeout <= 3600:
        parser.error("--timeout is seconds, more than 0 and at most 3600")
    try:
        security = security_from_args(args) or ClientSecurity()
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    try:
        with connect_wire(bootstrap, security, args.timeout) as wire:
            return act(args, wire)
    except (OSError, WireError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1


def timeout_s() -> float:
    return _limit["timeout_s"]


def admin_client(args: argparse.Namespace, parser: argparse.ArgumentParser, prog: str) -> Any:
    """confluent-kafka's AdminClient for ``--bootstrap``, with ``--command-config``'s settings translated
    for librdkafka; a file that cannot be used ends the command with one line (exit 2)."""
    from confluent_kafka.admin import AdminClient

    bootstrap = bootstrap_of(args, parser)
    try:
        security = security_from_args(args)
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if not 0 < args.timeout <= 3600:
        parser.error("--timeout is seconds, more than 0 and at most 3600")
    _limit["timeout_s"] = args.timeout
    settings: dict[str, str | int | float | bool] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": 10000,
    }
    if security is not None:
        settings.update(security.confluent())
    return AdminClient(settings)


def bootstrap_of(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    if args.bootstrap:
        return str(args.bootstrap)
    if args.target and args.target.startswith("bootstrap:"):
        return str(args.target[len("bootstrap:") :])
    if args.target:
        parser.error(
            f"--target {args.target}: admin commands work on a running cluster; give bootstrap:HOST:PORT"
        )
    parser.error("give --bootstrap HOST:PORT (or --target bootstrap:HOST:PORT)")


def describe_error(exc: BaseException) -> str:
    """'TOPIC_ALREADY_EXISTS: Topic 't' already exists.' from a confluent-kafka exception."""
    err = exc.args[0] if exc.args else exc
    name = getattr(err, "name", None)
    text = getattr(err, "str", None)
    if callable(name) and callable(text):
        return f"{name()}: {text()}"
    return f"{type(exc).__name__}: {exc}"


def wait(future: Any) -> Any:
    try:
        return future.result(timeout=timeout_s())
    except Exception as exc:  # confluent-kafka raises KafkaException wrapping a KafkaError
        raise AdminError(describe_error(exc)) from None


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    widths = {c: max([len(c)] + [len(_cell(r.get(c))) for r in rows]) for c in columns}
    print("  ".join(c.upper().ljust(widths[c]) for c in columns).rstrip())
    for row in rows:
        print("  ".join(_cell(row.get(c)).ljust(widths[c]) for c in columns).rstrip())


def _cell(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def emit(args: argparse.Namespace, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    if args.json:
        print(json.dumps(list(rows), indent=2, default=str))
    else:
        print_table(rows, columns)


def run(command: Callable[[], int], prog: str) -> int:
    from confluent_kafka import KafkaException

    try:
        return command()
    except AdminError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
    except KafkaException as exc:
        print(f"{prog}: {describe_error(exc)}", file=sys.stderr)
    except Exception as exc:  # a client-side refusal (an API the broker lacks): a message, not a traceback
        print(f"{prog}: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 1
