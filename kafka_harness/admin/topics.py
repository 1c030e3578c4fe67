"""``kafka-harness topics``: list, describe, create, delete and alter topics on any cluster.

kafka-harness topics -b HOST:PORT list
kafka-harness topics -b HOST:PORT describe [TOPIC ...]     (partitions, leaders, replicas, ISR, configs)
kafka-harness topics -b HOST:PORT create TOPIC --partitions 3 --replication-factor 1 [--config k=v ...]
kafka-harness topics -b HOST:PORT delete TOPIC ...
kafka-harness topics -b HOST:PORT alter TOPIC [--partitions N] [--config k=v ...] [--delete-config k ...]
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import AdminError, add_connection_args, admin_client, emit, run, timeout_s, wait


def _configs(pairs: list[str], parser: argparse.ArgumentParser) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            parser.error(f"--config {pair!r} is not key=value")
        out[key] = value
    return out


def describe(admin: Any, names: list[str] | None) -> list[dict[str, Any]]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    metadata = admin.list_topics(timeout=timeout_s())
    wanted = names or sorted(t for t in metadata.topics if not t.startswith("__"))
    rows = []
    for name in wanted:
        topic = metadata.topics.get(name)
        if topic is None or topic.error is not None:
            raise AdminError(
                f"{name}: {topic.error.name() if topic is not None else 'UNKNOWN_TOPIC_OR_PARTITION'}"
            )
        configs = {}
        try:
            resource = ConfigResource(ResourceType.TOPIC, name)
            entries = wait(admin.describe_configs([resource])[resource])
            configs = {k: e.value for k, e in entries.items() if not e.is_default}
        except AdminError as exc:
            configs = {"error": str(exc)}
        for p in sorted(topic.partitions.values(), key=lambda p: p.id):
            rows.append(
                {
                    "topic": name,
                    "partition": p.id,
                    "leader": p.leader,
                    "replicas": list(p.replicas),
                    "isr": list(p.isrs),
                    "configs": configs if p.id == 0 else None,
                }
            )
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness topics", description=__doc__.split("\n\n")[0])
    add_connection_args(parser)
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list")
    d = sub.add_parser("describe")
    d.add_argument("topics", nargs="*")
    c = sub.add_parser("create")
    c.add_argument("topic")
    c.add_argument("--partitions", type=int, default=-1)
    c.add_argument("--replication-factor", type=int, default=-1)
    c.add_argument("--config", action="append", default=[])
    x = sub.add_parser("delete")
    x.add_argument("topics", nargs="+")
    a = sub.add_parser("alter")
    a.add_argument("topic")
    a.add_argument("--partitions", type=int)
    a.add_argument("--config", action="append", default=[])
    a.add_argument("--delete-config", action="append", default=[])
    args = parser.parse_args(argv)
    admin = admin_client(args, parser, "kafka-harness topics")

    def act() -> int:
        from confluent_kafka import admin as ck

        if args.action == "list":
            metadata = admin.list_topics(timeout=timeout_s())
            emit(
                args,
                [{"topic": n, "partitions": len(t.partitions)} for n, t in sorted(metadata.topics.items())],
                ["topic", "partitions"],
            )
        elif args.action == "describe":
            emit(
                args,
                describe(admin, args.topics or None),
                ["topic", "partition", "leader", "replicas", "isr", "configs"],
            )
        elif args.action == "create":
            new = ck.NewTopic(
                args.topic, args.partitions, args.replication_factor, config=_configs(args.config, parser)
            )
            wait(admin.create_topics([new])[args.topic])
            print(f"created {args.topic}")
        elif args.action == "delete":
            for name, future in admin.delete_topics(args.topics).items():
                wait(future)
                print(f"deleted {name}")
        elif args.action == "alter":
            if args.partitions is not None:
                wait(admin.create_partitions([ck.NewPartitions(args.topic, args.partitions)])[args.topic])
                print(f"{args.topic} now has {args.partitions} partitions")
            changes = [
                ck.ConfigEntry(k, v, incremental_operation=ck.AlterConfigOpType.SET)
                for k, v in _configs(args.config, parser).items()
            ]
            changes += [
                ck.ConfigEntry(k, None, incremental_operation=ck.AlterConfigOpType.DELETE)
                for k in args.delete_config
            ]
            if changes:
                resource = ck.ConfigResource(ck.ResourceType.TOPIC, args.topic, incremental_configs=changes)
                wait(admin.incremental_alter_configs([resource])[resource])
                print(f"altered {len(changes)} config(s) of {args.topic}")
        return 0

    return run(act, "kafka-harness topics")
