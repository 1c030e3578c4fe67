"""A transactional id's state, and every legal transition between states, in one table.

States and their wire ids are Kafka's ``TransactionState``; the table of
legal previous states is Kafka's too. :meth:`TxnMetadata.transition` refuses
anything else and leaves the metadata unchanged.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        """The name DescribeTransactions and ListTransactions use."""
        return _LABELS[self]


_LABELS = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}

_S = TxnState
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    # transaction version 2 aborts from Empty and Complete* too (an EndTxn v5 abort with nothing added)
    _S.PREPARE_ABORT: frozenset(
        {_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}
    ),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}

MAX_EPOCH = 2**15 - 1


class IllegalTransitionError(RuntimeError):
    """A transition the state table does not allow (a bug in the coordinator, never the client's)."""


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_id: int = -1
    last_producer_epoch: int = -1
    client_version: int = 0
    """The transaction version of the transaction's end (2: EndTxn v5 bumped the epoch, KIP-890).
    Kept in memory: the v0 log value has no field for it (Kafka's v1 value carries it tagged)."""
    next_producer_id: int = -1
    """The producer id a version 2 end hands over when the epoch is exhausted (in memory, as above)."""

    def transition(self, to: TxnState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS[to]:
            raise IllegalTransitionError(f"{self.transactional_id}: {self.state.label} -> {to.label}")
        if to is TxnState.ONGOING and self.state is not TxnState.ONGOING:
            self.start_ms = now_ms
        if to in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            self.partitions = set() if to is TxnState.EMPTY else self.partitions
        self.state = to
        self.last_update_ms = now_ms

    @property
    def is_pending(self) -> bool:
        """A commit or abort is being written: the client must retry (CONCURRENT_TRANSACTIONS)."""
        return self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE)
