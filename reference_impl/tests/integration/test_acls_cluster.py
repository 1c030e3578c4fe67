"""ACLs on a three-node reference cluster (issue 18): an ACL created through a broker that is not the
active controller is forwarded to it, written to the metadata log and replicated, so every node's
DescribeAcls lists it, after a node's restart too; DeleteAcls through another node removes it
everywhere.

The nodes talk PLAINTEXT to each other, so their principal is ``User:ANONYMOUS``; as in Kafka, the
brokers' principal must be a super user (``super.users``) for replication to pass the authorizer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

from fixtures.targets import launch
from fixtures.wire import WireClient
from fixtures.wire.acls import AclBinding, AclFilter, create_acls, delete_acls, describe_acls
from reference_impl.protocol.acl_codes import Operation, PatternType, Permission, ResourceType

from .settle import until as _until

CONFIGS = [
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users=User:ANONYMOUS",
]


def _equals(listed: Callable[[str], list[AclBinding]], address: str, wanted: list[AclBinding]) -> bool:
    return listed(address) == wanted


def test_acls_replicate_through_the_metadata_log(tmp_path: Path) -> None:
    name = f"acl-{uuid.uuid4().hex[:6]}"
    binding = AclBinding(
        ResourceType.TOPIC, name, PatternType.PREFIXED, "User:alice", "*", Operation.READ, Permission.ALLOW
    )
    with launch("reference", workdir=tmp_path, brokers=3, broker_configs=CONFIGS) as target:
        addresses = target.bootstrap_servers.split(",")

        def listed(address: str) -> list[AclBinding]:
            wire = WireClient(address)
            try:
                outcome = describe_acls(wire, AclFilter(ResourceType.TOPIC, name))
                return list(outcome.acls) if not outcome.error else []
            finally:
                wire.close()

        def created() -> bool:
            wire = WireClient(addresses[-1])
            try:
                return all(not o.error for o in create_acls(wire, [binding]))
            finally:
                wire.close()

        _until(created, "CreateAcls answered NONE")  # retried while the cluster elects its controller
        for address in addresses:
            _until(partial(_equals, listed, address, [binding]), f"{address} lists the ACL")
        target.nodes[0].restart()
        _until(lambda: listed(addresses[0]) == [binding], "the restarted node lists the ACL")
        wire = WireClient(addresses[1])
        try:
            (removed,) = delete_acls(wire, [AclFilter(ResourceType.TOPIC, name)])
        finally:
            wire.close()
        assert not removed.error and list(removed.acls) == [binding]
        for address in addresses:
            _until(partial(_equals, listed, address, []), f"{address} no longer lists the ACL")
