"""ApiVersions: v0-4. Every API and version range this broker has a handler for that the listener
asked serves (a controller listener the controller's APIs; a broker listener never the quorum's).

Version notes: v3+ adds client software name/version, which must match
``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` (KIP-511; INVALID_REQUEST otherwise), and
the features lists: a listener serving ConsumerGroupHeartbeat lists
``group.version`` 0-1 as supported and finalized at 1 (KIP-848 is on, as in a
new Kafka 4.x cluster; KIP-1022), finalized statically with epoch 0 (no
FeatureLevelRecord in the metadata log); ``metadata.version`` and the other
features are not finalized here (no feature flags implemented). A request at a version
above 4 gets a v0 body with UNSUPPORTED_VERSION (the broker layer does that,
as Kafka does, so the client can retry at a version both know).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .registry import HANDLERS, Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


CONSUMER_GROUP_HEARTBEAT = 68
GROUP_VERSION = "group.version"
GROUP_VERSION_LEVEL = 1
"""KIP-848's consumer protocol (Kafka's ``GroupVersion.GV_1``, server-common's GroupVersion.java)."""
SOFTWARE_NAME = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


@handles(18, 0, 4)
def handle_api_versions(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    if ctx.api_version >= 3 and not all(
        SOFTWARE_NAME.fullmatch(getattr(request, f) or "")
        for f in ("client_software_name", "client_software_version")
    ):
        cls = response_class(18, ctx.api_version)
        refused = {"error_code": ErrorCode.invalid_request, "api_keys": [], "throttle_time": 0}
        return Respond(build(cls, refused))
    if ctx.api_version >= 3:  # KIP-714's software selectors match what the connection said here
        broker.telemetry.note_software(
            ctx.connection_id, request.client_software_name, request.client_software_version
        )
    keys = [
        {"api_key": h.api_key, "min_version": h.min_version, "max_version": h.max_version}
        for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
        if broker.serves(h.api_key, ctx.listener)
    ]
    body: dict[str, Any] = {"error_code": 0, "api_keys": keys, "throttle_time": 0}
    if broker.serves(CONSUMER_GROUP_HEARTBEAT, ctx.listener) and CONSUMER_GROUP_HEARTBEAT in HANDLERS:
        body["supported_features"] = [
            {"name": GROUP_VERSION, "min_version": 0, "max_version": GROUP_VERSION_LEVEL}
        ]
        body["finalized_features_epoch"] = 0
        body["finalized_features"] = [
            {
                "name": GROUP_VERSION,
                "min_version_level": GROUP_VERSION_LEVEL,
                "max_version_level": GROUP_VERSION_LEVEL,
            }
        ]
    return Respond(build(response_class(18, ctx.api_version), body))
