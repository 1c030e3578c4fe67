"""A transaction-state record on its way to being committed: where it was written, and the wait
for the high watermark to pass it (Kafka's coordinator answers only once the state is replicated,
``TransactionStateManager.appendTransactionToLog``). Split from the coordinator to keep it small."""

from __future__ import annotations

from collections.abc import Callable

from reference_impl.protocol.errors import ErrorCode

from ..partition import Partition
from ..purgatory import DelayedOperation, Purgatory

STATE_WAIT_REARM_MS = 30_000
"""A state write still below the high watermark is checked again after this long (it waits as long
as this broker leads the state partition; the client's answer has its own deadline)."""


class Written:
    """Where a state record went: the partition, its leader epoch then, and the record's offset."""

    __slots__ = ("last_offset", "leader_epoch", "part")

    def __init__(self, part: Partition, leader_epoch: int, last_offset: int) -> None:
        self.part, self.leader_epoch, self.last_offset = part, leader_epoch, last_offset

    @property
    def current(self) -> bool:
        return self.part.is_leader and self.part.leader_epoch == self.leader_epoch


class StateWait(DelayedOperation):
    """A state write waiting for the high watermark; re-armed at its deadline while still leader."""

    def __init__(
        self, purgatory: Purgatory, written: Written, then: Callable[[ErrorCode], None], deadline_ms: int
    ) -> None:
        super().__init__(deadline_ms)
        self.purgatory, self.written, self.then = purgatory, written, then

    def try_complete(self, now_ms: int) -> bool:
        w = self.written
        if w.current and not w.part.committed(w.last_offset):
            return False
        return self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        w = self.written
        if not w.current:
            self.then(ErrorCode.not_coordinator)
        elif w.part.committed(w.last_offset):
            self.then(ErrorCode.none)
        else:  # still leader, not committed yet: keep waiting
            again = StateWait(self.purgatory, w, self.then, now_ms + STATE_WAIT_REARM_MS)
            self.purgatory.try_complete_else_watch(again, (w.part.key,), now_ms)
