"""BrokerRegistration: v0-4. A broker registers with the active controller (KIP-631).

The answer's broker epoch is the offset of its RegisterBrokerRecord; a new
incarnation of a live broker first loses its ISR places and leaderships. The
broker starts fenced and is unfenced by a heartbeat once its metadata caught
up. v1 IsMigratingZkBroker (refused: BROKER_ID_NOT_REGISTERED), v2 LogDirs (KIP-858: required,
none reserved, repeated or another broker's: INVALID_REGISTRATION), v3 PreviousBrokerEpoch
(KIP-966), v4 (feature ranges may start at 0): core/controller/registration.py. Brokers register
at v4 with the features they support, checked against the finalized levels (UNSUPPORTED_VERSION)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .quorum_common import serve_quorum_api
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(62, 0, 4)
def handle_broker_registration(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return serve_quorum_api(broker, ctx, 62, request)
