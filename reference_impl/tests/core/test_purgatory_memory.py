"""What the purgatory holds on to after an operation completes (issue 22).

An operation on the timing wheel holds its task and the task holds the operation. Left in place
after completion, every acks=all produce and waiting fetch (with its request context, fetch state
and answer) became garbage only a full collection could free: 50,000-80,000 objects and a 80-120 ms
pause of the broker's event loop every few seconds at 500 records/s, the p99 of the bench's
cluster. And an operation completed through one key stays listed under its others until a sweep,
which must come after a bounded number of entries, not only when some operation expires."""

from __future__ import annotations

import collections
import gc
from collections.abc import Callable, Iterator

import pytest

from reference_impl.core.purgatory import PURGE_INTERVAL, DelayedOperation, Purgatory
from reference_impl.core.request_context import RequestContext
from reference_impl.tests.core.cluster_harness import ClusterHarness
from reference_impl.tests.replication.test_cluster_replication import create, produce
from reference_impl.timer.wheel import TimingWheel


@pytest.fixture
def cyclic_garbage() -> Iterator[Callable[[], list[object]]]:
    """Call it for what the cyclic GC would have had to free since the test began."""
    gc.collect()
    gc.garbage.clear()
    was_enabled = gc.isenabled()
    gc.disable()  # nothing freed behind the test's back: all of it shows up
    gc.set_debug(gc.DEBUG_SAVEALL)

    def collect() -> list[object]:
        gc.collect()
        return list(gc.garbage)

    try:
        yield collect
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()


def kinds(objects: list[object]) -> collections.Counter[str]:
    return collections.Counter(type(o).__qualname__ for o in objects)


class _Waits(DelayedOperation):
    ready = False

    def try_complete(self, now_ms: int) -> bool:
        return self.ready and self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        pass


def _completed(purgatory: Purgatory, how: str) -> None:
    op = _Waits(1_000)
    purgatory.try_complete_else_watch(op, ["key"], 0)
    if how == "woken":
        op.ready = True
        assert purgatory.check_and_complete("key", 10) == 1
    elif how == "expired":
        assert purgatory.advance(2_000) == 1
    else:
        purgatory.cancel_all([op])


@pytest.mark.parametrize("how", ["woken", "expired", "cancelled"])
def test_an_operation_leaves_the_purgatory_without_a_cycle(
    how: str, cyclic_garbage: Callable[[], list[object]]
) -> None:
    purgatory = Purgatory(TimingWheel[DelayedOperation](tick_ms=1, wheel_size=20, start_ms=0))
    for _ in range(10):
        _completed(purgatory, how)
    del purgatory
    garbage = cyclic_garbage()
    assert not [o for o in garbage if isinstance(o, DelayedOperation)], kinds(garbage)


def test_acks_all_round_trips_leave_no_cyclic_garbage(cyclic_garbage: Callable[[], list[object]]) -> None:
    """Produces with acks=all on a 3-broker cluster: each waits in the leader's purgatory, and
    the followers' fetches wait in it between records."""
    c = ClusterHarness(3)
    leader = create(c, "t")
    for i in range(5):
        produce(c, leader, "t", b"warm-%d" % i)
    before = len(cyclic_garbage())
    for i in range(100):
        assert produce(c, leader, "t", b"v-%d" % i).error_code == 0
    garbage = cyclic_garbage()[before:]
    left = [o for o in garbage if isinstance(o, (DelayedOperation, RequestContext))]
    assert not left, kinds(garbage).most_common(10)


def test_operations_completed_through_one_key_leave_the_lists_of_the_others() -> None:
    """Kafka's purge interval: a follower's fetches complete through the partition that got data
    and were listed under its idle ones too, which never fire. With no operation expiring, those
    lists must still not grow with every fetch."""
    purgatory = Purgatory(TimingWheel[DelayedOperation](tick_ms=1, wheel_size=20, start_ms=0))
    longest = 0
    for _ in range(10 * PURGE_INTERVAL):
        op = _Waits(1_000_000)
        purgatory.try_complete_else_watch(op, ["busy", "idle-1", "idle-2"], 0)
        op.ready = True
        assert purgatory.check_and_complete("busy", 0) == 1
        longest = max(longest, purgatory.listed("idle-1"), purgatory.listed("idle-2"))
    assert longest <= PURGE_INTERVAL
    assert len(purgatory) == 0  # and off the wheel
