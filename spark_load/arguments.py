"""What the load command's parsed arguments mean: the run's configuration, the read splits and the
anomalies it allows. Shared by the command (:mod:`spark_load.cli`, which checks them before starting
anything) and the driver (:mod:`spark_load.jobs.driver`, which runs them)."""

from __future__ import annotations

import argparse
import math
import time

from .config import DatasetSpec, LoadConfig, ProducerSpec, ReaderSpec


def split_records_for(total: int, read_tasks: int) -> int:
    """Offsets per read split, so that about ``read_tasks`` splits cover ``total`` offsets."""
    return max(1, math.ceil(total / max(1, read_tasks)))


def config_from(args: argparse.Namespace, bootstrap: str, tasks: int, read_tasks: int) -> LoadConfig:
    generator_id = args.generator_id or f"g{args.seed}"
    topic = args.topic or f"kh-load-{generator_id}-{int(time.time())}"
    config = LoadConfig(
        bootstrap_servers=bootstrap,
        topic=topic,
        dataset=DatasetSpec(
            records=args.records,
            seed=args.seed,
            generator_id=generator_id,
            key_space=args.key_space,
            key_skew=args.key_skew,
            value_size=args.value_size,
            value_size_distribution=args.value_size_distribution,
        ),
        producer=ProducerSpec(
            client=args.client,
            acks=args.acks,
            idempotence=args.idempotence,
            compression=args.compression,
            batch_size=args.batch_size,
            linger_ms=args.linger_ms,
            rate_per_task=args.rate,
            time_bound_s=args.time_bound,
            delivery_timeout_ms=args.delivery_timeout_ms,
            extra=tuple(args.producer_config),
        ),
        reader=ReaderSpec(
            client=args.client, isolation_level=args.isolation, idle_timeout_s=args.read_idle_timeout
        ),
        partitions=args.partitions,
        replication_factor=args.replication_factor,
        tasks=tasks,
        read_tasks=read_tasks,
    )
    config.validate()
    return config


def allowed_anomalies(args: argparse.Namespace) -> set[str]:
    if args.allow:
        return set(args.allow)
    return set() if args.idempotence else {"duplicate", "reordered"}
