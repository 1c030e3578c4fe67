"""A coordinator's write waiting for the high watermark to pass it (acks=all), or its timeout: the
group coordinator's ``__consumer_offsets`` writes and the share coordinator's ``__share_group_state``
ones (Kafka's ``CoordinatorRuntime`` completes a write's future once the partition's high watermark
passes it, ``coordinator-common/.../runtime/CoordinatorRuntime.java``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from reference_impl.protocol.errors import ErrorCode

from ..purgatory import DelayedOperation

if TYPE_CHECKING:
    from ..partition import Partition

Done = Callable[[ErrorCode], None]


def _no_operation(_now_ms: int) -> AbstractContextManager[None]:
    return nullcontext()


class CommitWait(DelayedOperation):
    """``done`` gets NONE once the write is committed, NOT_COORDINATOR when the partition's leadership
    went, COORDINATOR_NOT_AVAILABLE at the deadline; ``operation(now_ms)`` wraps the call (the group
    coordinator sends the answers ``done`` produces once it is over)."""

    def __init__(
        self,
        part: Partition,
        last_offset: int,
        done: Done,
        deadline_ms: int,
        operation: Callable[[int], AbstractContextManager[None]] = _no_operation,
    ) -> None:
        super().__init__(deadline_ms)
        self.part, self.last_offset, self.done, self.operation = part, last_offset, done, operation

    def try_complete(self, now_ms: int) -> bool:
        if self.part.is_leader and not self.part.committed(self.last_offset):
            return False
        return self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        if not self.part.is_leader:
            code = ErrorCode.not_coordinator
        elif self.part.committed(self.last_offset):
            code = ErrorCode.none
        else:
            code = ErrorCode.coordinator_not_available
        with self.operation(now_ms):
            self.done(code)
