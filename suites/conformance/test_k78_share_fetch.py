"""Share groups (KIP-932): ShareFetch (78) and ShareAcknowledge (79).

Rules from KIP-932 and Kafka's share-partition (core/src/main/java/kafka/server/share/SharePartition.java,
``SharePartitionManager.java``, ``KafkaApis.handleShareFetchRequest``/``handleShareAcknowledgeRequest``):
a ShareFetch acquires records for the member, answered as AcquiredRecords ranges with each record's
delivery count; a record another member holds is not handed out; ACCEPT (1) finishes a record,
RELEASE (2) makes it available again (delivered next with its count raised), REJECT (3) archives it;
an acquisition lock that runs out (``group.share.record.lock.duration.ms``) releases the record;
acknowledging a record the member does not hold is INVALID_RECORD_STATE; share session epochs
(0 opens, then 1, 2, ...) out of order are INVALID_SHARE_SESSION_EPOCH, a session that does not
exist SHARE_SESSION_NOT_FOUND; a member the group does not know is UNKNOWN_MEMBER_ID.

A share-partition starts at the log end (``share.auto.offset.reset=latest``), so each test opens
the session with a first ShareFetch before producing. The members speak through
:mod:`fixtures.wire.share` (the harness's small share consumer). Targets that do not advertise
ShareFetch skip these tests, as the 76/77 cases do.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fixtures.targets import TargetSession
from fixtures.wire import Capabilities, Router, WireClient, describe_absence, ops
from fixtures.wire.share import (
    ACCEPT,
    REJECT,
    RELEASE,
    TP,
    ShareConsumer,
    acquired,
    acquired_offsets,
    partition_of,
)

from .expect import expect, expect_code, expect_equal

KIP = "KIP-932"
SHORT_LOCK_MS = 1000
LONG_POLL_MS = 5000
PRODUCE_AFTER_S = 0.5
GROUP_NAME_TRIES = 200  # names tried for one coordinated on a given broker
DELIVERY_LIMIT = 5  # group.share.delivery.count.limit, Kafka's default
LOCK_WAIT_CAP_S = 65.0  # a target's own lock (Kafka's default 30 s) is waited for, never longer than this


@pytest.fixture(autouse=True)
def _share_fetch(caps: Capabilities) -> None:
    for api in ("share_group_heartbeat", "share_fetch", "share_acknowledge"):
        if not caps.supports(api):
            pytest.skip(describe_absence(api, caps))


def member(router: Router, caps: Capabilities, group: str, topic: str) -> ShareConsumer:
    return ShareConsumer(router.to_coordinator(group), router.to_leader(topic, 0), caps, group)


def joined(router: Router, caps: Capabilities, group: str, topic: str) -> tuple[ShareConsumer, TP]:
    """A member of ``group`` assigned partition 0 of ``topic``, its share session open (epoch 0)."""
    tp: TP = (ops.topic_id(router, caps, topic), 0)
    m = member(router, caps, group, topic)
    expect(m.join([topic], {tp}), KIP, f"member {m.member_id} was never assigned {tp}")
    opened = m.fetch([tp])
    expect_code(opened.error_code, "NONE", rule=KIP, where="ShareFetch opening the session")
    return m, tp


def group_on_leader(router: Router, unique: Callable[[str], str], topic: str) -> str:
    """A fresh group name whose coordinator is partition 0's leader (any name on one broker)."""
    leader = router.to_leader(topic, 0).address
    group = unique("sg")
    for _ in range(GROUP_NAME_TRIES):
        if router.to_coordinator(group).address == leader:
            return group
        group = unique("sg")
    raise AssertionError(f"none of {GROUP_NAME_TRIES} group names is coordinated on the leader {leader}")


def produce(router: Router, caps: Capabilities, topic: str, count: int) -> None:
    answer = ops.produce_values(router, caps, topic, [b"v%d" % i for i in range(count)])
    expect_code(answer.error_code, "NONE", rule="setup: Produce")


def fetch_ok(m: ShareConsumer, tp: TP, **kwargs: Any) -> Any:
    answer = m.fetch([tp], **kwargs)
    expect_code(answer.error_code, "NONE", rule=KIP, where="ShareFetch")
    entry = partition_of(answer, tp)
    if entry is not None:
        expect_code(entry.error_code, "NONE", rule=KIP, where="ShareFetch partition")
    return answer


def entry_of(answer: Any, tp: TP, what: str) -> Any:
    """The answer's entry for ``tp``; a missing entry fails the check naming ``what``."""
    entry = partition_of(answer, tp)
    expect(entry is not None, KIP, f"the partition is missing from the {what} answer")
    return entry


def test_fetch_acquires_records_with_delivery_count_one(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-932: the records a ShareFetch hands out are listed in AcquiredRecords, each delivered once
    (delivery count 1), and the batches holding them come back."""
    m, tp = joined(router, caps, unique("sg"), topic)
    produce(router, caps, topic, 3)
    answer = fetch_ok(m, tp)
    expect_equal(acquired_offsets(answer, tp), {0: 1, 1: 1, 2: 1}, KIP, "acquired offsets → delivery count")
    entry = partition_of(answer, tp)
    got = [r.value for r in ops.data_records(entry)] if entry is not None else []
    expect_equal(got, [b"v0", b"v1", b"v2"], KIP, "records returned with the acquired ranges")


def test_second_member_does_not_get_records_held_by_the_first(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-932: an acquired record is locked to its member; another member of the group fetching the
    same partition is not given it."""
    group = unique("sg")
    first, tp = joined(router, caps, group, topic)
    second, _ = joined(router, caps, group, topic)
    produce(router, caps, topic, 4)
    got_first = acquired_offsets(fetch_ok(first, tp), tp)
    expect_equal(sorted(got_first), [0, 1, 2, 3], KIP, "offsets the first member acquired")
    got_second = acquired_offsets(fetch_ok(second, tp), tp)
    expect_equal(got_second, {}, KIP, "offsets the second member acquired while the first holds them all")


@pytest.mark.parametrize("kind", [ACCEPT, REJECT], ids=["accept", "reject"])
def test_finished_records_are_not_delivered_again(
    kind: int, router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-932: ACCEPT (1) acknowledges, REJECT (3) archives: either way the records are finished and
    no member, the acknowledging one or another, is given them again."""
    group = unique("sg")
    m, tp = joined(router, caps, group, topic)
    produce(router, caps, topic, 2)
    expect_equal(acquired_offsets(fetch_ok(m, tp), tp), {0: 1, 1: 1}, KIP, "first delivery")
    acked = m.acknowledge({tp: [(0, 1, kind)]})
    expect_code(acked.error_code, "NONE", rule=KIP, where="ShareAcknowledge")
    expect_code(entry_of(acked, tp, "ShareAcknowledge").error_code, "NONE", rule=KIP, where=f"type {kind}")
    expect_equal(acquired_offsets(fetch_ok(m, tp), tp), {}, KIP, f"offsets delivered again after type {kind}")
    other, _ = joined(router, caps, group, topic)
    expect_equal(
        acquired_offsets(fetch_ok(other, tp), tp), {}, KIP, f"offsets another member gets after type {kind}"
    )


def test_released_records_come_back_with_delivery_count_two(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-932: RELEASE (2), here piggybacked on the next ShareFetch (acknowledgements are applied
    before acquiring), makes the records available again; they are delivered with count 2."""
    m, tp = joined(router, caps, unique("sg"), topic)
    produce(router, caps, topic, 2)
    expect_equal(acquired_offsets(fetch_ok(m, tp), tp), {0: 1, 1: 1}, KIP, "first delivery")
    again = fetch_ok(m, tp, acks={tp: [(0, 1, RELEASE)]})
    entry = entry_of(again, tp, "ShareFetch")
    expect_code(entry.acknowledge_error_code, "NONE", rule=KIP, where="piggybacked RELEASE")
    expect_equal(acquired_offsets(again, tp), {0: 2, 1: 2}, KIP, "redelivery after RELEASE")


def test_delivery_count_limit_archives(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """SharePartition / ``group.share.delivery.count.limit`` (default 5): each RELEASE delivers the
    record again with its count raised, until a release at the limit archives it instead."""
    m, tp = joined(router, caps, unique("sg"), topic)
    produce(router, caps, topic, 1)
    counts = [acquired_offsets(fetch_ok(m, tp), tp).get(0)]
    for _ in range(DELIVERY_LIMIT):
        counts.append(acquired_offsets(fetch_ok(m, tp, acks={tp: [(0, 0, RELEASE)]}), tp).get(0))
    print(f"delivery counts, one fetch after each release: {counts}")
    expected = [*range(1, DELIVERY_LIMIT + 1), None]
    expect_equal(counts, expected, KIP, f"delivery counts of one record released {DELIVERY_LIMIT} times")


def test_reopening_or_leaving_releases_held_records(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-932's share session table: a ShareFetch at epoch 0 over an existing session discards it,
    releasing the records it held (fetched again here with count 2); a member leaving the group
    (ShareGroupHeartbeat epoch -1) gives its records back too. The group is coordinated on the
    partition's leader: the reference releases on leave only there (elsewhere the lock runs out)."""
    group = group_on_leader(router, unique, topic)
    m, tp = joined(router, caps, group, topic)
    produce(router, caps, topic, 1)
    expect_equal(acquired_offsets(fetch_ok(m, tp), tp), {0: 1}, KIP, "first delivery")
    m.session_epoch = 0
    expect_equal(acquired_offsets(fetch_ok(m, tp), tp), {0: 2}, KIP, "delivery after reopening the session")
    other, _ = joined(router, caps, group, topic)
    left = m.leave()
    expect_code(left.error_code, "NONE", rule=KIP, where="the holder leaving the group")
    expect_equal(acquired_offsets(fetch_ok(other, tp), tp), {0: 3}, KIP, "delivery after the holder left")


def test_bad_partitions_and_batches_are_answered_per_partition(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KafkaApis share fetch/acknowledge: a topic id no topic has is UNKNOWN_TOPIC_ID for that
    partition, and an acknowledgement batch whose last offset is below its first is INVALID_REQUEST
    for its partition; the request as a whole still succeeds."""
    m, tp = joined(router, caps, unique("sg"), topic)
    ghost: TP = (uuid.uuid4(), 0)
    answer = m.fetch([ghost])
    expect_code(answer.error_code, "NONE", rule=KIP, where="ShareFetch naming an unknown topic id")
    expect_code(
        entry_of(answer, ghost, "ShareFetch").error_code, "UNKNOWN_TOPIC_ID", rule=KIP, where="unknown id"
    )
    produce(router, caps, topic, 2)
    expect_equal(sorted(acquired_offsets(fetch_ok(m, tp), tp)), [0, 1], KIP, "acquired")
    backwards = m.acknowledge({tp: [(1, 0, ACCEPT)]})
    expect_code(backwards.error_code, "NONE", rule=KIP, where="ShareAcknowledge with a backwards batch")
    code = entry_of(backwards, tp, "ShareAcknowledge").error_code
    expect_code(code, "INVALID_REQUEST", rule=KIP, where="batch with last offset < first offset")


def test_long_poll_acquires_records_produced_while_waiting(
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
    wire_factory: Callable[..., WireClient],
) -> None:
    """DelayedShareFetch: a ShareFetch with MaxWaitMs and MinBytes that finds nothing to acquire waits,
    and records produced meanwhile are acquired and returned in its answer."""
    m, tp = joined(router, caps, unique("sg"), topic)
    m.leader = wire_factory(router.to_leader(topic, 0).address)  # its own connection: it blocks
    got: list[Any] = []
    waiting = threading.Thread(target=lambda: got.append(m.fetch([tp], max_wait_ms=LONG_POLL_MS)))
    started = time.monotonic()
    waiting.start()
    time.sleep(PRODUCE_AFTER_S)
    produce(router, caps, topic, 1)
    waiting.join(LONG_POLL_MS / 1000 + 10)
    print(f"long poll answered after {time.monotonic() - started:.2f} s (max wait {LONG_POLL_MS} ms)")
    expect(len(got) == 1, KIP, "the waiting ShareFetch was not answered")
    expect_code(got[0].error_code, "NONE", rule=KIP, where="long-polling ShareFetch")
    expect_equal(acquired_offsets(got[0], tp), {0: 1}, KIP, "records acquired by the waiting fetch")


def test_a_broker_not_leading_the_partition_names_the_leader(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KafkaApis share fetch: a ShareFetch sent to a broker that does not lead the partition gets
    NOT_LEADER_OR_FOLLOWER for it, with CurrentLeader naming the leader."""
    if not router.is_cluster:
        pytest.skip("needs a cluster (--brokers 3): on one broker every partition is led by the broker asked")
    leader = router.leader_of(topic, 0)
    other = next(node for node in sorted(router.brokers) if node != leader)
    tp: TP = (ops.topic_id(router, caps, topic), 0)
    m = member(router, caps, unique("sg"), topic)
    expect(m.join([topic], {tp}), KIP, f"member {m.member_id} was never assigned {tp}")
    m.leader = router.node(other)
    answer = m.fetch([tp])
    expect_code(answer.error_code, "NONE", rule=KIP, where=f"ShareFetch to broker {other}")
    entry = entry_of(answer, tp, "ShareFetch")
    expect_code(entry.error_code, "NOT_LEADER_OR_FOLLOWER", rule=KIP, where=f"partition led by {leader}")
    expect_equal(int(entry.current_leader.leader_id), leader, KIP, "CurrentLeader.LeaderId")


def test_acknowledging_a_record_not_held_is_invalid_record_state(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """SharePartition.acknowledge: a member acknowledging records it does not hold (here: another
    member's) gets INVALID_RECORD_STATE for the partition, and the records stay with their holder."""
    group = unique("sg")
    first, tp = joined(router, caps, group, topic)
    second, _ = joined(router, caps, group, topic)
    produce(router, caps, topic, 1)
    expect_equal(acquired_offsets(fetch_ok(first, tp), tp), {0: 1}, KIP, "first member's delivery")
    stolen = second.acknowledge({tp: [(0, 0, ACCEPT)]})
    entry = entry_of(stolen, tp, "ShareAcknowledge")
    expect_code(entry.error_code, "INVALID_RECORD_STATE", rule=KIP, where="ACCEPT of another member's record")
    mine = first.acknowledge({tp: [(0, 0, ACCEPT)]})
    expect_code(
        entry_of(mine, tp, "ShareAcknowledge").error_code,
        "NONE",
        rule=KIP,
        where="the holder's ACCEPT afterwards",
    )


def test_share_session_epochs(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """ShareSessionCache: an epoch other than the session's next is INVALID_SHARE_SESSION_EPOCH;
    after closing (-1) a non-zero epoch is SHARE_SESSION_NOT_FOUND; ShareAcknowledge cannot open a
    session (epoch 0)."""
    m, tp = joined(router, caps, unique("sg"), topic)
    wrong = m.fetch([tp], epoch=m.session_epoch + 5)
    expect_code(
        wrong.error_code, "INVALID_SHARE_SESSION_EPOCH", rule=KIP, where="ShareFetch, epoch skipped ahead"
    )
    ack_open = m.acknowledge({}, epoch=0)
    expect_code(
        ack_open.error_code, "INVALID_SHARE_SESSION_EPOCH", rule=KIP, where="ShareAcknowledge at epoch 0"
    )
    fine = m.fetch([tp])
    expect_code(fine.error_code, "NONE", rule=KIP, where="ShareFetch at the session's next epoch")
    closed = m.close()
    expect_code(closed.error_code, "NONE", rule=KIP, where="closing the session (epoch -1)")
    gone = m.fetch([tp], epoch=1)
    expect_code(
        gone.error_code, "SHARE_SESSION_NOT_FOUND", rule=KIP, where="ShareFetch after the session closed"
    )


def test_unknown_member_cannot_open_a_session(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """Issue 19's rule for the reference: a ShareFetch opening a session for a member id the group
    does not know is UNKNOWN_MEMBER_ID. The Kafka sources read (SharePartitionManager.newContext at
    apache/kafka 1eb76443 and 021becf7) do not check the member, so a Kafka target may need an
    expectation entry here. The leader can only tell when it coordinates the group too, so on a
    cluster the test names a group whose coordinator is the partition's leader."""
    group = group_on_leader(router, unique, topic)
    joined(router, caps, group, topic)  # the group exists, with another member
    stranger = member(router, caps, group, topic)
    tp: TP = (ops.topic_id(router, caps, topic), 0)
    answer = stranger.fetch([tp])
    expect_code(answer.error_code, "UNKNOWN_MEMBER_ID", rule=KIP, where="ShareFetch from a non-member")


def test_list_groups_shows_share_groups(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-932 / ListGroups v5: a share group is listed with group type ``share``."""
    group = unique("sg")
    joined(router, caps, group, topic)
    version = caps.best("list_groups")
    if version < 5:
        pytest.skip(describe_absence("list_groups", caps, 5))
    answer = router.to_coordinator(group).request(
        "list_groups", version, states_filter=[], types_filter=["share"]
    )
    listed = {g.group_id: g for g in answer.groups}
    expect(group in listed, KIP, f"share group {group} is not listed by ListGroups types_filter=[share]")
    expect_equal(str(listed[group].group_type), "share", KIP, "group type")


# -- lock timeout: a broker with a short lock ---------------------------------------------------------


@pytest.fixture(scope="module")
def short_lock(target_session: TargetSession) -> Iterator[tuple[Router, Capabilities]]:
    """A reference target launched with ``group.share.record.lock.duration.ms=1000`` (the run's own
    target, whose lock is read from the answers, for other kinds)."""
    own = None
    if target_session.spec.kind == "reference":
        own = target_session.launch_fresh([f"group.share.record.lock.duration.ms={SHORT_LOCK_MS}"])
        address = own.bootstrap_servers.split(",")[0]
    else:
        address = target_session.first_address
    opened: list[WireClient] = []

    def open_client(addr: str) -> WireClient:
        client = WireClient(addr)
        opened.append(client)
        return client

    try:
        wire = open_client(address)
        caps = Capabilities(wire.api_versions())
        listed = wire.request(
            "metadata", caps.best("metadata", lo=1), topics=[], allow_auto_topic_creation=False
        )
        brokers = {int(b.node_id): f"{b.host}:{int(b.port)}" for b in listed.brokers}
        yield Router(wire, open_client, brokers, caps), caps
    finally:
        for client in opened:
            client.close()
        if own is not None:
            own.close()


def test_lock_timeout_releases_records(
    short_lock: tuple[Router, Capabilities], unique: Callable[[str], str]
) -> None:
    """SharePartition's acquisition lock timer: a record not acknowledged within the lock duration
    (the answer's AcquisitionLockTimeoutMs, v2) is released and delivered again with count 2."""
    router, caps = short_lock
    topic = unique("t")
    ops.ensure_topic(router, caps, topic, 1, None)
    m, tp = joined(router, caps, unique("sg"), topic)
    produce(router, caps, topic, 1)
    first = fetch_ok(m, tp)
    expect_equal(acquired_offsets(first, tp), {0: 1}, KIP, "first delivery")
    lock_ms = (
        int(first.acquisition_lock_timeout.total_seconds() * 1000)
        if hasattr(first, "acquisition_lock_timeout")
        else 30_000
    )
    wait_s = min(lock_ms / 1000 + 0.5, LOCK_WAIT_CAP_S)
    print(f"lock duration {lock_ms} ms; waiting {wait_s:.1f} s")
    time.sleep(wait_s)
    again = fetch_ok(m, tp)
    expect_equal(acquired_offsets(again, tp), {0: 2}, KIP, f"redelivery after the {lock_ms} ms lock ran out")
    expect_equal(
        [a.delivery_count for a in acquired(again, tp)], [2], KIP, "delivery count after the lock expired"
    )
