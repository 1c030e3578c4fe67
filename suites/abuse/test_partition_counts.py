"""Abuse: one request asking for 100,000 partitions (issue 17, item 5).

The reference broker once accepted a CreatePartitions to 100,000; it ran out of file descriptors at
6,662 partitions, failed every accept from then on and could not start again on its data directory.
Kafka's controller refuses such a request before anything else: more than 10,000 partitions in one
request is POLICY_VIOLATION ("Excessively large number of partitions per request.",
metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java,
``validateTotalNumberOfPartitions``; ``QuorumController.MAX_RECORDS_PER_USER_OP`` bounds the records of
any one operation at 10,000).

Each check asks once, as CreateTopics (a new topic of 100,000 partitions) and as CreatePartitions (an
existing topic grown to 100,000), then:

* ``..._is_refused``: the answer is Kafka's, POLICY_VIOLATION (a target that accepts deviates);
* ``..._leaves_the_target_live``: whatever the answer, the target still answers Metadata and, when the
  harness started it, restarts and answers again; its descriptors and memory are sampled from /proc
  and printed.

Target-agnostic: the module starts a target of its own when the run's target is one the harness
launches (so that restarting it disturbs no other test), and otherwise uses the run's target without
restarting it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fixtures.targets import Target, TargetSession, TargetUnavailableError, sample
from fixtures.wire import WireClient, WireError

ASKED = 100_000
KAFKA_LIMIT = 10_000
REQUEST_TIMEOUT_S = 180.0
LAUNCHED_KINDS = ("reference", "tansu", "noida")


@dataclass
class Abused:
    """The target under abuse, and whether this module may restart it."""

    target: Target
    restartable: bool

    @property
    def address(self) -> str:
        return self.target.bootstrap_servers.split(",")[0]

    def client(self, timeout_s: float = REQUEST_TIMEOUT_S) -> WireClient:
        return WireClient(self.address, timeout_s=timeout_s)

    def resources(self) -> str:
        """The processes' descriptors and memory, for the printed figures ('' for a remote target)."""
        readings = [sample(node.pid) for node in self.target.nodes if node.pid is not None]
        return ", ".join(f"{r.open_fds} fds, {r.rss_mib:.0f} MiB" for r in readings if r is not None)


@pytest.fixture(scope="module")
def abused(target_session: TargetSession) -> Iterator[Abused]:
    if target_session.spec.kind not in LAUNCHED_KINDS:
        try:
            yield Abused(target_session.target(), restartable=False)
        except TargetUnavailableError as exc:
            pytest.skip(f"target unavailable: {exc}")
        return
    try:
        own = target_session.launch_fresh()
    except TargetUnavailableError as exc:
        pytest.skip(f"target unavailable: {exc}")
    try:
        yield Abused(own, restartable=True)
    finally:
        own.close()


def _versions(wire: WireClient, api_key: int, usable: range) -> int:
    low, high = wire.api_versions().get(api_key, (0, -1))
    best = min(high, usable.stop - 1)
    if best < max(low, usable.start):
        pytest.skip(f"the target does not advertise API {api_key} in v{usable.start}..v{usable.stop - 1}")
    return best


def _create_topic(wire: WireClient, name: str, partitions: int) -> Any:
    version = _versions(wire, 19, range(2, 8))
    answer = wire.request(
        "create_topics", version, timeout=int(REQUEST_TIMEOUT_S * 1000), validate_only=False,
        topics=[{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                 "configs": []}],
    )
    return answer.topics[0]


def _grow_topic(wire: WireClient, name: str, count: int) -> Any:
    version = _versions(wire, 37, range(0, 4))
    answer = wire.request(
        "create_partitions", version, timeout=int(REQUEST_TIMEOUT_S * 1000), validate_only=False,
        topics=[{"name": name, "count": count, "assignments": None}],
    )
    return answer.results[0]


def _ask(abused: Abused, kind: str) -> tuple[str, float]:
    """Send the abusive request once; (outcome, seconds). The outcome is the error name, or how the
    connection ended."""
    name = f"kh-abuse-{kind}-{time.time_ns() % 10**9}"
    began = time.monotonic()
    try:
        with abused.client() as wire:
            if kind == "create-topics":
                result = _create_topic(wire, name, ASKED)
            else:
                created = _create_topic(wire, name, 1)
                assert int(created.error_code) == 0, f"CreateTopics {name}: {created.error_code}"
                result = _grow_topic(wire, name, ASKED)
        outcome = result.error_code.name.upper()
    except (WireError, OSError) as exc:
        outcome = f"no answer ({exc})"
    return outcome, time.monotonic() - began


_OUTCOMES: dict[str, tuple[str, float, str]] = {}


def _outcome(abused: Abused, kind: str) -> tuple[str, float, str]:
    """The request's outcome, asked once per kind for both checks (it is the expensive part)."""
    if kind not in _OUTCOMES:
        before = abused.resources()
        outcome, seconds = _ask(abused, kind)
        _OUTCOMES[kind] = (outcome, seconds, f"before {before or 'n/a'}; after {abused.resources() or 'n/a'}")
        print(f"\n{kind} asking {ASKED:,} partitions on {abused.target.name}: {outcome} in {seconds:.1f} s "
              f"({_OUTCOMES[kind][2]})")
    return _OUTCOMES[kind]


def _metadata_answers(abused: Abused) -> bool:
    try:
        with abused.client(timeout_s=60) as wire:
            version = _versions(wire, 3, range(1, 13))
            return bool(wire.request("metadata", version, topics=[], allow_auto_topic_creation=False).brokers)
    except (WireError, OSError):
        return False


@pytest.mark.parametrize("kind", ["create-topics", "create-partitions"])
def test_asking_100k_partitions_is_refused(abused: Abused, kind: str) -> None:
    """Kafka refuses more than 10,000 partitions in one request with POLICY_VIOLATION
    (ReplicationControlManager.java, validateTotalNumberOfPartitions / MAX_RECORDS_PER_USER_OP)."""
    outcome, _seconds, _figures = _outcome(abused, kind)
    assert outcome == "POLICY_VIOLATION", (
        f"[Kafka's limit of {KAFKA_LIMIT:,} partitions per request] {kind} asking {ASKED:,}: "
        f"expected POLICY_VIOLATION, got {outcome}"
    )


@pytest.mark.parametrize("kind", ["create-topics", "create-partitions"])
def test_asking_100k_partitions_leaves_the_target_live(abused: Abused, kind: str) -> None:
    """Whatever the answer, the target keeps answering Metadata and, when the harness started it, is
    restarted (SIGTERM, start on the same data) and answers again."""
    outcome, _seconds, figures = _outcome(abused, kind)
    assert _metadata_answers(abused), f"after {kind} ({outcome}) the target no longer answers Metadata"
    if not abused.restartable:
        return
    began = time.monotonic()
    for node in abused.target.nodes:
        try:
            node.restart()
        except TargetUnavailableError as exc:
            pytest.fail(f"after {kind} ({outcome}) the target does not start again: {exc}")
    live = _metadata_answers(abused)
    print(f"\n{abused.target.name} restarted after {kind} in {time.monotonic() - began:.1f} s "
          f"({abused.resources() or 'n/a'}); {figures}")
    assert live, f"after {kind} ({outcome}) and a restart the target does not answer Metadata"
