"""Share groups (KIP-932) through a real client: two confluent-kafka ``ShareConsumer``s (librdkafka's
share consumer, "preview" in 2.16) in one share group read a topic like a queue.

KIP-932's promise to a consumer: a record is *acquired* by one member at a time and, once that member
accepts it (implicit acknowledgement: on its next poll), never handed out again; records are
spread over the members (the share-group assignor gives partitions to several members at once).
So every record produced after the members joined reaches exactly one of them within the lock
duration (30 s by default, longer than this case). A share-partition starts at the log end when it
is first fetched (``share.auto.offset.reset=latest``, the default), which can be after the
coordinator assigned it (a TLS handshake is enough to tell the two apart), so the case waits for
the assignment and then warms each partition up (a record per partition until one arrived from
each) before producing what it checks. A second case sets ``share.auto.offset.reset=earliest`` on a
group through the AdminClient (config resource type GROUP, Kafka's GroupConfig) and reads records
produced before its member joined. Targets that do not advertise ShareGroupHeartbeat (76) and
ShareFetch (78) skip.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, ops
from fixtures.wire.capabilities import describe_absence
from fixtures.wire.security import default_security

FEATURE = "Share groups (KIP-932)"
PARTITIONS = 3
RECORDS = 300
WARM_UP = b"warm-up"
EARLY_RECORDS = 20
BOUND_S = 30.0
"""Each phase's bound (joining, then consuming); the loops end as soon as the phase is done."""


def _settings(bootstrap: str) -> dict[str, Any]:
    security = default_security()
    return {**(security.confluent() if security is not None else {}), "bootstrap.servers": bootstrap}


def _share_client(caps: Capabilities, *apis: str) -> Any:
    """The confluent_kafka module, or a skip: not installed, no ShareConsumer, or the target lacks
    ShareGroupHeartbeat, ShareFetch or one of ``apis``."""
    confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")
    if not hasattr(confluent_kafka, "ShareConsumer"):
        pytest.skip(f"confluent-kafka {confluent_kafka.version()[0]} has no ShareConsumer")
    for api in ("share_group_heartbeat", "share_fetch", *apis):
        if not caps.supports(api):
            pytest.skip(describe_absence(api, caps))
    return confluent_kafka


def _assigned_members(router: Router, caps: Capabilities, group: str) -> int:
    """Members of ``group`` the coordinator has given at least one partition (ShareGroupDescribe)."""
    answer = router.to_coordinator(group).request(
        "share_group_describe", caps.best("share_group_describe"), group_ids=[group],
        include_authorized_operations=False,
    )  # fmt: skip
    described = answer.groups[0]
    if described.error_code != 0:
        return 0
    return sum(1 for m in described.members if any(t.partitions for t in m.assignment.topic_partitions))


def test_two_share_consumers_split_a_topic_each_record_once(
    bootstrap_servers: str, router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """KIP-932: two members of a share group together receive every record produced once, and no
    record reaches both (implicit acknowledgement, nothing released or timed out)."""
    confluent_kafka = _share_client(caps, "share_group_describe")
    topic = topic_factory(partitions=PARTITIONS)
    group = f"kh-share-{uuid.uuid4().hex[:8]}"
    members = [
        confluent_kafka.ShareConsumer({**_settings(bootstrap_servers), "group.id": group, "log_level": 3})
        for _ in range(2)
    ]
    received: list[list[bytes]] = [[], []]
    warmed: set[int] = set()

    def poll_all(timeout_s: float) -> None:
        for n, member in enumerate(members):
            batch = member.poll(timeout_s)
            for message in batch.records() if batch is not None else ():
                assert message.error() is None, f"member {n}: {message.error()}"
                if message.value() == WARM_UP:
                    warmed.add(message.partition())
                else:
                    received[n].append(message.value())

    try:
        for member in members:
            member.subscribe([topic])
        deadline = time.monotonic() + BOUND_S
        while _assigned_members(router, caps, group) < len(members) and time.monotonic() < deadline:
            poll_all(0.5)
        joined = _assigned_members(router, caps, group)
        assert joined == len(members), f"{joined} of {len(members)} members were assigned within {BOUND_S} s"
        producer = confluent_kafka.Producer(_settings(bootstrap_servers))
        deadline = time.monotonic() + BOUND_S
        while len(warmed) < PARTITIONS and time.monotonic() < deadline:
            for partition in set(range(PARTITIONS)) - warmed:
                producer.produce(topic, WARM_UP, partition=partition)
            producer.flush(BOUND_S)
            poll_all(0.3)
        assert len(warmed) == PARTITIONS, f"only partitions {sorted(warmed)} delivered within {BOUND_S} s"
        for i in range(RECORDS):
            producer.produce(topic, b"r%d" % i, partition=i % PARTITIONS)
        assert producer.flush(BOUND_S) == 0, "the producer did not deliver every record"
        started = time.monotonic()
        deadline = started + BOUND_S
        while len(set(received[0]) | set(received[1])) < RECORDS and time.monotonic() < deadline:
            poll_all(0.2)
        took = time.monotonic() - started
    finally:
        for member in members:
            member.close()
    union = set(received[0]) | set(received[1])
    missing = {b"r%d" % i for i in range(RECORDS)} - union
    both = set(received[0]) & set(received[1])
    repeated = sum(len(r) - len(set(r)) for r in received)
    print(f"share group: {len(received[0])} + {len(received[1])} records to two members in {took:.2f} s")
    assert not missing, f"{len(missing)} records never delivered, e.g. {sorted(missing)[:5]}"
    assert not both and repeated == 0, f"{len(both)} records reached both members, {repeated} repeated to one"


def test_share_auto_offset_reset_earliest_through_the_admin_client(
    bootstrap_servers: str, router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """KIP-932 / Kafka's GroupConfig: ``share.auto.offset.reset=earliest``, set on the group (config
    resource type GROUP) with confluent-kafka's ``AdminClient.incremental_alter_configs``, makes the
    group's share-partitions start at the log start, so a member that joins after the records were
    produced receives them all."""
    confluent_kafka = _share_client(caps, "incremental_alter_configs")
    admin_module = pytest.importorskip("confluent_kafka.admin", reason="confluent-kafka is not installed")

    topic = topic_factory(partitions=1)
    group = f"kh-share-early-{uuid.uuid4().hex[:8]}"
    producer = confluent_kafka.Producer(_settings(bootstrap_servers))
    early = [b"early-%d" % i for i in range(EARLY_RECORDS)]
    for value in early:
        producer.produce(topic, value)
    assert producer.flush(BOUND_S) == 0, "the producer did not deliver every record"
    entry = admin_module.ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=admin_module.AlterConfigOpType.SET
    )
    resource = admin_module.ConfigResource("group", group, incremental_configs=[entry])
    admin = admin_module.AdminClient(_settings(bootstrap_servers))
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(BOUND_S)  # raises KafkaException with the broker's error
    applied = ops.wait_config_everywhere(
        router, caps, ops.GROUP_RESOURCE, group, "share.auto.offset.reset", "earliest"
    )  # the partition's leader decides where its share-partition starts, from its own image
    assert applied, f"a broker did not apply share.auto.offset.reset in {ops.CONFIG_APPLY_BOUND_S} s"
    member = confluent_kafka.ShareConsumer(
        {**_settings(bootstrap_servers), "group.id": group, "log_level": 3}
    )
    received: list[bytes] = []
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + BOUND_S
        while len(received) < len(early) and time.monotonic() < deadline:
            batch = member.poll(0.5)
            for message in batch.records() if batch is not None else ():
                assert message.error() is None, str(message.error())
                received.append(message.value())
    finally:
        member.close()
    assert sorted(received) == sorted(early), f"received {len(received)} of {len(early)} early records"
