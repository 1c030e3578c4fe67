"""``kafka-harness acls``: list, add and remove ACLs on any cluster with an authorizer (issue 18).

kafka-harness acls -b HOST:PORT [--command-config FILE] list [--topic T | --group G | --cluster |
    --transactional-id X] [--resource-pattern-type any|match|literal|prefixed] [--principal User:NAME]
kafka-harness acls -b HOST:PORT add --allow-principal User:alice [--deny-principal User:bob]
    --operation read [--operation write ...] --topic T [--resource-pattern-type prefixed] [--host 1.2.3.4]
kafka-harness acls -b HOST:PORT remove [the list options] [--operation OP] [--deny | --allow]

As Kafka's ``kafka-acls.sh``: a resource is ``--topic``, ``--group``, ``--cluster`` or
``--transactional-id``; operations and pattern types by name (READ, write, ALTER_CONFIGS,
idempotent-write, ...). It speaks CreateAcls, DescribeAcls and DeleteAcls with the raw protocol
client to the first bootstrap broker (a cluster's brokers forward the writes to its controller).
Exit 0 on success, 1 when the broker refuses (the Kafka error is printed), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

from fixtures.targets import security_from_args
from fixtures.wire import WireClient, WireError
from fixtures.wire.acls import CLUSTER_NAME, AclBinding, AclFilter, create_acls, delete_acls, describe_acls
from reference_impl.protocol.acl_codes import Operation, PatternType, Permission, ResourceType, parse_code

from .common import add_connection_args, bootstrap_of, print_table

PROG = "kafka-harness acls"
COLUMNS = ["resource_type", "name", "pattern", "principal", "host", "operation", "permission"]


def _resource_args(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--topic")
    group.add_argument("--group")
    group.add_argument("--cluster", action="store_true")
    group.add_argument("--transactional-id")
    p.add_argument("--resource-pattern-type", help="literal | prefixed (add); any | match too (list, remove)")


def _resource(args: argparse.Namespace) -> tuple[int, str | None]:
    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.group is not None:
        return ResourceType.GROUP, args.group
    if args.cluster:
        return ResourceType.CLUSTER, CLUSTER_NAME
    if args.transactional_id is not None:
        return ResourceType.TRANSACTIONAL_ID, args.transactional_id
    return ResourceType.ANY, None


def _bindings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[AclBinding]:
    rtype, name = _resource(args)
    if name is None:
        parser.error("add needs a resource: --topic, --group, --cluster or --transactional-id")
    if not args.operation:
        parser.error("add needs at least one --operation")
    pattern = parse_code(PatternType, args.resource_pattern_type or "literal")
    entries = [(p, Permission.ALLOW) for p in args.allow_principal] + [
        (p, Permission.DENY) for p in args.deny_principal
    ]
    if not entries:
        parser.error("add needs --allow-principal or --deny-principal")
    ops = [parse_code(Operation, op) for op in args.operation]
    return [
        AclBinding(int(rtype), name, pattern, principal, args.host, op, int(permission))
        for principal, permission in entries
        for op in ops
    ]


def _filter(args: argparse.Namespace) -> AclFilter:
    rtype, name = _resource(args)
    pattern = parse_code(PatternType, args.resource_pattern_type or "any")
    operation = (
        parse_code(Operation, args.operation[0]) if getattr(args, "operation", None) else Operation.ANY
    )
    permission = Permission.ANY
    if getattr(args, "deny", False):
        permission = Permission.DENY
    elif getattr(args, "allow", False):
        permission = Permission.ALLOW
    return AclFilter(int(rtype), name, pattern, args.principal, None, operation, permission)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    add_connection_args(parser)
    sub = parser.add_subparsers(dest="action", required=True)
    ls = sub.add_parser("list")
    _resource_args(ls)
    ls.add_argument("--principal")
    add = sub.add_parser("add")
    _resource_args(add)
    add.add_argument("--allow-principal", action="append", default=[])
    add.add_argument("--deny-principal", action="append", default=[])
    add.add_argument("--operation", action="append", default=[])
    add.add_argument("--host", default="*")
    rm = sub.add_parser("remove")
    _resource_args(rm)
    rm.add_argument("--principal")
    rm.add_argument("--operation", action="append", default=[])
    which = rm.add_mutually_exclusive_group()
    which.add_argument("--allow", action="store_true")
    which.add_argument("--deny", action="store_true")
    args = parser.parse_args(argv)
    bootstrap = bootstrap_of(args, parser).split(",")[0]
    try:
        security = security_from_args(args)
        bindings = _bindings(args, parser) if args.action == "add" else []
        flt = _filter(args) if args.action != "add" else AclFilter()
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if not 0 < args.timeout <= 3600:
        parser.error("--timeout is seconds, more than 0 and at most 3600")
    try:
        wire = WireClient(bootstrap, security=security, timeout_s=args.timeout)
    except OSError as exc:
        print(f"{PROG}: cannot reach {bootstrap}: {exc}", file=sys.stderr)
        return 1
    try:
        if args.action == "list":
            outcome = describe_acls(wire, flt)
            if outcome.error:
                print(f"{PROG}: {outcome.error.name.upper()}: {outcome.message}", file=sys.stderr)
                return 1
            rows = [b.row() for b in outcome.acls]
            if args.json:
                print(json.dumps(rows, indent=2))
            else:
                print_table(rows, COLUMNS)
            return 0
        if args.action == "add":
            failed = 0
            for binding, result in zip(bindings, create_acls(wire, bindings), strict=False):
                row = binding.row()
                text = " ".join(row[c] for c in COLUMNS)
                if result.error:
                    failed += 1
                    print(f"{PROG}: {text}: {result.error.name.upper()}: {result.message}", file=sys.stderr)
                else:
                    print(f"added {text}")
            return 1 if failed else 0
        (result,) = delete_acls(wire, [flt])
        if result.error:
            print(f"{PROG}: {result.error.name.upper()}: {result.message}", file=sys.stderr)
            return 1
        for binding in result.acls:
            row = binding.row()
            print("removed " + " ".join(row[c] for c in COLUMNS))
        print(f"{len(result.acls)} ACL(s) removed")
        return 0
    except (WireError, LookupError) as exc:
        print(f"{PROG}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        wire.close()
