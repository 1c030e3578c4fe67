"""Broker-side fetch throughput, with no client library in the way (issue 22).

The bench's consumer figure is confluent-kafka's: past a few hundred thousand
records a second it measures the Python consumer loop (one message object per
record), not the broker. This reader asks with the project's raw protocol client
(:class:`fixtures.wire.client.WireClient`): Fetch to each partition's leader, all
its partitions in one request, and walks only the record batch headers in the
answer (offsets, record counts; never a record). It reads what the throughput run
produced, from offset 0 to the high watermark each partition had when the read
began, so its figures are bytes and records a second served by the broker.

Leaders are read in turn on one connection each (a cluster's three leaders are
not read in parallel): on the cluster the figure is one reader's, a lower bound.
Every loop is bounded in requests and in time; a batch the answer cuts short (a
broker may end a fetch mid-batch at ``max_bytes``) is not counted and is asked for
again from its offset.
"""

from __future__ import annotations

import time
from typing import Any

from fixtures.wire.client import WireClient
from reference_impl.protocol.records import HEADER_SIZE, parse_header

from .model import RawRun

FETCH_KEY, METADATA_KEY = 1, 3
FETCH_VERSIONS = (4, 12)
"""Fetch by topic name (v13 switched to topic ids), with record batches v2 (v4+)."""
METADATA_VERSIONS = (1, 9)
MAX_WAIT_MS = 500
MAX_BYTES = 52_428_800
PARTITION_MAX_BYTES = 10_485_760
"""As the bench's consumer: fetch.max.bytes and max.partition.fetch.bytes."""
MAX_REQUESTS = 100_000
MAX_PASSES = 50
MIN_SECONDS = 1.0
"""How long the bench reads a topic over and over (whole reads, at most ``MAX_PASSES``)."""
RETRY_ATTEMPTS = 50
RETRY_BACKOFF_S = 0.1
"""How often, and how far apart, a raw run asks again while a new topic's metadata propagates."""
NOT_YET = frozenset({3, 5})
"""UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE: retriable while metadata propagates."""
TIMEOUT_S = 120.0


def api_version(wire: WireClient, key: int, wanted: tuple[int, int]) -> int:
    low, high = wire.api_versions().get(key, (-1, -1))
    version = min(high, wanted[1])
    if version < max(low, wanted[0]):
        raise RuntimeError(f"{wire.address} offers API {key} v{low}-v{high}, the raw reader needs "
                           f"v{wanted[0]}-v{wanted[1]}")
    return version


def leaders(bootstrap: str, topic: str) -> dict[str, list[int]]:
    """Leader address -> the topic's partitions it leads (Metadata on the first bootstrap broker,
    asked again a bounded number of times while it does not know them yet: a topic just created
    through another broker reaches this one's metadata a moment later)."""
    with WireClient(bootstrap.split(",")[0]) as wire:
        version = api_version(wire, METADATA_KEY, METADATA_VERSIONS)
        for _attempt in range(RETRY_ATTEMPTS):
            answer: Any = wire.request(METADATA_KEY, version, topics=[{"name": topic}])
            codes = {int(t.error_code) for t in answer.topics} | {
                int(p.error_code) for t in answer.topics for p in t.partitions
            }
            if not codes & NOT_YET:
                break
            time.sleep(RETRY_BACKOFF_S)
    brokers = {int(b.node_id): f"{b.host}:{b.port}" for b in answer.brokers}
    by_leader: dict[str, list[int]] = {}
    for t in answer.topics:
        if t.name != topic or int(t.error_code) != 0:
            raise RuntimeError(f"Metadata for {topic}: error {int(t.error_code)}")
        for p in t.partitions:
            leader = int(p.leader_id)
            if leader not in brokers:
                raise RuntimeError(f"{topic}-{int(p.partition_index)} has no leader in Metadata")
            by_leader.setdefault(brokers[leader], []).append(int(p.partition_index))
    return by_leader


def count_batches(data: bytes) -> tuple[int, int, int]:
    """(records, bytes, next offset) of the whole batches in ``data``; next offset -1 when none.

    Only the headers are read; a trailing partial batch is left out (the next fetch starts at it)."""
    records = size = 0
    next_offset = -1
    position = 0
    end = len(data)
    while end - position >= HEADER_SIZE:
        header = parse_header(data, position)
        if header.batch_length <= 0 or position + header.size > end:
            break
        records += header.records_count
        size += header.size
        next_offset = header.next_offset
        position += header.size
    return records, size, next_offset


def _fetch(
    wire: WireClient, version: int, topic: str, offsets: dict[int, int],
    partition_max_bytes: int = PARTITION_MAX_BYTES,
) -> Any:
    return wire.request(
        FETCH_KEY,
        version,
        replica_id=-1,
        max_wait=MAX_WAIT_MS,
        min_bytes=1,
        max_bytes=MAX_BYTES,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": topic,
                "partitions": [
                    {"partition": p, "fetch_offset": o, "partition_max_bytes": partition_max_bytes}
                    for p, o in offsets.items()
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def _read_once(
    clients: dict[str, WireClient], versions: dict[str, int], plan: dict[str, list[int]], topic: str,
    deadline: float,
) -> tuple[int, int, int]:
    """One read of every partition from 0 to the high watermark it had at the start: (records,
    bytes, requests)."""
    offsets = {a: dict.fromkeys(parts, 0) for a, parts in plan.items()}
    ends: dict[tuple[str, int], int] = {}
    records = size = requests = 0
    while any(offsets.values()):
        if requests >= MAX_REQUESTS or time.monotonic() > deadline:
            raise RuntimeError(f"raw fetch of {topic} unfinished after {requests} requests")
        for address, wanted in offsets.items():
            if not wanted:
                continue
            answer = _fetch(clients[address], versions[address], topic, wanted)
            requests += 1
            if int(getattr(answer, "error_code", 0)) != 0:
                raise RuntimeError(f"Fetch from {address}: error {int(answer.error_code)}")
            for t in answer.responses:
                for p in t.partitions:
                    index = int(p.partition_index)
                    if int(p.error_code) != 0:
                        raise RuntimeError(
                            f"Fetch {topic}-{index} from {address}: error {int(p.error_code)}"
                        )
                    end = ends.setdefault((address, index), int(p.high_watermark))
                    n, b, next_offset = count_batches(bytes(p.records or b""))
                    records, size = records + n, size + b
                    if next_offset >= 0:
                        wanted[index] = next_offset
                    if wanted.get(index, end) >= end:
                        wanted.pop(index, None)
    return records, size, requests


def read_topic(bootstrap: str, topic: str, min_seconds: float = 0.0) -> RawRun:
    """Read every partition of ``topic`` from 0 to its high watermark, timed; again, whole, while
    less than ``min_seconds`` has passed (at most ``MAX_PASSES`` reads).

    A single read of the bench's 30 MB topic lasts tens of milliseconds: one scheduling hiccup
    moved the figure by half, so the bench asks for a second's worth of reads. One small fetch
    first, untimed, loads what a first request costs the reader and the broker once (the request
    schema, the connection's first buffers)."""
    plan = leaders(bootstrap, topic)
    clients: dict[str, WireClient] = {}
    try:
        for address in plan:
            clients[address] = WireClient(address)
        versions = {a: api_version(w, FETCH_KEY, FETCH_VERSIONS) for a, w in clients.items()}
        for address, parts in plan.items():
            _fetch(clients[address], versions[address], topic, dict.fromkeys(parts, 0), 1)
        records = size = requests = passes = 0
        start = time.perf_counter()
        deadline = time.monotonic() + TIMEOUT_S
        while passes == 0 or (time.perf_counter() - start < min_seconds and passes < MAX_PASSES):
            n, b, r = _read_once(clients, versions, plan, topic, deadline)
            records, size, requests, passes = records + n, size + b, requests + r, passes + 1
        seconds = time.perf_counter() - start
    finally:
        for wire in clients.values():
            wire.close()
    return RawRun(records, size, seconds, requests)
