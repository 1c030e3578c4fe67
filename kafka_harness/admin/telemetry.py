"""``kafka-harness telemetry``: what clients pushed (KIP-714), and the subscriptions that ask them to.

kafka-harness telemetry -b HOST:PORT [show]            the client instances and their last pushes
kafka-harness telemetry -b HOST:PORT subscribe NAME [--metrics PREFIX,..] [--interval-ms N] [--match K=RE,..]
kafka-harness telemetry -b HOST:PORT unsubscribe NAME
kafka-harness telemetry -b HOST:PORT subscriptions     the client-metrics resources (ListConfigResources)

Subscriptions are Kafka's ``client-metrics`` config resources (type 16, as ``kafka-client-metrics.sh``),
set with IncrementalAlterConfigs on any Kafka 3.7+ broker. ``show`` reads the reference broker's
bounded store of pushed metrics: DescribeConfigs of the reserved client-metrics resource
``kafka-harness.pushed-telemetry`` (reference_impl/core/telemetry.py), one entry per client
instance with its client id, address, subscription, push counts and the metric names of its last
pushes. A Kafka broker hands pushed metrics to its receiver plugin instead and answers that resource
with no configs, so ``show`` prints nothing there. Exit 0, 1 when the broker refused (its error
printed), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fixtures.wire import Capabilities, WireClient, ops

from .common import add_connection_args, emit, run_wire

PROG = "kafka-harness telemetry"
CLIENT_METRICS = ops.CLIENT_METRICS
MAX_ROWS = 10_000


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    add_connection_args(parser)
    sub = parser.add_subparsers(dest="action")
    sub.add_parser("show")
    sub.add_parser("subscriptions")
    subscribe = sub.add_parser("subscribe")
    subscribe.add_argument("name")
    subscribe.add_argument("--metrics", default="*", help="metric name prefixes, comma-separated (* for all)")
    subscribe.add_argument("--interval-ms", type=int, default=None, help="push interval (100..3600000)")
    subscribe.add_argument("--match", default=None, help="KEY=REGEX,... (client_id, client_instance_id, ...)")
    unsubscribe = sub.add_parser("unsubscribe")
    unsubscribe.add_argument("name")
    args = parser.parse_args(argv)
    return run_wire(args, parser, PROG, _act)


def _error(code: Any, message: Any, what: str) -> int:
    name = str(getattr(code, "name", code)).upper()
    print(f"{PROG}: {what}: {name}: {message or ''}".rstrip(": "), file=sys.stderr)
    return 1


def wire_best(wire: WireClient, api: str) -> int:
    """The newest version of ``api`` both sides know (NotAdvertisedError names it when none)."""
    return Capabilities(wire.api_versions()).best(api)


def _act(args: argparse.Namespace, wire: WireClient) -> int:
    if args.action in ("subscribe", "unsubscribe"):
        if args.action == "subscribe":
            configs: dict[str, str | None] = {"metrics": args.metrics}
            if args.interval_ms is not None:
                configs["interval.ms"] = str(args.interval_ms)
            if args.match is not None:
                configs["match"] = args.match
        else:
            configs = dict.fromkeys(("metrics", "interval.ms", "match"))
        result = ops.alter_client_metrics(wire, Capabilities(wire.api_versions()), args.name, configs)
        if result.error_code.value != 0:
            return _error(result.error_code, result.error_message, args.name)
        print(f"{args.action}d {args.name}")
        return 0
    if args.action == "subscriptions":
        version = wire_best(wire, "list_config_resources")
        types: dict[str, Any] = {"resource_types": [CLIENT_METRICS]} if version >= 1 else {}
        answer = wire.request("list_config_resources", version, **types)
        if answer.error_code.value != 0:
            return _error(answer.error_code, "", "ListConfigResources")
        emit(
            args,
            [{"subscription": r.resource_name} for r in answer.config_resources[:MAX_ROWS]],
            ["subscription"],
        )
        return 0
    result = ops.describe_client_metrics(
        wire, Capabilities(wire.api_versions()), ops.TELEMETRY_INSPECT_RESOURCE
    )
    if result.error_code.value != 0:
        return _error(result.error_code, result.error_message, "DescribeConfigs")
    rows = []
    for entry in result.configs[:MAX_ROWS]:
        try:
            summary = json.loads(entry.value or "{}")
        except ValueError:
            continue
        last = summary.get("last_pushes") or [{}]
        rows.append(
            {
                "client_instance_id": entry.name,
                "client_id": summary.get("client_id"),
                "address": summary.get("address"),
                "pushes": summary.get("pushes"),
                "bytes": summary.get("bytes"),
                "interval_ms": summary.get("push_interval_ms"),
                "terminating": summary.get("terminating"),
                "last_metrics": last[-1].get("metrics", []),
                **({"detail": summary} if args.json else {}),
            }
        )
    emit(
        args,
        rows,
        [
            "client_instance_id",
            "client_id",
            "address",
            "pushes",
            "bytes",
            "interval_ms",
            "terminating",
            "last_metrics",
        ],
    )
    return 0
