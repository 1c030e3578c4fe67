"""BrokerRegistration's checks past the cluster id and the broker's session, in Kafka's order.

Kafka's ``metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java``
``registerBroker``: after INCONSISTENT_CLUSTER_ID and DUPLICATE_BROKER_REGISTRATION, a broker
migrating from ZooKeeper (BrokerRegistration v1+'s ``IsMigratingZkBroker``) is refused with
BROKER_ID_NOT_REGISTERED ("Controller does not support registering ZK brokers"); then, since every
Kafka 4 metadata.version supports directory assignment (KIP-858), the request's ``LogDirs`` (v2+)
must name at least one directory, none of them reserved (``DirectoryId.reserved``: the first 100
ids, UNASSIGNED, LOST and MIGRATING among them), none twice, and none another broker registered:
INVALID_REGISTRATION otherwise. A v0/v1 request has no ``LogDirs``, so a Kafka 4 controller refuses
it (Kafka 4 brokers register at v4); the reference accepts it, as before v2 existed here, because a
broker without directory ids (the simulator's memory stores) registers at v1: the one difference.
``PreviousBrokerEpoch`` (v3+, KIP-966) matters to Kafka only with eligible leader replicas, which
the reference does not keep (docs/APIVERSIONS.md); a new incarnation loses its leaderships and ISR
places either way (``handleBrokerUncleanShutdown``). The features a broker supports are checked
against the finalized levels (:func:`feature_error`), UNSUPPORTED_VERSION, after the directories.

Which broker owns which directory is what this active controller saw registered (RegisterBrokerRecord
here carries no LogDirs): after a failover the new active controller learns it again from the brokers'
next registrations.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from reference_impl.core.metadata import features

MINIMUM_KRAFT_METADATA_VERSION = 1
"""The metadata.version a broker that names none is taken to support (Kafka's
``MetadataVersion.MINIMUM_KRAFT_VERSION``, 3.0-IV1, level 1)."""
RESERVED_DIRECTORY_IDS = 100
"""``DirectoryId.reserved``: a directory id whose high 64 bits are 0 and low 64 bits below 100."""


def reserved(directory: str) -> bool:
    try:
        value = uuid.UUID(directory).int
    except ValueError:
        return True  # not a directory id at all
    return value >> 64 == 0 and value & ((1 << 64) - 1) < RESERVED_DIRECTORY_IDS


def registration_error(
    broker_id: int,
    migrating_zk_broker: bool,
    log_dirs: tuple[str, ...] | None,
    owners: Mapping[str, int],
) -> ErrorCode | None:
    """Why ``registerBroker`` refuses this registration after its session check, or None.
    ``log_dirs`` None: a v0/v1 request, or an in-process caller, naming no directories;
    ``owners``: directory id -> the broker registered with it."""
    if migrating_zk_broker:
        return ErrorCode.broker_id_not_registered
    if log_dirs is None:
        return None
    if not log_dirs or any(reserved(d) for d in log_dirs) or len(set(log_dirs)) != len(log_dirs):
        return ErrorCode.invalid_registration
    if any(owners.get(d, broker_id) != broker_id for d in log_dirs):
        return ErrorCode.invalid_registration
    return None


SUPPORTED_FEATURES: tuple[tuple[str, int, int], ...] = tuple(
    (f.name, f.min_level, f.max_level) for f in features.FEATURES.values()
)
"""What a broker registers as supported: every feature it knows, ranges from 0 included (v4)."""


def feature_error(
    sent: tuple[tuple[str, int, int], ...] | None, finalized: Mapping[str, int]
) -> ErrorCode | None:
    """``registerBroker``'s feature checks (``processRegistrationFeature``): every feature the broker
    names must support its finalized level (0 when not finalized); metadata.version, when not named,
    is taken as the minimum KRaft level alone; a finalized feature (level > 0) the broker does not
    name is taken as supported at 0 only. Any miss: UNSUPPORTED_VERSION. ``sent`` None: an
    in-process caller that names none (not checked)."""
    if sent is None:
        return None
    ranges = {name: (low, high) for name, low, high in sent}
    ranges.setdefault(features.METADATA_VERSION.name, (MINIMUM_KRAFT_METADATA_VERSION,) * 2)
    for name, level in finalized.items():
        if level != 0:
            ranges.setdefault(name, (0, 0))
    for name, (low, high) in ranges.items():
        if not low <= finalized.get(name, 0) <= high:
            return ErrorCode.unsupported_version
    return None


def record_owner(owners: dict[str, int], broker_id: int, log_dirs: tuple[str, ...] | None) -> None:
    """A registration was accepted: its directories are the broker's (its older ones are let go)."""
    if log_dirs is None:
        return
    for directory in [d for d, owner in owners.items() if owner == broker_id]:
        del owners[directory]
    for directory in log_dirs:
        owners[directory] = broker_id
