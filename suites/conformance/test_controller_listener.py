"""The metadata quorum's APIs stay off a broker's client listener (issue 17, item 8).

Kafka's message definitions (``clients/src/main/resources/common/message/VoteRequest.json`` and
the other ``*Request.json`` files, field ``"listeners"``) scope Vote, BeginQuorumEpoch,
EndQuorumEpoch, AlterPartition, FetchSnapshot, BrokerRegistration, BrokerHeartbeat and
AllocateProducerIds to the ``controller`` listener. A broker listener's ApiVersions lists only the
APIs in its scope (``core/src/main/scala/kafka/server/ApiVersionManager.scala``), and a request
of an API the listener does not enable is not answered: ``SocketServer.parseRequestHeader``
(``core/src/main/scala/kafka/network/SocketServer.scala``) throws and the connection is closed.
Served on the address clients use, these APIs let any client vote in the quorum, announce a
leader, or register a broker that partitions are then placed on.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.controller_apis import CONTROLLER_ONLY_APIS, controller_request
from fixtures.wire import Capabilities, WireClient, WireError

from .expect import expect

FEATURE = "Controller listener"
RULE = "ApiMessageType.ListenerType (*Request.json listeners)"


def test_client_listener_does_not_advertise_the_controller_apis(caps: Capabilities) -> None:
    """ApiVersions on the address clients use lists none of the controller listener's own APIs."""
    listed = sorted(CONTROLLER_ONLY_APIS[k] for k in set(caps.advertised) & set(CONTROLLER_ONLY_APIS))
    expect(not listed, RULE, f"the client listener advertises {', '.join(listed)}")


@pytest.mark.parametrize("api_key", sorted(CONTROLLER_ONLY_APIS), ids=lambda k: CONTROLLER_ONLY_APIS[k])
def test_client_listener_closes_on_a_controller_api(
    api_key: int, wire_factory: Callable[..., WireClient], caps: Capabilities
) -> None:
    """A well-formed request of a controller-only API (at the version advertised, if any) gets no
    answer on the client listener: the broker closes the connection, as Kafka's SocketServer does."""
    advertised = caps.advertised.get(api_key)
    request = controller_request(api_key, None if advertised is None else advertised[0])
    client = wire_factory(timeout_s=10)
    try:
        answer = client.send(request, timeout_s=10)
    except WireError as exc:
        expect(
            "closed" in str(exc), RULE, f"{CONTROLLER_ONLY_APIS[api_key]}: no answer, but not closed: {exc}"
        )
        return
    code = getattr(answer, "error_code", None)
    raise AssertionError(
        f"[{RULE}] {CONTROLLER_ONLY_APIS[api_key]} was answered on the client listener "
        f"(top-level error {getattr(code, 'name', code)}); the connection stayed open"
    )
