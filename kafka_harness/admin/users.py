"""``kafka-harness users``: list, add and delete SCRAM users on any cluster (KIP-554).

kafka-harness users -b HOST:PORT list [USER ...]
kafka-harness users -b HOST:PORT add USER --password P [--mechanism SCRAM-SHA-256 ...] [--iterations N]
kafka-harness users -b HOST:PORT delete USER [--mechanism SCRAM-SHA-512 ...]   (default: every one it has)

As ``kafka-configs.sh --entity-type users --alter --add-config 'SCRAM-SHA-256=[password=P]'``: the
password is salted here and only the salted password reaches the broker (AlterUserScramCredentials),
which any broker of a cluster forwards to the controller. ``--command-config FILE`` names the
client properties of a secured cluster. Exit 0 when every user's change worked, 1 when the broker
refused one (its Kafka error printed), 2 for a usage error or an unusable properties file.
"""

from __future__ import annotations

import argparse
import sys

from fixtures.wire import WireClient
from fixtures.wire import scram_admin as scram

from .common import add_connection_args, emit, run_wire

PROG = "kafka-harness users"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    add_connection_args(parser)
    sub = parser.add_subparsers(dest="action", required=True)
    listing = sub.add_parser("list")
    listing.add_argument("users", nargs="*")
    add = sub.add_parser("add")
    add.add_argument("user")
    add.add_argument("--password", required=True)
    add.add_argument("--mechanism", action="append", choices=sorted(scram.MECHANISM_TYPES))
    add.add_argument("--iterations", type=int, default=scram.DEFAULT_ITERATIONS)
    delete = sub.add_parser("delete")
    delete.add_argument("user")
    delete.add_argument("--mechanism", action="append", choices=sorted(scram.MECHANISM_TYPES))
    args = parser.parse_args(argv)
    if args.action == "add" and not 0 < args.iterations <= scram.MAX_CLIENT_ITERATIONS:
        parser.error(f"--iterations: 1 to {scram.MAX_CLIENT_ITERATIONS} (the broker takes 4096 to 16384)")
    return run_wire(args, parser, PROG, _act)


def _act(args: argparse.Namespace, wire: WireClient) -> int:
    if args.action == "list":
        error, users = scram.describe(wire, args.users or None)
        if error != "NONE":
            print(f"{PROG}: {error}", file=sys.stderr)
            return 1
        rows = [
            {
                "user": r.user,
                "credentials": [f"{m}:{i}" for m, i in r.credentials],
                "error": None if r.error == "NONE" else f"{r.error}: {r.message}",
            }
            for r in sorted(users.values(), key=lambda r: r.user)
        ]
        emit(args, rows, ["user", "credentials", "error"])
        return 0 if all(r.error == "NONE" for r in users.values()) else 1
    mechanisms: list[str] = args.mechanism or []
    if args.action == "add":
        mechanisms = mechanisms or ["SCRAM-SHA-256", "SCRAM-SHA-512"]
        results = [
            scram.alter(wire, upsertions=[scram.upsertion(args.user, m, args.password, args.iterations)])
            for m in mechanisms  # one request each: Kafka refuses a user twice in one request
        ]
    else:
        if not mechanisms:
            _error, users = scram.describe(wire, [args.user])
            found = users.get(args.user)
            mechanisms = [m for m, _i in found.credentials] if found is not None else []
            if not mechanisms:
                print(f"{PROG}: {args.user}: no SCRAM credentials", file=sys.stderr)
                return 1
        results = [scram.alter(wire, deletions=[scram.deletion(args.user, m)]) for m in mechanisms]
    failed = 0
    for mechanism, result in zip(mechanisms, results, strict=True):
        r = result.get(args.user)
        if r is None or r.error != "NONE":
            failed += 1
            why = "no result for the user" if r is None else f"{r.error}: {r.message}"
            print(f"{PROG}: {args.user} {mechanism}: {why}", file=sys.stderr)
        else:
            print(f"{'added' if args.action == 'add' else 'deleted'} {args.user} {mechanism}")
    return 1 if failed else 0
