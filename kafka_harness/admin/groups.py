"""``kafka-harness groups``: list, describe, reset the offsets of, and delete consumer groups.

kafka-harness groups -b HOST:PORT list
kafka-harness groups -b HOST:PORT describe GROUP ...   (state, members, assignments, offsets and lag)
kafka-harness groups -b HOST:PORT reset-offsets GROUP --topic T[:P,P...] (--to-earliest | --to-latest |
    --to-offset N | --to-datetime MS | --shift-by N) [--execute]
kafka-harness groups -b HOST:PORT delete GROUP ...

As Kafka's ``kafka-consumer-groups``: ``describe`` prints a row per partition
with a committed offset or an assigned member (current offset, log end
offset, lag, member, host, client), and a row per member with no partitions;
``reset-offsets`` prints the plan and changes nothing without ``--execute``,
and only for a group with no active members.
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import AdminError, add_connection_args, admin_client, emit, run, timeout_s, wait

DESCRIBE_COLUMNS = ["group", "state", "topic", "partition", "current_offset", "log_end_offset", "lag",
                    "member_id", "host", "client_id"]
INACTIVE_STATES = ("EMPTY", "DEAD")


def _state(description: Any) -> str:
    state = description.state
    return str(getattr(state, "name", state))


def _committed(admin: Any, group: str) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = [ConsumerGroupTopicPartitions(group)]
    result = wait(admin.list_consumer_group_offsets(request)[group])
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def _end_offsets(
    admin: Any, partitions: set[tuple[str, int]], spec: Any = None
) -> dict[tuple[str, int], int]:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    if not partitions:
        return {}
    request = {TopicPartition(t, p): spec or OffsetSpec.latest() for t, p in sorted(partitions)}
    out = {}
    for tp, future in admin.list_offsets(request).items():
        out[(tp.topic, tp.partition)] = wait(future).offset
    return out


def describe(admin: Any, groups: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for group, future in admin.describe_consumer_groups(groups).items():
        description = wait(future)
        state = _state(description)
        committed = _committed(admin, group)
        owners: dict[tuple[str, int], Any] = {}
        idle = []
        for member in description.members:
            assigned = member.assignment.topic_partitions if member.assignment else []
            for tp in assigned:
                owners[(tp.topic, tp.partition)] = member
            if not assigned:
                idle.append(member)
        partitions = set(committed) | set(owners)
        ends = _end_offsets(admin, partitions)
        for topic, partition in sorted(partitions):
            member = owners.get((topic, partition))
            current = committed.get((topic, partition))
            end = ends.get((topic, partition))
            rows.append({
                "group": group, "state": state, "topic": topic, "partition": partition,
                "current_offset": current, "log_end_offset": end,
                "lag": end - current if end is not None and current is not None else None,
                "member_id": member.member_id if member else None,
                "host": member.host if member else None,
                "client_id": member.client_id if member else None,
            })
        for member in idle:
            rows.append({"group": group, "state": state, "member_id": member.member_id, "host": member.host,
                         "client_id": member.client_id})
        if not partitions and not idle:
            rows.append({"group": group, "state": state})
    return rows


def _targets(spec: str, admin: Any) -> set[tuple[str, int]]:
    """``topic`` (every partition) or ``topic:0,2``."""
    topic, _, numbers = spec.partition(":")
    if numbers:
        return {(topic, int(p)) for p in numbers.split(",")}
    metadata = admin.list_topics(topic, timeout=timeout_s()).topics.get(topic)
    if metadata is None or metadata.error is not None:
        raise AdminError(f"{topic}: {metadata.error.name() if metadata else 'UNKNOWN_TOPIC_OR_PARTITION'}")
    return {(topic, p) for p in metadata.partitions}


def reset_offsets(admin: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    description = wait(admin.describe_consumer_groups([args.group])[args.group])
    state = _state(description)
    if args.execute and state not in INACTIVE_STATES:
        raise AdminError(f"Assignments can only be reset if the group '{args.group}' is inactive, "
                         f"but the current state is {state}.")
    partitions: set[tuple[str, int]] = set()
    for spec in args.topic:
        partitions |= _targets(spec, admin)
    earliest = _end_offsets(admin, partitions, OffsetSpec.earliest())
    latest = _end_offsets(admin, partitions)
    committed = _committed(admin, args.group)
    by_time = _end_offsets(admin, partitions, OffsetSpec.for_timestamp(args.to_datetime)) \
        if args.to_datetime is not None else {}
    rows = []
    for key in sorted(partitions):
        if args.to_earliest:
            wanted = earliest[key]
        elif args.to_latest:
            wanted = latest[key]
        elif args.to_offset is not None:
            wanted = args.to_offset
        elif args.to_datetime is not None:
            wanted = by_time[key] if by_time[key] >= 0 else latest[key]
        else:
            wanted = committed.get(key, latest[key]) + args.shift_by
        wanted = max(earliest[key], min(latest[key], wanted))  # Kafka's tool clamps to the log
        rows.append({"group": args.group, "topic": key[0], "partition": key[1], "new_offset": wanted})
    if args.execute:
        offsets = [TopicPartition(r["topic"], r["partition"], r["new_offset"]) for r in rows]
        request = [ConsumerGroupTopicPartitions(args.group, offsets)]
        wait(admin.alter_consumer_group_offsets(request)[args.group])
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness groups", description=__doc__.split("\n\n")[0])
    add_connection_args(parser)
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list")
    d = sub.add_parser("describe")
    d.add_argument("groups", nargs="+")
    r = sub.add_parser("reset-offsets")
    r.add_argument("group")
    r.add_argument("--topic", action="append", required=True, help="TOPIC or TOPIC:P,P (repeatable)")
    how = r.add_mutually_exclusive_group(required=True)
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-offset", type=int)
    how.add_argument("--to-datetime", type=int, metavar="MS", help="first offset at or after this time")
    how.add_argument("--shift-by", type=int)
    r.add_argument("--execute", action="store_true", help="apply (default: print the plan only)")
    x = sub.add_parser("delete")
    x.add_argument("groups", nargs="+")
    args = parser.parse_args(argv)
    admin = admin_client(args, parser, "kafka-harness groups")

    def act() -> int:
        if args.action == "list":
            result = wait(admin.list_consumer_groups())
            for error in getattr(result, "errors", []) or []:
                raise AdminError(str(error))
            rows = [{"group": g.group_id, "state": str(getattr(g.state, "name", g.state)),
                     "simple": g.is_simple_consumer_group} for g in result.valid]
            emit(args, sorted(rows, key=lambda row: row["group"]), ["group", "state", "simple"])
        elif args.action == "describe":
            emit(args, describe(admin, args.groups), DESCRIBE_COLUMNS)
        elif args.action == "reset-offsets":
            rows = reset_offsets(admin, args)
            emit(args, rows, ["group", "topic", "partition", "new_offset"])
            if not args.execute and not args.json:
                print("(dry run: add --execute to apply)")
        elif args.action == "delete":
            for group, future in admin.delete_consumer_groups(args.groups).items():
                wait(future)
                print(f"deleted {group}")
        return 0

    return run(act, "kafka-harness groups")
