"""UnregisterBroker (key 64): remove a broker's registration (``kafka-cluster remove-broker``).

Kafka's rules: ``clients/src/main/resources/common/message/UnregisterBrokerRequest.json`` /
``UnregisterBrokerResponse.json`` (v0 only; listeners broker and controller: a broker forwards it to
the active controller, ``KafkaApis``' ``forwardToControllerOrFail``), ``ControllerApis.scala``
``handleUnregisterBroker`` (ALTER on the CLUSTER, else CLUSTER_AUTHORIZATION_FAILED) and
``ReplicationControlManager.java`` ``unregisterBroker`` (an id with no registration is
BROKER_ID_NOT_REGISTERED).

Target-agnostic and non-destructive: no case unregisters a broker of the target (the cluster CLI and
the membership nemesis do, on clusters they start: ``kafka-harness cluster remove-broker``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kio.schema.errors import ErrorCode

from fixtures.wire import Capabilities, Router, WireClient, ops
from fixtures.wire.acls import describe_acls

from .expect import expect_code, expect_equal
from .security_common import restricted_security

FEATURE = "UnregisterBroker"
REPLICATION = "ReplicationControlManager.java"
UNKNOWN_OFFSET = 1_000
"""An id this far above the highest registered one is registered nowhere."""


def _brokers(wire: WireClient, caps: Capabilities) -> list[int]:
    return sorted(int(b.node_id) for b in ops.metadata(wire, caps, []).brokers)


@pytest.mark.versions("unregister_broker")
def test_unknown_broker_id_is_not_registered(
    version: int, router: Router, wire: WireClient, caps: Capabilities
) -> None:
    """An id no broker registered: BROKER_ID_NOT_REGISTERED, asked of every broker (each forwards it
    to the active controller), and the registered brokers are the same afterwards."""
    before = _brokers(wire, caps)
    unknown = max(before, default=0) + UNKNOWN_OFFSET
    for conn in router.connections():
        answer = conn.request("unregister_broker", version, broker_id=unknown)
        expect_code(
            answer.error_code, "BROKER_ID_NOT_REGISTERED", rule=REPLICATION, where=f"broker {unknown}"
        )
    expect_equal(_brokers(wire, caps), before, REPLICATION, "registered brokers after the refusals")


@pytest.mark.versions("unregister_broker")
def test_negative_broker_id_is_not_registered(version: int, wire: WireClient, caps: Capabilities) -> None:
    """A negative id (no broker can register one): BROKER_ID_NOT_REGISTERED, nothing changes."""
    before = _brokers(wire, caps)
    answer = wire.request("unregister_broker", version, broker_id=-1)
    expect_code(answer.error_code, "BROKER_ID_NOT_REGISTERED", rule=REPLICATION, where="broker -1")
    expect_equal(_brokers(wire, caps), before, REPLICATION, "registered brokers after the refusal")


@pytest.mark.versions("unregister_broker")
def test_principal_without_cluster_alter_is_refused(
    version: int, wire_factory: Callable[..., WireClient], caps: Capabilities
) -> None:
    """ControllerApis.handleUnregisterBroker: without ALTER on the CLUSTER the request is answered
    CLUSTER_AUTHORIZATION_FAILED, even for a registered broker, which stays registered."""
    if describe_acls(wire_factory()).error == ErrorCode.security_disabled:
        pytest.skip("the target has no authorizer (DescribeAcls: SECURITY_DISABLED)")
    restricted = wire_factory(security=restricted_security())
    before = _brokers(wire_factory(), caps)
    answer = restricted.request("unregister_broker", version, broker_id=before[0])
    expect_code(answer.error_code, "CLUSTER_AUTHORIZATION_FAILED", rule="ControllerApis.scala")
    expect_equal(_brokers(wire_factory(), caps), before, REPLICATION, "registered brokers after a refusal")
