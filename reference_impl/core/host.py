"""The broker as its subsystems see it: small protocols they compose into their own host protocol.

The replica fetcher, the coordinators and the internal topics each declare, in their own module,
the narrow part of the broker they use (``FetcherHost``, ``TxnHost``, ``GroupHost``,
``TopicsHost``); the common pieces are here, so that no subsystem imports
:class:`~reference_impl.core.broker.Broker` and none can reach past what it declared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from kio.static.protocol import RequestPayload, ResponsePayload

from .boundary import DATA_CHANNEL
from .ports import TopicPartition

if TYPE_CHECKING:
    from .configs.resolution import BrokerConfig
    from .metadata.image import MetadataImage
    from .partition import Partition
    from .ports import LogStore
    from .purgatory import Purgatory

ResponseCallback = Callable[[ResponsePayload | None, str | None], None]
"""``on_done(response, None)`` once a peer answered, or ``on_done(None, reason)``."""


class ReplicaHost(Protocol):
    """The broker's partition replicas, the metadata they follow, and its clock and configs."""

    @property
    def node_id(self) -> int: ...

    @property
    def now_ms(self) -> int:
        """The time of the event the broker is handling."""

    @property
    def image(self) -> MetadataImage: ...

    @property
    def config(self) -> BrokerConfig: ...

    @property
    def partitions(self) -> Mapping[TopicPartition, Partition]:
        """The partition replicas this broker holds, led or followed."""

    def partition(self, topic: str, index: int) -> Partition | None: ...

    def notify_partition_changed(self, key: TopicPartition, now_ms: int) -> None:
        """New data or a new high watermark: wake delayed operations watching the partition."""


class CoordinatorHost(ReplicaHost, Protocol):
    """A coordinator keeping its state in an internal topic: it replays the topic's logs from the
    store and waits in the purgatory for its writes to be replicated."""

    @property
    def purgatory(self) -> Purgatory: ...

    @property
    def store(self) -> LogStore: ...


class PeerMessenger(Protocol):
    def send_request(
        self,
        node_id: int,
        body: RequestPayload,
        on_done: ResponseCallback,
        *,
        address: tuple[str, int] | None = None,
        channel: str = DATA_CHANNEL,
    ) -> bool:
        """Ask another node; False if its address is unknown (nothing is sent)."""
