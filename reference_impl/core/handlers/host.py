"""What the request handlers see of the broker: the services a request is answered from.

Every handler is ``fn(broker, ctx, request) -> Reply`` with ``broker`` a :class:`HandlerHost`:
the metadata image and configs, the partition replicas, the coordinators, the controller, the
KRaft membership on a cluster node, and the few broker operations a request triggers. The
:class:`~reference_impl.core.broker.Broker` is one; handlers never import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..host import PeerMessenger, ReplicaHost

if TYPE_CHECKING:
    import random

    from ..controller.broker_client import ClusterControllerClient
    from ..fetch_sessions import FetchSessionCache
    from ..group.coordinator import GroupCoordinator
    from ..kraft.quorum import ClusterQuorum
    from ..partition import Partition
    from ..ports import LogStore
    from ..purgatory import Purgatory
    from ..quota_managers import QuotaManagers
    from ..replica_manager import ReplicaManager
    from ..security.acls import Authorizer
    from ..telemetry import ClientTelemetry
    from ..txn.coordinator import TransactionCoordinator


class HandlerHost(ReplicaHost, PeerMessenger, Protocol):
    @property
    def store(self) -> LogStore: ...

    @property
    def replica_manager(self) -> ReplicaManager:
        """The partition replicas and their log directories (AlterReplicaLogDirs)."""

    @property
    def rng(self) -> random.Random: ...

    @property
    def mono_ms(self) -> int:
        """The broker's monotonic clock (the latest given): what Kafka times on ``System.nanoTime``."""

    @property
    def purgatory(self) -> Purgatory: ...

    @property
    def advertised(self) -> tuple[str, int]: ...

    @property
    def fetch_sessions(self) -> FetchSessionCache: ...

    @property
    def controller(self) -> ClusterControllerClient: ...

    @property
    def quorum(self) -> ClusterQuorum:
        """The node's KRaft membership (a single broker is the only voter of its own quorum)."""

    @property
    def group_coordinator(self) -> GroupCoordinator: ...

    @property
    def authorizer(self) -> Authorizer | None:
        """``StandardAuthorizer`` over the image's ACLs; None when ``authorizer.class.name`` is unset."""

    @property
    def txn_coordinator(self) -> TransactionCoordinator: ...

    @property
    def telemetry(self) -> ClientTelemetry:
        """The client instances and their pushed metrics (KIP-714, core/telemetry.py)."""

    @property
    def client_quotas(self) -> QuotaManagers:
        """The clients' quotas: byte rates, request time, controller mutations (issue 20)."""

    def throttle(self, connection_id: int, throttle_ms: int) -> None:
        """Mute the connection for ``throttle_ms`` once its answer is sent (KIP-219)."""

    def sync_partitions(self, now_ms: int) -> None:
        """Open, lead, follow or drop partitions as the metadata image now says."""

    def after_follower_fetch(
        self, part: Partition, now_ms: int, fetched_by: int, high_watermark_moved: bool = True
    ) -> None:
        """A follower's fetch moved its position: the ISR and high watermark may move."""

    def controller_for_clients(self) -> int:
        """The controller id Metadata and DescribeCluster give clients."""

    def serves(self, api_key: int, listener: str) -> bool:
        """Whether ``listener`` serves ``api_key`` (the controller listener serves the controller's)."""

    def is_controller_listener(self, listener: str) -> bool: ...

    def endpoint_for(self, node_id: int, host: str, port: int, listener: str) -> tuple[str, int]:
        """Where a client on ``listener`` reaches ``node_id`` (registered at ``host:port``)."""
