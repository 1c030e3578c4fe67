"""Broker-side produce throughput, with no client library in the way (issue 22).

The bench's producer figure is confluent-kafka's, driven from a Python loop: at 100 B
records the loop's ``produce()`` calls (one Python call and one C message per record)
are the ceiling on both sides, so "reference against Tansu" compared two clients.
This writer builds one record batch once (the project's batch encoder: about
``BATCH_BYTES`` of records, 64 KiB as the bench producer's ``batch.size``), encodes
one Produce request per leader with a batch for each of the partitions it leads, and
sends that request over and over on one connection per leader, ``PIPELINE`` requests
ahead of their answers. Every answer is decoded and
every partition's error code checked, so each counted record was accepted with the
scenario's acks. Brokers assign offsets on append, so the same bytes can be sent
again (no producer id: no sequence to repeat).

Every leader is written at once (a round sends one request to each, then reads the
answers due), as a producer keeps a connection to each leader busy. One request per
leader is accepted before the clock starts (see :func:`_warm_up`). Every loop is
bounded in requests and in time.
"""

from __future__ import annotations

import time
from typing import Any

from fixtures.wire.client import WireClient, build_request
from reference_impl.protocol.codec import decode_response, encode_request
from reference_impl.protocol.record_set import build_batch

from .model import RawRun
from .raw_fetch import MAX_REQUESTS, RETRY_ATTEMPTS, RETRY_BACKOFF_S, TIMEOUT_S, api_version, leaders

PRODUCE_KEY = 0
PRODUCE_VERSIONS = (3, 9)
"""Produce by topic name (v13 switched to topic ids), record batches v2 (v3+)."""
BATCH_BYTES = 65_536
PIPELINE = 4
"""Requests sent ahead of their answers on each connection: the broker reads one at a time (it
mutes a connection while a request is in hand, as Kafka), the rest wait in the socket."""
ACK_TIMEOUT_MS = 30_000
NOT_YET = frozenset({3, 6})
"""UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER: a leader that has not applied the topic yet."""


def records_per_batch(value_size: int) -> int:
    """How many records of ``value_size`` fill about ``BATCH_BYTES`` (at least one)."""
    return max(1, BATCH_BYTES // (value_size + 8))


def _frame(topic: str, partitions: list[int], batch: bytes, acks: int, version: int) -> bytes:
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout": ACK_TIMEOUT_MS,
        "topic_data": [
            {"name": topic, "partition_data": [{"index": p, "records": batch} for p in partitions]}
        ],
    }
    return encode_request(build_request(PRODUCE_KEY, version, body), 1, "kafka-harness-raw-writer")


def _check(answer: Any, address: str, allowed: frozenset[int] = frozenset()) -> bool:
    """True if every partition was accepted; False if some were refused with an ``allowed`` error;
    raises on any other error."""
    accepted = True
    for t in answer.responses:
        for p in t.partition_responses:
            code = int(p.error_code)
            if code in allowed:
                accepted = False
            elif code != 0:
                raise RuntimeError(f"Produce {t.name}-{int(p.index)} to {address}: error {code}")
    return accepted


def _warm_up(wire: WireClient, frame: bytes, version: int, address: str) -> None:
    """One request accepted before the clock starts: a leader that has not yet applied the new
    topic (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER) is asked again, a bounded number of
    times; and a new topic's first acks=all write, which waits for the followers' next fetch to name
    the partition, is not timed (as the bench's client-driven runs warm up)."""
    for _attempt in range(RETRY_ATTEMPTS):
        wire.send_frame(frame)
        if _check(decode_response(PRODUCE_KEY, version, wire.receive_frame())[1], address, NOT_YET):
            return
        time.sleep(RETRY_BACKOFF_S)
    raise RuntimeError(f"{address} refused the warm-up produce {RETRY_ATTEMPTS} times")


def write_topic(bootstrap: str, topic: str, value_size: int, records: int, acks: int) -> RawRun:
    """Write at least ``records`` records of ``value_size`` bytes to every partition of ``topic``
    in whole batches, round-robin over its leaders; timed from the first send to the last answer."""
    per_batch = records_per_batch(value_size)
    batch = build_batch([(None, b"x" * value_size)] * per_batch, base_timestamp=int(time.time() * 1000))
    plan = leaders(bootstrap, topic)
    clients: dict[str, WireClient] = {}
    try:
        for address in plan:
            clients[address] = WireClient(address)
        frames = {
            a: (_frame(topic, parts, batch, acks, v := api_version(w, PRODUCE_KEY, PRODUCE_VERSIONS)), v)
            for (a, w), parts in zip(clients.items(), plan.values(), strict=True)
        }
        per_request = {a: len(parts) * per_batch for a, parts in plan.items()}
        for address, wire in clients.items():
            _warm_up(wire, *frames[address], address)
        rounds = max(1, -(-records // sum(per_request.values())))
        written = size = requests = 0
        in_flight = dict.fromkeys(clients, 0)
        start = time.perf_counter()
        deadline = time.monotonic() + TIMEOUT_S
        for sent in range(rounds + PIPELINE):
            if requests >= MAX_REQUESTS or time.monotonic() > deadline:
                raise RuntimeError(f"raw produce to {topic} unfinished after {requests} requests")
            if sent < rounds:
                for address, wire in clients.items():
                    wire.send_frame(frames[address][0])
                    in_flight[address] += 1
            for address, wire in clients.items():
                if in_flight[address] == PIPELINE or (sent >= rounds and in_flight[address]):
                    frame = wire.receive_frame()
                    _check(decode_response(PRODUCE_KEY, frames[address][1], frame)[1], address)
                    in_flight[address] -= 1
                    requests += 1
                    written += per_request[address]
                    size += len(plan[address]) * len(batch)
        seconds = time.perf_counter() - start
    finally:
        for wire in clients.values():
            wire.close()
    return RawRun(written, size, seconds, requests)
