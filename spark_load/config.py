"""What one load run is: the dataset, the producer settings, the reader settings.

These values travel from the driver to every executor task (pickled with the
task's closure), so they are plain frozen dataclasses with no live resources in
them. Validation happens here, once, so bad input becomes a clear message on
the command line instead of a failure inside a Spark task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CLIENTS = ("confluent-kafka", "kafka-python")
IO_MODES = ("executor", "spark-kafka")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
VALUE_SIZE_DISTRIBUTIONS = ("fixed", "uniform", "exponential")
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")
GENERATOR_ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,32}$")
MAX_KEY_SPACE = 10_000_000


class LoadConfigError(ValueError):
    """A setting is out of range or inconsistent; the message says which and why."""


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    """The deterministic dataset: record ``seq`` is a pure function of (seed, seq).

    ``key_skew`` is the exponent of a bounded Zipf law over ``key_space`` keys
    (0 is uniform, 1 is the classic "a few keys are hot"). Value sizes follow
    ``value_size_distribution`` around ``value_size`` bytes: ``fixed``,
    ``uniform`` on [size/2, 3*size/2], or ``exponential`` with that mean
    (capped at 10x). Each value is at least its header long (generator id,
    sequence number and checksum; see :mod:`spark_load.payloads`).
    """

    records: int
    seed: int = 0
    generator_id: str = "g0"
    key_space: int = 10_000
    key_skew: float = 0.0
    value_size: int = 100
    value_size_distribution: str = "fixed"

    def validate(self) -> None:
        if self.records < 0:
            raise LoadConfigError(f"--records must be >= 0, got {self.records}")
        if not GENERATOR_ID_PATTERN.match(self.generator_id):
            raise LoadConfigError(
                f"--generator-id {self.generator_id!r}: use 1-32 characters from A-Z a-z 0-9 . _ -"
            )
        if not 1 <= self.key_space <= MAX_KEY_SPACE:
            raise LoadConfigError(f"--key-space must be in 1..{MAX_KEY_SPACE}, got {self.key_space}")
        if not 0.0 <= self.key_skew <= 5.0:
            raise LoadConfigError(f"--key-skew must be in 0..5 (Zipf exponent), got {self.key_skew}")
        if not 1 <= self.value_size <= 1_000_000:
            raise LoadConfigError(f"--value-size must be in 1..1000000 bytes, got {self.value_size}")
        if self.value_size_distribution not in VALUE_SIZE_DISTRIBUTIONS:
            raise LoadConfigError(
                f"--value-size-distribution must be one of {', '.join(VALUE_SIZE_DISTRIBUTIONS)}"
            )


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    """Producer settings, passed through to the client in its own vocabulary."""

    client: str = "confluent-kafka"
    acks: str = "all"
    idempotence: bool = True
    compression: str = "none"
    batch_size: int = 65_536
    linger_ms: int = 5
    rate_per_task: float | None = None
    """Records per second per task; None for as fast as the broker takes them."""
    time_bound_s: float | None = None
    """Stop sending after this long (per task); what was not sent is reported as unsent."""
    delivery_timeout_ms: int = 60_000
    extra: tuple[tuple[str, str], ...] = ()
    """Further client settings (``--producer-config key=value``), in the client's own names."""

    def validate(self) -> None:
        if self.client not in CLIENTS:
            raise LoadConfigError(f"--client must be one of {', '.join(CLIENTS)}, got {self.client!r}")
        if self.acks not in ("all", "-1", "0", "1"):
            raise LoadConfigError(f"--acks must be all, -1, 0 or 1, got {self.acks!r}")
        if self.idempotence and self.acks not in ("all", "-1"):
            raise LoadConfigError("idempotence needs --acks all (or pass --no-idempotence)")
        if self.compression not in COMPRESSION_TYPES:
            raise LoadConfigError(f"--compression must be one of {', '.join(COMPRESSION_TYPES)}")
        if self.batch_size < 1 or self.linger_ms < 0:
            raise LoadConfigError("--batch-size must be >= 1 and --linger-ms >= 0")
        if self.rate_per_task is not None and self.rate_per_task <= 0:
            raise LoadConfigError(f"--rate must be > 0 records/s, got {self.rate_per_task}")
        if self.time_bound_s is not None and self.time_bound_s <= 0:
            raise LoadConfigError(f"--time-bound must be > 0 seconds, got {self.time_bound_s}")
        if self.delivery_timeout_ms < 1000:
            raise LoadConfigError("--delivery-timeout-ms must be >= 1000")


@dataclass(frozen=True, slots=True)
class ReaderSpec:
    client: str = "confluent-kafka"
    isolation_level: str = "read_uncommitted"
    idle_timeout_s: float = 10.0
    """A split that receives nothing for this long stops and is reported incomplete."""
    time_bound_s: float = 600.0

    def validate(self) -> None:
        if self.client not in CLIENTS:
            raise LoadConfigError(f"--client must be one of {', '.join(CLIENTS)}")
        if self.isolation_level not in ISOLATION_LEVELS:
            raise LoadConfigError(f"--isolation must be one of {', '.join(ISOLATION_LEVELS)}")
        if self.idle_timeout_s <= 0 or self.time_bound_s <= 0:
            raise LoadConfigError("reader timeouts must be > 0")


@dataclass(frozen=True, slots=True)
class LoadConfig:
    """One run: where, what, how. ``tasks`` is the number of producing tasks."""

    bootstrap_servers: str
    topic: str
    dataset: DatasetSpec
    producer: ProducerSpec = field(default_factory=ProducerSpec)
    reader: ReaderSpec = field(default_factory=ReaderSpec)
    partitions: int = 12
    replication_factor: int = 1
    tasks: int = 4
    read_tasks: int = 4

    def validate(self) -> None:
        self.dataset.validate()
        self.producer.validate()
        self.reader.validate()
        if not 1 <= self.partitions <= 10_000:
            raise LoadConfigError(f"--partitions must be in 1..10000, got {self.partitions}")
        if self.replication_factor < 1:
            raise LoadConfigError("--replication-factor must be >= 1")
        if not 1 <= self.tasks <= 10_000 or not 1 <= self.read_tasks <= 10_000:
            raise LoadConfigError("--tasks and --read-tasks must be in 1..10000")
        if not self.topic or len(self.topic) > 249 or not re.match(r"^[A-Za-z0-9._-]+$", self.topic):
            raise LoadConfigError(f"--topic {self.topic!r} is not a legal Kafka topic name")


def task_ranges(records: int, tasks: int) -> list[tuple[int, int]]:
    """Contiguous [start, end) sequence ranges, one per task, sizes differing by at most one.

    Each task's producer sends its range in increasing order, which is what the
    verifier's per-key order check relies on.
    """
    tasks = max(1, min(tasks, records)) if records else 1
    base, extra = divmod(records, tasks)
    ranges: list[tuple[int, int]] = []
    start = 0
    for index in range(tasks):
        end = start + base + (1 if index < extra else 0)
        ranges.append((start, end))
        start = end
    return ranges
