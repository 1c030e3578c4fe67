"""Client telemetry (KIP-714): subscriptions from ``client-metrics`` configs, and what clients push.

Kafka's behaviour (``server/src/main/java/org/apache/kafka/server/ClientMetricsManager.java``,
``.../server/metrics/ClientMetricsInstance.java``, ``.../server/metrics/ClientMetricsConfigs.java``),
and so this module's, sans-IO (time comes in as ``now_ms``):

* A subscription is a client-metrics config resource (type 16): ``metrics`` (name prefixes, ``*``
  for all), ``interval.ms`` (100 ms to 1 h, default 5 min) and ``match`` (``key=regex`` selectors on
  client_instance_id, client_id, client_software_name, client_software_version,
  client_source_address, client_source_port; every selector must match whole; the software name and
  version are what the connection's ApiVersions v3+ said, the port is not known here and matches "").
  Unknown names and an interval out of range are INVALID_REQUEST, a bad selector INVALID_CONFIG.
* GetTelemetrySubscriptions: a zero client instance id gets a new one. The instance's metrics are
  the union over the subscriptions it matches (``*`` alone if one asks for all), its push interval
  their smallest (5 min when none), its subscription id a CRC-32C of both XOR the id's hash. A second
  request within the push interval is THROTTLING_QUOTA_EXCEEDED. When the subscriptions change,
  each instance is evaluated again at its next request (with fresh timestamps).
* PushTelemetry, checked in Kafka's order: a zero id is INVALID_REQUEST; after a terminating push
  every push is INVALID_REQUEST; a push sooner than the interval after the last (the first after a
  GetTelemetrySubscriptions is always on time) and not terminating is THROTTLING_QUOTA_EXCEEDED; a
  subscription id that is not the instance's is UNKNOWN_SUBSCRIPTION_ID; a compression type other
  than none, gzip, snappy, lz4, zstd is UNSUPPORTED_COMPRESSION_TYPE; metrics longer than
  ``telemetry.max.bytes`` are TELEMETRY_TOO_LARGE. The ``terminating`` flag is recorded whatever
  the outcome. Kafka hands accepted metrics to its receiver plugin (INVALID_RECORD when it fails);
  here the receiver is the bounded store below, and metrics it cannot decompress or decode as
  OpenTelemetry ``MetricsData`` are INVALID_RECORD.

The store (the reference's own receiver): per client instance, its client id and address, the
subscription it was given, counts, the last :data:`KEPT_PUSHES` pushes and the newest push's metric
names (at most :data:`MAX_NAMES`, each cut at :data:`MAX_NAME_CHARS`); an inspection lists the
:data:`MAX_INSPECTED` instances seen last. Bounded whatever clients send:
at most :data:`MAX_INSTANCES` instances (least recently seen evicted; Kafka's cache holds 16,384),
instances idle longer than ``max(60 s, 3 x interval)`` dropped (Kafka's expiry), payloads
inflated to at most :data:`MAX_INFLATED` bytes (``inflate``'s bounded streams), and the protobuf
walk bounded in fields and depth. The harness reads it through DescribeConfigs of the reserved
client-metrics resource :data:`INSPECT_RESOURCE` (one config per instance, its value a JSON summary;
``kafka-harness telemetry``): an ordinary admin read any client can make, behind the same
DESCRIBE_CONFIGS-on-the-cluster ACL as Kafka's client-metrics configs, and nothing a Kafka broker
would answer differently for any other name.
"""

from __future__ import annotations

import json
import uuid
from collections import OrderedDict, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from crc32c import crc32c

from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.inflate import inflate
from reference_impl.protocol.records import InvalidBatchError

from .client_patterns import InvalidPattern, compile_client_pattern
from .configs.client_metrics import CLIENT_METRICS_CONFIGS, TELEMETRY_MATCH_KEYS
from .configs.model import ConfigError
from .metadata.image import MetadataImage

CLIENT_METRICS_SOURCE = 7
"""DescribeConfigs' ConfigSource.CLIENT_METRICS_CONFIG."""
INSPECT_RESOURCE = "kafka-harness.pushed-telemetry"
DEFAULT_INTERVAL_MS = 300_000
ALL_METRICS = "*"
SUPPORTED_COMPRESSION = (4, 3, 1, 2)
"""What GetTelemetrySubscriptions offers, Kafka's order: zstd, lz4, gzip, snappy."""
MAX_INSTANCES = 1024
KEPT_PUSHES = 4
MAX_NAMES = 128
MAX_NAME_CHARS = 120
MAX_INSPECTED = 256
"""Instances an inspection lists (the most recently seen): its answer stays a few MiB at most."""
MAX_INFLATED = 8 * 1024 * 1024
MAX_PROTO_FIELDS = 200_000
EXPIRY_MIN_MS = 60_000
ZERO = uuid.UUID(int=0)
Client = tuple[str, str, tuple[str, str]]
"""(client id, source address, (software name, software version)): what selectors match on."""
NEVER = -(2**62)
"""The timestamp of a request never made (Kafka starts at 0 on a wall clock; the core's clock may not)."""


def check_subscription(changes: Mapping[str, str | None]) -> None:
    """Kafka's ``ClientMetricsConfigs.validate`` on the configs a request sets."""
    for name, value in changes.items():
        definition = CLIENT_METRICS_CONFIGS.get(name)
        if definition is None:
            raise KafkaError(ErrorCode.invalid_request, f"Unknown client metric configuration: {name}")
        if value is None:
            continue
        if name == "interval.ms":
            try:
                definition.validate(value)
            except ConfigError:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"Invalid value {value} for interval.ms, it must be between 100 and 3600000 (1 hour)",
                ) from None
        if name == "match":
            parse_match(value)


def parse_match(value: str) -> dict[str, Any]:
    """``key=regex,...`` → compiled selectors; INVALID_CONFIG for a bad entry (Kafka's message)."""
    selectors: dict[str, Any] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        key, sep, pattern = entry.partition("=")
        if not sep or key.strip() not in TELEMETRY_MATCH_KEYS or not pattern.strip():
            raise KafkaError(ErrorCode.invalid_config, f"Illegal client matching pattern: {entry}")
        try:
            selectors[key.strip()] = compile_client_pattern(pattern.strip())
        except InvalidPattern:
            raise KafkaError(ErrorCode.invalid_config, f"Illegal client matching pattern: {entry}") from None
    return selectors


@dataclass
class Push:
    at_ms: int
    compression: int
    size: int
    terminating: bool
    metrics: list[str]


@dataclass
class Instance:
    instance_id: uuid.UUID
    client_id: str
    address: str
    version: object
    subscription_id: int
    metrics: tuple[str, ...]
    interval_ms: int
    last_get_ms: int = NEVER
    last_push_ms: int = NEVER
    last_seen_ms: int = 0
    terminating: bool = False
    pushes: int = 0
    bytes: int = 0
    kept: deque[Push] = field(default_factory=lambda: deque(maxlen=KEPT_PUSHES))

    def may_get(self, now_ms: int) -> bool:
        if now_ms - max(self.last_get_ms, self.last_push_ms) >= self.interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def may_push(self, now_ms: int) -> bool:
        accept = self.last_get_ms > self.last_push_ms or now_ms - self.last_push_ms >= self.interval_ms
        if accept:
            self.last_push_ms = now_ms
        return accept


def _version(image: MetadataImage) -> object:
    return tuple(sorted((n, tuple(sorted(c.items()))) for n, c in image.client_metrics.items()))


def _uuid_hash(value: uuid.UUID) -> int:
    """Java's ``Uuid.hashCode``: the 64-bit halves XORed, folded to 32 bits."""
    h = (value.int >> 64) ^ (value.int & (2**64 - 1))
    return (h ^ (h >> 32)) & 0xFFFFFFFF


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


class ClientTelemetry:
    """The client instances this broker knows and what they pushed (bounded)."""

    def __init__(self) -> None:
        self._instances: OrderedDict[uuid.UUID, Instance] = OrderedDict()
        self._software: OrderedDict[int, tuple[str, str]] = OrderedDict()

    def note_software(self, connection_id: int, name: str, version: str) -> None:
        """What a connection's ApiVersions v3+ said (KIP-511), for the software selectors; the
        :data:`MAX_INSTANCES` connections heard last are kept."""
        self._software[connection_id] = (name[:MAX_NAME_CHARS], version[:MAX_NAME_CHARS])
        self._software.move_to_end(connection_id)
        while len(self._software) > MAX_INSTANCES:
            self._software.popitem(last=False)

    def software(self, connection_id: int) -> tuple[str, str]:
        return self._software.get(connection_id, ("", ""))

    def _subscription(
        self, image: MetadataImage, instance_id: uuid.UUID, client: Client
    ) -> tuple[tuple[str, ...], int]:
        client_id, address, (software, software_version) = client
        attributes = {
            "client_instance_id": str(instance_id),
            "client_id": client_id,
            "client_software_name": software,
            "client_software_version": software_version,
            "client_source_address": address,
            "client_source_port": "",
        }
        metrics: set[str] = set()
        interval = DEFAULT_INTERVAL_MS
        everything = False
        for configs in image.client_metrics.values():
            try:
                selectors = parse_match(configs.get("match", ""))
            except KafkaError:
                continue
            if not all(p.fullmatch(attributes[k]) is not None for k, p in selectors.items()):
                continue
            wanted = [m.strip() for m in configs.get("metrics", "").split(",") if m.strip()]
            everything = everything or ALL_METRICS in wanted
            metrics.update(wanted)
            interval = min(interval, int(configs.get("interval.ms", DEFAULT_INTERVAL_MS)))
        chosen = (ALL_METRICS,) if everything else tuple(sorted(metrics))
        return chosen, interval

    def _instance(
        self, image: MetadataImage, instance_id: uuid.UUID, client: Client, now_ms: int
    ) -> Instance:
        self._expire(now_ms)
        version = _version(image)
        known = self._instances.get(instance_id)
        if known is None or known.version != version:
            metrics, interval = self._subscription(image, instance_id, client)
            digest = crc32c((repr(list(metrics)) + str(interval)).encode())
            fresh = Instance(
                instance_id,
                client[0],
                client[1],
                version,
                _int32(digest ^ _uuid_hash(instance_id)),
                metrics,
                interval,
            )
            if known is not None:
                fresh.pushes, fresh.bytes, fresh.kept = known.pushes, known.bytes, known.kept
            self._instances[instance_id] = fresh
            known = fresh
        self._instances.move_to_end(instance_id)
        while len(self._instances) > MAX_INSTANCES:
            self._instances.popitem(last=False)
        known.last_seen_ms = now_ms
        return known

    def _expire(self, now_ms: int) -> None:
        while self._instances:
            oldest = next(iter(self._instances.values()))
            if now_ms - oldest.last_seen_ms <= max(EXPIRY_MIN_MS, 3 * oldest.interval_ms):
                return
            self._instances.popitem(last=False)

    def get_subscriptions(
        self, image: MetadataImage, requested: uuid.UUID | None, new_id: uuid.UUID, client_id: str,
        address: str, max_bytes: int, now_ms: int, connection_id: int = -1,
    ) -> dict[str, Any]:  # fmt: skip
        """The GetTelemetrySubscriptions answer's fields (``new_id`` is used for a zero id)."""
        instance_id = requested if requested not in (None, ZERO) else new_id
        assert instance_id is not None
        instance = self._instance(
            image, instance_id, (client_id, address, self.software(connection_id)), now_ms
        )
        if not instance.may_get(now_ms):
            return {"error_code": ErrorCode.throttling_quota_exceeded}
        return {
            "error_code": ErrorCode.none,
            "client_instance_id": instance_id,
            "subscription_id": instance.subscription_id,
            "accepted_compression_types": list(SUPPORTED_COMPRESSION),
            "push_interval": instance.interval_ms,
            "telemetry_max_bytes": max_bytes,
            "delta_temporality": True,
            "requested_metrics": list(instance.metrics),
        }

    def push(
        self, image: MetadataImage, request: Any, client_id: str, address: str, max_bytes: int, now_ms: int,
        connection_id: int = -1,
    ) -> ErrorCode:  # fmt: skip
        instance_id = request.client_instance_id
        if instance_id in (None, ZERO):
            return ErrorCode.invalid_request
        instance = self._instance(
            image, instance_id, (client_id, address, self.software(connection_id)), now_ms
        )
        terminating = bool(request.terminating)
        try:
            if instance.terminating:
                return ErrorCode.invalid_request
            if not instance.may_push(now_ms) and not terminating:
                return ErrorCode.throttling_quota_exceeded
            if int(request.subscription_id) != instance.subscription_id:
                return ErrorCode.unknown_subscription_id
            codec = int(request.compression_type)
            if codec != 0 and codec not in SUPPORTED_COMPRESSION:
                return ErrorCode.unsupported_compression_type
            payload = bytes(request.metrics or b"")
            if len(payload) > max_bytes:
                return ErrorCode.telemetry_too_large
        finally:
            instance.terminating = terminating
        names: list[str] = []
        if payload:
            try:
                raw = inflate(codec, payload, MAX_INFLATED) if codec else payload
                names = metric_names(raw)
            except (InvalidBatchError, ValueError):
                return ErrorCode.invalid_record
        instance.pushes += 1
        instance.bytes += len(payload)
        for older in instance.kept:  # only the newest push keeps its names: bounded per instance
            older.metrics = []
        instance.kept.append(Push(now_ms, codec, len(payload), terminating, names))
        return ErrorCode.none

    def inspect(self, image: MetadataImage) -> dict[str, str]:
        """One JSON summary per known client instance (the harness's read path)."""
        del image
        out: dict[str, str] = {}
        newest = list(self._instances.items())[-MAX_INSPECTED:]
        for iid, inst in newest:
            out[str(iid)] = json.dumps(
                {
                    "client_id": inst.client_id,
                    "address": inst.address,
                    "subscription_id": inst.subscription_id,
                    "requested_metrics": list(inst.metrics),
                    "push_interval_ms": inst.interval_ms,
                    "pushes": inst.pushes,
                    "bytes": inst.bytes,
                    "terminating": inst.terminating,
                    "last_pushes": [
                        {
                            "at_ms": p.at_ms,
                            "compression": p.compression,
                            "bytes": p.size,
                            "terminating": p.terminating,
                            "metrics": p.metrics,
                        }
                        for p in inst.kept
                    ],
                },
                sort_keys=True,
            )
        return out


# -- the OpenTelemetry MetricsData walk (opentelemetry/proto/metrics/v1/metrics.proto) -------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes, budget: list[int]) -> Iterator[tuple[int, int, bytes | int]]:
    """(field number, wire type, value) of one message; bounded by ``budget`` fields overall."""
    pos = 0
    while pos < len(data):
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError("too many protobuf fields")
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, wire, value
        elif wire == 1 or wire == 5:
            width = 8 if wire == 1 else 4
            if pos + width > len(data):
                raise ValueError("truncated fixed field")
            pos += width
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("length past the message")
            yield number, wire, data[pos : pos + length]
            pos += length
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def metric_names(data: bytes) -> list[str]:
    """The names of the metrics in an OTLP ``MetricsData`` (resource_metrics=1 → scope_metrics=2 →
    metrics=2 → name=1), at most :data:`MAX_NAMES`; ValueError when it is not such a message."""
    names: list[str] = []
    budget = [MAX_PROTO_FIELDS]
    for num, wire, resource in _fields(data, budget):
        if num != 1 or wire != 2:
            continue
        assert isinstance(resource, bytes)
        for num2, wire2, scope in _fields(resource, budget):
            if num2 != 2 or wire2 != 2:
                continue
            assert isinstance(scope, bytes)
            for num3, wire3, metric in _fields(scope, budget):
                if num3 != 2 or wire3 != 2:
                    continue
                assert isinstance(metric, bytes)
                for num4, wire4, name in _fields(metric, budget):
                    if num4 == 1 and wire4 == 2 and len(names) < MAX_NAMES:
                        assert isinstance(name, bytes)
                        names.append(name[:MAX_NAME_CHARS].decode("utf-8", "replace"))
    return names
